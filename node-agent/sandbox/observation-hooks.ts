// The points where an observer may see (and, in a test, alter) a World's sandbox observation frame
// between its arrival from the sandbox and the agent's check of it, or wait at the isolation gate before
// anything is measured. In production nothing observes it:
// the frame passes unchanged. Only code already running inside the agent's process before it starts can
// register an observer (the observation test preloads one with `node --import`, see
// test/support/observation-hooks.ts), as for collapse steps (node-agent/collapses/step-hooks.ts); the
// agent reads nothing from its environment, flags or input to enable it.
import type { SandboxObservation } from '../../native/index.js';

export interface ObservationHooks {
  /** The frame the agent checks, given the frame the sandbox reported. */
  received(observation: SandboxObservation): SandboxObservation;
  /** Called at a World's (or check run's) isolation gate, before anything is measured. */
  beforeGate?(runId: string): Promise<void>;
}

const REGISTRY = Symbol.for('worldline.observationHooks');
const NONE: ObservationHooks = { received: (o) => o };

/** Registers the observer of this process's observation frames (a preloaded test module does, before the agent starts). */
export function registerObservationHooks(hooks: ObservationHooks): void {
  (globalThis as Record<symbol, unknown>)[REGISTRY] = hooks;
}

/** The registered observer, or one that passes every frame unchanged. */
export function observationHooks(): ObservationHooks {
  const h = (globalThis as Record<symbol, unknown>)[REGISTRY];
  return typeof h === 'object' && h !== null && typeof (h as { received?: unknown }).received === 'function' ? (h as ObservationHooks) : NONE;
}
