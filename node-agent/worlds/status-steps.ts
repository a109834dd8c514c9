// One World's status updates, applied in order and one at a time (a launch's or a re-attached run's
// events, network refusals, isolation decisions). The chain itself never stays rejected: a step that
// throws is logged here and seen by its own caller, so a later step, or one nobody awaits, cannot fail
// for it. `skip` makes every later step a no-op (an agent leaving: the next one owns the World).
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
