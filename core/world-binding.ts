// The binding of a Check or Collapse to one World: the one rule the controller (which records the binding
// and shows the wait) and the node-agent (which acts only on the World bound) both follow. A dependent
// names its World by spec.worldRef; the first World of that name it sees is recorded in spec.worldUID, and
// from then on only a World with that uid is its World. Uids are never reused, so a World of the same name
// with another uid is a different World: the dependent is refused by name, never moved to it.

/** What the rule reads of the World named by spec.worldRef (undefined: none of that name exists). */
export interface BindingWorldView {
  metadata: { uid?: string | undefined };
}

export type WorldBinding =
  /** No World of that name, none bound yet: the dependent waits (WORLD_NOT_FOUND). */
  | { state: 'absent' }
  /** A World of that name exists and nothing is bound yet: bind to its uid. */
  | { state: 'unbound'; worldUid: string }
  /** The World of that name is the bound one. */
  | { state: 'bound'; worldUid: string }
  /** The bound World is gone and none of that name exists (WORLD_DELETED). */
  | { state: 'deleted'; boundUid: string }
  /** A World of that name exists with another uid than the bound one (WORLD_REPLACED). */
  | { state: 'replaced'; boundUid: string; worldUid: string };

/** Judges the bound uid (spec.worldUID, possibly unset) against the World of that name now. */
export function worldBinding(boundUid: string | undefined, world: BindingWorldView | undefined): WorldBinding {
  const worldUid = world?.metadata.uid || undefined;
  const bound = boundUid || undefined;
  if (bound === undefined) return worldUid === undefined ? { state: 'absent' } : { state: 'unbound', worldUid };
  if (worldUid === undefined) return { state: 'deleted', boundUid: bound };
  if (worldUid !== bound) return { state: 'replaced', boundUid: bound, worldUid };
  return { state: 'bound', worldUid };
}

/** The refusal of a dependent whose World is not the bound one, or undefined when it is (or nothing is bound yet). */
export function bindingRefusal(kind: 'Check' | 'Collapse', worldRef: string, b: WorldBinding): { code: 'WORLD_REPLACED' | 'WORLD_DELETED'; message: string } | undefined {
  if (b.state === 'replaced') {
    return {
      code: 'WORLD_REPLACED',
      message: `this ${kind} is bound to World "${worldRef}" uid ${b.boundUid}, which was replaced by another World of that name (uid ${b.worldUid}); it never acts on another World: create a new ${kind} for it`,
    };
  }
  if (b.state === 'deleted') {
    return { code: 'WORLD_DELETED', message: `this ${kind} is bound to World "${worldRef}" uid ${b.boundUid}, which was deleted; it never acts on another World of that name` };
  }
  return undefined;
}

/**
 * What a node-agent does with a dependent it was handed: wait while nothing is bound (the controller binds
 * first, and that update brings it back), refuse it when a World of that name with another uid is there,
 * act otherwise (the bound World, or none in its cache: the kind's own rule for a missing World applies).
 */
export function agentGate(kind: 'Check' | 'Collapse', worldRef: string, boundUid: string | undefined, world: BindingWorldView | undefined): { act: 'wait' } | { act: 'run' } | { act: 'refuse'; code: 'WORLD_REPLACED'; message: string } {
  const b = worldBinding(boundUid, world);
  if (b.state === 'absent' || b.state === 'unbound') return { act: 'wait' };
  const refusal = b.state === 'replaced' ? bindingRefusal(kind, worldRef, b) : undefined;
  return refusal?.code === 'WORLD_REPLACED' ? { act: 'refuse', code: refusal.code, message: refusal.message } : { act: 'run' };
}
