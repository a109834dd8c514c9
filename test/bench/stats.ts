// Timing helpers shared by the benchmarks: wall time of a synchronous step, the median of samples, and settling
// the page cache between measurements.
import { spawnSync } from 'node:child_process';

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

/** Writes back dirty data (untimed) so that one measurement does not pay for the writeback of the previous one. */
export function settle(): void {
  const r = spawnSync('sync', [], { stdio: 'ignore' });
  if (r.error) throw r.error;
}

/** The p-th percentile (0..100) of samples, nearest-rank. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
