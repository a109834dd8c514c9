// The points of a collapse transaction where an observer may act, between two steps. In production
// nothing observes them and each is a resolved promise. Only code already running inside the agent's
// process before it starts can register an observer (the crash and race tests preload one with
// `node --import`, see test/support/collapse-crash-hooks.ts); the agent reads nothing from its
// environment, flags or input to enable it.
import { COLLAPSE_STEPS } from './collapse-intent.js';

/** Every observable step, in the order a transaction reaches them. */
export const COLLAPSE_OBSERVED_STEPS = [
  'after-rebase-formed',
  'after-prepared',
  'after-authorized',
  ...COLLAPSE_STEPS.slice(0, COLLAPSE_STEPS.indexOf('before-exchange')),
  // At the commit boundary: the authorization spent in the grant store, the exchange not yet made.
  'after-grant-spent',
  ...COLLAPSE_STEPS.slice(COLLAPSE_STEPS.indexOf('before-exchange')),
  'after-committed-row',
  'after-receipt',
  'after-receipt-row',
] as const;
export type CollapseObservedStep = (typeof COLLAPSE_OBSERVED_STEPS)[number];

export interface CollapseStepHooks {
  at(step: CollapseObservedStep): Promise<void>;
}

const REGISTRY = Symbol.for('worldline.collapseStepHooks');
const NONE: CollapseStepHooks = { at: () => Promise.resolve() };

/** Registers the observer of this process's collapses (a preloaded test module does, before the agent starts). */
export function registerCollapseStepHooks(hooks: CollapseStepHooks): void {
  (globalThis as Record<symbol, unknown>)[REGISTRY] = hooks;
}

/** The registered observer, or one that does nothing. */
export function collapseStepHooks(): CollapseStepHooks {
  const h = (globalThis as Record<symbol, unknown>)[REGISTRY];
  return typeof h === 'object' && h !== null && typeof (h as { at?: unknown }).at === 'function' ? (h as CollapseStepHooks) : NONE;
}
