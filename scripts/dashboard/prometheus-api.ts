// Prometheus's HTTP query API as the dashboard scripts use it: instant and range queries that return the
// result or throw with Prometheus's own error (a PromQL parse error says so, naming the expression).
export interface InstantSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RangeSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

async function api<T>(base: string, path: string, params: Record<string, string>): Promise<T> {
  const res = await fetch(`${base}${path}`, { method: 'POST', body: new URLSearchParams(params) }).catch((e: unknown) => {
    const cause = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
    throw new Error(`cannot reach Prometheus at ${base}: ${cause}`, { cause: e });
  });
  const body = (await res.json().catch(() => ({ status: 'error', error: `HTTP ${res.status}, not JSON` }))) as { status: string; data: T; errorType?: string; error?: string };
  if (body.status !== 'success') throw new Error(`prometheus ${path} ${params.query ?? ''}: ${body.errorType ?? 'error'}: ${body.error ?? res.status}`);
  return body.data;
}

/** An instant query at `time` (seconds since the epoch); the result must be a vector. */
export async function queryInstant(base: string, query: string, time: number): Promise<InstantSample[]> {
  const data = await api<{ resultType: string; result: InstantSample[] }>(base, '/api/v1/query', { query, time: String(time) });
  if (data.resultType !== 'vector') throw new Error(`prometheus query ${query}: a ${data.resultType}, not a vector`);
  return data.result;
}

/** A range query from `start` to `end` every `step` seconds. */
export async function queryRange(base: string, query: string, start: number, end: number, step: number): Promise<RangeSeries[]> {
  const data = await api<{ resultType: string; result: RangeSeries[] }>(base, '/api/v1/query_range', { query, start: String(start), end: String(end), step: String(step) });
  return data.result;
}

/** A series' legend: Grafana's legendFormat with {{label}} filled in (an unknown label gives ''). */
export function legendOf(format: string, metric: Record<string, string>): string {
  if (format === '') return JSON.stringify(metric);
  return format.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (_, k: string) => metric[k] ?? '');
}
