// One World's status updates, applied in order and one at a time (a launch's or a re-attached run's
// events, network refusals, isolation decisions). The chain itself never stays rejected: a step that
// throws is logged here and seen by its own caller, so a later step, or one nobody awaits, cannot fail
// for it. `skip` makes every later step a no-op (an agent leaving: the next one owns the World). Bursts
// of changes (network refusals) are written at most once a second (coalesced).
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
