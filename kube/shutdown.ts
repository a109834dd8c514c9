// Graceful shutdown: on SIGTERM/SIGINT run the handler once, then exit 0 (1 on error or hard timeout).
import { nullLogger, type Logger } from './logger.js';

export interface ShutdownOptions {
  /** Hard limit for fn; default 25s (inside Kubernetes' default 30s grace period). */
  timeoutMs?: number;
  signals?: NodeJS.Signals[];
  /** For tests; default process.exit. */
  exit?: (code: number) => void;
}

export function onShutdown(fn: () => Promise<void>, logger?: Logger, opts: ShutdownOptions = {}): void {
  const log = logger ?? nullLogger;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const timeoutMs = opts.timeoutMs ?? 25_000;
  let started = false;

  const handler = (signal: NodeJS.Signals): void => {
    if (started) {
      log.warn('shutdown already in progress', { signal });
      return;
    }
    started = true;
    log.info('shutting down', { signal, timeoutMs });
    const timer = setTimeout(() => {
      log.error('shutdown timed out; exiting', { timeoutMs });
      exit(1);
    }, timeoutMs);
    timer.unref();
    fn().then(
      () => {
        clearTimeout(timer);
        log.info('shutdown complete');
        exit(0);
      },
      (err: unknown) => {
        clearTimeout(timer);
        log.error('shutdown failed', { err });
        exit(1);
      },
    );
  };
  for (const s of opts.signals ?? ['SIGTERM', 'SIGINT']) process.on(s, handler);
}
