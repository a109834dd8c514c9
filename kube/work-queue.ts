// A keyed work queue in the style of client-go's: a key is queued at most once; a key added while being
// processed is queued again when done() is called; per-key exponential backoff with jitter for failures.
import { backoffDelay } from './backoff.js';
import { systemClock, type Clock } from './clock.js';

export interface WorkQueueOptions {
  clock?: Clock;
  /** First retry delay; default 5ms. */
  baseDelayMs?: number;
  /** Retry delay cap; default 5 minutes. */
  maxDelayMs?: number;
  /** Fraction of each retry delay removed at random; default 0.2. */
  jitter?: number;
  random?: () => number;
}

export class WorkQueue {
  private readonly clock: Clock;
  private readonly base: number;
  private readonly max: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  /** Keys waiting for addAfter: earliest ready time and the timer's cancel handle. */
  private readonly waiting = new Map<string, { readyAt: number; cancel: AbortController }>();
  private readonly getters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.base = opts.baseDelayMs ?? 5;
    this.max = opts.maxDelayMs ?? 5 * 60_000;
    this.jitter = opts.jitter ?? 0.2;
    this.random = opts.random ?? Math.random;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    // A key backing off after a failure runs when its backoff ends, not sooner: otherwise the events of
    // its own status writes (a failing attempt usually writes one) would run it again at once, forever.
    if (this.backingOff(key)) return;
    this.push(key);
  }

  /** Adds key after ms; if the key is already waiting, the earlier time wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const readyAt = this.clock.now().getTime() + ms;
    const existing = this.waiting.get(key);
    if (existing && existing.readyAt <= readyAt) return;
    existing?.cancel.abort();
    const cancel = new AbortController();
    this.waiting.set(key, { readyAt, cancel });
    void this.clock.sleep(ms, cancel.signal).then(() => {
      if (cancel.signal.aborted) return;
      this.waiting.delete(key);
      // Marked dirty while it backed off: it is due now (unless it is being processed; done() pushes it).
      if (this.dirty.has(key)) {
        if (!this.processing.has(key) && !this.queue.includes(key)) this.push(key);
        return;
      }
      this.add(key);
    });
  }

  /** Adds key after its per-key backoff delay (base·2ⁿ, capped, jittered) and counts the failure. */
  addRateLimited(key: string): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, this.delayFor(n));
  }

  /** The delay the n-th consecutive failure gets (exposed for tests and logs). */
  delayFor(n: number): number {
    return backoffDelay(n, { initialMs: this.base, maxMs: this.max, jitter: this.jitter, random: this.random });
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Next key to process, or undefined once shut down. Call done(key) when finished. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.take(key));
    return new Promise((resolve) => this.getters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown && !this.backingOff(key)) this.push(key);
  }

  /** The key failed and waits for its backoff (addRateLimited); a success forgets the failures. */
  private backingOff(key: string): boolean {
    return this.waiting.has(key) && (this.failures.get(key) ?? 0) > 0;
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const w of this.waiting.values()) w.cancel.abort();
    this.waiting.clear();
    for (const g of this.getters.splice(0)) g(undefined);
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Keys ready to be handed out (not counting ones in processing or waiting). */
  len(): number {
    return this.queue.length;
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  private push(key: string): void {
    const getter = this.getters.shift();
    if (getter) getter(this.take(key));
    else this.queue.push(key);
  }
}
