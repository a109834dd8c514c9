// Small timing helpers shared by the benchmarks: wall time of a synchronous step and the median of samples.
export function timeSync(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
