// One World's status updates, applied in order and one at a time (a re-attached run's events, network
// refusals, its proxy's fate). The chain itself never stays rejected: a step that throws is logged here
// and seen by its own caller, so a later step, or one nobody awaits, cannot fail for it. `skip` makes
// every later step a no-op (an agent leaving: the next one owns the World). Bursts of changes (network
// refusals) are written at most once a second (coalesced). Under them all, the API writes of a World go
// one at a time, each carrying the newest record (latestWrites).
import type { Logger } from '../../kube/logger.js';

export type StatusStep = (fn: () => Promise<void>) => Promise<void>;

export function statusSteps(key: string, logger: Logger, skip: () => boolean = () => false): StatusStep {
  let chain = Promise.resolve();
  return (fn) => {
    const next = chain.then(async () => {
      if (!skip()) await fn();
    });
    chain = next.catch((err: unknown) => logger.error('world status step failed', { world: key, error: (err as Error).message }));
    return next;
  };
}

/**
 * Runs `write` at most once per `ms` for a burst of changes (network refusals arrive in bursts: collected
 * at once, written once a second). `cancel` drops a pending write (the World ended; its end writes all).
 */
export function coalesced(write: () => void, ms = 1000): { poke(): void; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  return {
    poke() {
      if (timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        write();
      }, ms);
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/**
 * One write at a time per key, each carrying the newest state when it starts (`write` reads it then).
 * A request made while a write waits to start joins that write, so a burst of changes costs one write;
 * a request made while a write runs gets the next one. Two writers racing their applies could leave the
 * older status last (server-side apply keeps whichever lands last); through here they cannot. Each
 * request settles with the write that carried it, rejected if that write failed.
 */
export function latestWrites(): (key: string, write: () => Promise<void>) => Promise<void> {
  const queued = new Map<string, Promise<void>>();
  const tails = new Map<string, Promise<void>>();
  return (key, write) => {
    const waiting = queued.get(key);
    if (waiting) return waiting;
    const next = (tails.get(key) ?? Promise.resolve()).catch(() => undefined).then(() => {
      queued.delete(key);
      return write();
    });
    queued.set(key, next);
    tails.set(key, next);
    void next.catch(() => undefined).then(() => {
      if (tails.get(key) === next) tails.delete(key);
    });
    return next;
  };
}
