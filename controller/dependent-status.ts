// Status the controller owns on Checks and Collapses: whether the World they name exists, and the
// node it is bound to (copied so a node-agent can select its own objects by field).
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

export interface DependentView {
  kind: 'Check' | 'Collapse';
  metadata: { name?: string; namespace?: string; generation?: number };
  spec?: { worldRef?: string };
  status?: { conditions?: readonly Condition[]; nodeName?: string };
}

export interface WorldRefView {
  metadata: { name?: string; uid?: string; deletionTimestamp?: Date | string };
  status?: { nodeName?: string };
}

export interface DependentControllerStatus {
  nodeName?: string;
  conditions: Condition[];
}

export function computeDependentStatus(dep: DependentView, world: WorldRefView | undefined, now: Date): DependentControllerStatus {
  const gen = dep.metadata.generation;
  const prev = dep.status?.conditions?.filter((c) => c.type === ControllerConditions.WorldFound);
  const ref = dep.spec?.worldRef ?? '';
  let status: 'True' | 'False';
  let r: (typeof Reasons)[keyof typeof Reasons];
  let message: string;
  if (!world) {
    status = 'False';
    r = Reasons.WorldNotFound;
    message = `World "${ref}" does not exist in namespace "${dep.metadata.namespace ?? ''}"; this ${dep.kind} waits for it`;
  } else if (world.metadata.deletionTimestamp) {
    status = 'False';
    r = Reasons.WorldTerminating;
    message = `World "${ref}" is being deleted; this ${dep.kind} is deleted with it`;
  } else {
    status = 'True';
    r = Reasons.WorldFound;
    message = world.status?.nodeName ? `World "${ref}" is bound to node "${world.status.nodeName}"` : `World "${ref}" is not bound to a node yet`;
  }
  const conditions = setCondition(prev, { type: ControllerConditions.WorldFound, status, reason: r.reason, message }, gen, now);
  const out: DependentControllerStatus = { conditions };
  const nodeName = dep.status?.nodeName || world?.status?.nodeName;
  if (nodeName) out.nodeName = nodeName;
  return out;
}
