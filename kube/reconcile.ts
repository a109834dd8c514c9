// The reconcile runner, classifying errors by core/errors.ts: a Refusal is terminal — recorded (log,
// metric, onTerminal) and not retried; any other error (errno, API error, bug) is transient and retried
// with per-key backoff; requeueAfterMs is explicit polling.
import { errnoOf, isRefusal, type Refusal } from '../core/errors.js';
import { nullLogger, type Logger } from './logger.js';
import { WorkQueue } from './work-queue.js';

export type ReconcileResult = { requeueAfterMs?: number } | void;

export type ReconcileOutcome = 'success' | 'error' | 'terminal' | 'requeue';

export interface ReconcileMetrics {
  observe(kind: string, result: ReconcileOutcome, seconds: number): void;
}

export interface ControllerRunnerOptions {
  kind: string;
  reconcile: (key: string) => Promise<ReconcileResult>;
  onTerminal?: (key: string, err: Refusal) => Promise<void>;
  workers?: number;
  queue?: WorkQueue;
  metrics?: ReconcileMetrics;
  logger?: Logger;
}

export class ControllerRunner {
  readonly queue: WorkQueue;
  private readonly log: Logger;
  private workers: Promise<void>[] = [];

  constructor(private readonly opts: ControllerRunnerOptions) {
    this.queue = opts.queue ?? new WorkQueue();
    this.log = (opts.logger ?? nullLogger).child({ controller: opts.kind });
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.workers.length > 0) throw new Error(`${this.opts.kind} runner already started`);
    const n = Math.max(1, this.opts.workers ?? 1);
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  /** Stops handing out keys and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.processOne(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  /** Runs one reconcile and files its outcome. Never throws. */
  private async processOne(key: string): Promise<void> {
    const started = process.hrtime.bigint();
    const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9;
    const { kind } = this.opts;
    let outcome: ReconcileOutcome;
    try {
      const res = await this.opts.reconcile(key);
      this.queue.forget(key);
      if (res && res.requeueAfterMs !== undefined && res.requeueAfterMs >= 0) {
        outcome = 'requeue';
        this.queue.addAfter(key, res.requeueAfterMs);
      } else {
        outcome = 'success';
      }
      this.log.debug('reconciled', { key, outcome });
    } catch (err) {
      if (isRefusal(err)) {
        outcome = 'terminal';
        this.queue.forget(key);
        this.log.warn('reconcile refused; not retrying', { key, reason: err.code, err: err.message });
        await this.recordTerminal(key, err);
      } else {
        outcome = 'error';
        this.queue.addRateLimited(key);
        this.log.error('reconcile failed; will retry', { key, err, errno: errnoOf(err), requeues: this.queue.numRequeues(key) });
      }
    }
    this.opts.metrics?.observe(kind, outcome, seconds());
  }

  private async recordTerminal(key: string, err: Refusal): Promise<void> {
    if (!this.opts.onTerminal) return;
    try {
      await this.opts.onTerminal(key, err);
    } catch (cbErr) {
      // Recording failed (e.g. the status write conflicted): retry the whole reconcile so it is recorded.
      this.queue.addRateLimited(key);
      this.log.error('recording terminal error failed; will retry', { key, err: cbErr });
    }
  }
}
