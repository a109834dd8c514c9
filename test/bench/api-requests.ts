// The API requests the stack makes over a window, counted by the API server itself: the difference of
// its apiserver_request_total counter (by verb and resource[/subresource]) between two reads of its
// /metrics. Watches are counted when they open, so a window shows the writes and reads it caused.
// The reads of /metrics themselves (no resource) are left out.
import type { KubeHttpClient } from '../../kube/http.js';

/** apiserver_request_total summed by "VERB resource[/subresource]". */
export async function apiRequestTotals(http: KubeHttpClient): Promise<Map<string, number>> {
  return requestTotalsOf(String(await http.request<string>({ path: '/metrics' })));
}

/** The same, from the text of /metrics. */
export function requestTotalsOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = new Map([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const resource = labels.get('resource') ?? '';
    if (resource === '') continue;
    const sub = labels.get('subresource');
    const key = `${labels.get('verb') ?? '?'} ${resource}${sub ? `/${sub}` : ''}`;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isFinite(value)) throw new Error(`apiserver_request_total: no value in ${JSON.stringify(line)}`);
    out.set(key, (out.get(key) ?? 0) + value);
  }
  if (out.size === 0) throw new Error('the API server\'s /metrics has no apiserver_request_total');
  return out;
}

/** Sums the requests of windows; result() gives the mean per window, most frequent first. */
export class RequestAccount {
  private readonly totals = new Map<string, number>();
  private windows = 0;

  constructor(private readonly http: KubeHttpClient) {}

  /** Starts a window; the returned function ends it. */
  async begin(): Promise<() => Promise<void>> {
    const before = await apiRequestTotals(this.http);
    return async () => {
      const after = await apiRequestTotals(this.http);
      for (const [k, v] of after) {
        const d = v - (before.get(k) ?? 0);
        if (d > 0) this.totals.set(k, (this.totals.get(k) ?? 0) + d);
      }
      this.windows++;
    };
  }

  result(): { perWindow: [string, number][]; windows: number } {
    const n = Math.max(1, this.windows);
    return { perWindow: [...this.totals].map(([k, v]): [string, number] => [k, v / n]).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])), windows: this.windows };
  }
}
