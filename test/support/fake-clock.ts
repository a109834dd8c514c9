// A manually advanced Clock for tests: sleeps resolve only when advance() moves time past them.
import type { Clock } from '../../kube/clock.js';

interface Timer { at: number; seq: number; resolve: () => void }

const flushAsync = (): Promise<void> => new Promise((r) => setImmediate(r));

export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(start: Date | number = Date.UTC(2025, 0, 1)) {
    this.t = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.t);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  /** Number of sleeps not yet resolved. */
  pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by ms, firing due timers in order and letting async continuations run between them. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flushAsync();
    for (;;) {
      const due = this.timers.filter((x) => x.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
      await flushAsync();
    }
    this.t = target;
    await flushAsync();
  }
}
