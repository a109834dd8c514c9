// Reading values out of a Prometheus text exposition (a component's /metrics), for integration tests.

/** Unescapes a label value of the text format. */
function unescapeLabel(v: string): string {
  return v.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of the exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = unescapeLabel(l[2]!);
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The sum of the samples of `name` whose labels include `labels` (0 when there is none). A counter or
 * gauge with exactly matching labels gives its one value.
 */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  return parseMetrics(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** Whether the exposition has at least one sample of `name` with `labels`. */
export function hasMetric(text: string, name: string, labels: Record<string, string> = {}): boolean {
  return parseMetrics(text).some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}
