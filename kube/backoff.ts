// Exponential backoff with jitter, shared by the informer, work queue and leader election.

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Fraction of the delay removed at random (0..1); default 0.2. */
  jitter?: number;
  random?: () => number;
}

/** Delay for the n-th consecutive failure (n from 0): min(max, initial·2ⁿ), minus up to `jitter` of it. */
export function backoffDelay(n: number, o: BackoffOptions): number {
  const raw = Math.min(o.maxMs, o.initialMs * 2 ** Math.min(n, 62));
  const jitter = o.jitter ?? 0.2;
  return Math.round(raw * (1 - jitter * (o.random ?? Math.random)()));
}

export class Backoff {
  private failures = 0;
  constructor(private readonly opts: BackoffOptions) {}
  next(): number {
    return backoffDelay(this.failures++, this.opts);
  }
  reset(): void {
    this.failures = 0;
  }
  get attempts(): number {
    return this.failures;
  }
}

/** A duration spread uniformly over [ms, ms·(1+factor)), like client-go's wait.Jitter. */
export function jittered(ms: number, factor: number, random: () => number = Math.random): number {
  return Math.round(ms * (1 + factor * random()));
}
