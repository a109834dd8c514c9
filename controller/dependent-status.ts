// Status the controller owns on Checks and Collapses: whether the World they name exists and is the one
// they are bound to (spec.worldUID, core/world-binding.ts), the node it is bound to (copied so a node-agent
// can select its own objects by field), and — only until a node-agent is handed the object (no nodeName
// yet) — the phase that shows why it waits or why it is refused.
import type { Check, Collapse, ObjectMeta, World } from '../crds/index.js';
import { bindingRefusal, worldBinding, type WorldBinding } from '../core/world-binding.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

/** What the status reads of a Check or Collapse (a Pick of the inferred types). */
export interface DependentView {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'generation'>;
  spec: Pick<Check['spec'] | Collapse['spec'], 'worldRef'> & { worldUID?: string | undefined };
  status?: Pick<NonNullable<Check['status'] | Collapse['status']>, 'conditions' | 'nodeName'>;
}

/** What the status reads of the World named by worldRef. */
export interface WorldRefView {
  metadata: Pick<ObjectMeta, 'name' | 'uid' | 'deletionTimestamp'>;
  status?: Pick<NonNullable<World['status']>, 'nodeName'>;
}

/** The phase the controller shows while no node-agent has the object: waiting for its World, or refused. */
export interface DependentPhase {
  phase: 'Waiting' | 'Refused' | 'Denied';
  reason: string;
  message: string;
  /** Checks only: a refused Check has verdict REFUSED, like one the node-agent refuses. */
  verdict?: 'REFUSED';
}

export interface DependentControllerStatus {
  nodeName?: string;
  conditions: Condition[];
  /** Set only while status.nodeName is unset (afterwards the node-agent owns phase, reason and message). */
  phase?: DependentPhase;
  /** The dependent's binding to its World; `unbound` means the controller records the World's uid now. */
  binding: WorldBinding;
}

function worldFound(kind: 'Check' | 'Collapse', dep: DependentView, world: WorldRefView | undefined, binding: WorldBinding): { status: 'True' | 'False'; r: (typeof Reasons)[keyof typeof Reasons]; message: string } {
  const ref = dep.spec.worldRef;
  const refusal = bindingRefusal(kind, ref, binding);
  if (refusal) return { status: 'False', r: refusal.code === 'WORLD_REPLACED' ? Reasons.WorldReplaced : Reasons.WorldDeleted, message: refusal.message };
  if (!world) return { status: 'False', r: Reasons.WorldNotFound, message: `World "${ref}" does not exist in namespace "${dep.metadata.namespace ?? ''}"; this ${kind} waits for it` };
  if (world.metadata.deletionTimestamp) return { status: 'False', r: Reasons.WorldTerminating, message: `World "${ref}" is being deleted; this ${kind} is deleted with it` };
  return {
    status: 'True',
    r: Reasons.WorldFound,
    message: world.status?.nodeName ? `World "${ref}" is bound to node "${world.status.nodeName}"` : `World "${ref}" is not bound to a node yet`,
  };
}

/** The phase while no node-agent has the object; undefined once one has (status.nodeName set). */
function waitingPhase(kind: 'Check' | 'Collapse', dep: DependentView, found: ReturnType<typeof worldFound>, binding: WorldBinding, nodeName: string | undefined): DependentPhase | undefined {
  if (nodeName) return undefined;
  const refusal = bindingRefusal(kind, dep.spec.worldRef, binding);
  if (refusal) return kind === 'Check' ? { phase: 'Refused', reason: refusal.code, message: refusal.message, verdict: 'REFUSED' } : { phase: 'Denied', reason: refusal.code, message: refusal.message };
  if (found.r === Reasons.WorldFound) return { phase: 'Waiting', reason: 'WORLD_NOT_BOUND', message: `World "${dep.spec.worldRef}" is not bound to a node yet; this ${kind} waits for it` };
  return { phase: 'Waiting', reason: found.r.code, message: found.message };
}

export function computeDependentStatus(kind: 'Check' | 'Collapse', dep: DependentView, world: WorldRefView | undefined, now: Date): DependentControllerStatus {
  const gen = dep.metadata.generation;
  const prev = dep.status?.conditions?.filter((c) => c.type === ControllerConditions.WorldFound);
  const binding = worldBinding(dep.spec.worldUID, world);
  const found = worldFound(kind, dep, world, binding);
  const conditions = setCondition(prev, { type: ControllerConditions.WorldFound, status: found.status, reason: found.r.reason, message: found.message }, gen, now);
  const out: DependentControllerStatus = { conditions, binding };
  // A node is copied only from the World the object is (or is about to be) bound to.
  const ours = binding.state === 'bound' || binding.state === 'unbound';
  const nodeName = dep.status?.nodeName || (ours ? world?.status?.nodeName : undefined);
  if (nodeName) out.nodeName = nodeName;
  const phase = waitingPhase(kind, dep, found, binding, nodeName);
  if (phase) out.phase = phase;
  return out;
}
