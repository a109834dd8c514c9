// Status the controller owns on Checks and Collapses: whether the World they name exists, and the
// node it is bound to (copied so a node-agent can select its own objects by field).
import type { Check, Collapse, ObjectMeta, World } from '../crds/index.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

/** What the status reads of a Check or Collapse (a Pick of the inferred types). */
export interface DependentView {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'generation'>;
  spec: Pick<Check['spec'] | Collapse['spec'], 'worldRef'>;
  status?: Pick<NonNullable<Check['status'] | Collapse['status']>, 'conditions' | 'nodeName'>;
}

/** What the status reads of the World named by worldRef. */
export interface WorldRefView {
  metadata: Pick<ObjectMeta, 'name' | 'uid' | 'deletionTimestamp'>;
  status?: Pick<NonNullable<World['status']>, 'nodeName'>;
}

export interface DependentControllerStatus {
  nodeName?: string;
  conditions: Condition[];
}

export function computeDependentStatus(kind: 'Check' | 'Collapse', dep: DependentView, world: WorldRefView | undefined, now: Date): DependentControllerStatus {
  const gen = dep.metadata.generation;
  const prev = dep.status?.conditions?.filter((c) => c.type === ControllerConditions.WorldFound);
  const ref = dep.spec.worldRef;
  let status: 'True' | 'False';
  let r: (typeof Reasons)[keyof typeof Reasons];
  let message: string;
  if (!world) {
    status = 'False';
    r = Reasons.WorldNotFound;
    message = `World "${ref}" does not exist in namespace "${dep.metadata.namespace ?? ''}"; this ${kind} waits for it`;
  } else if (world.metadata.deletionTimestamp) {
    status = 'False';
    r = Reasons.WorldTerminating;
    message = `World "${ref}" is being deleted; this ${kind} is deleted with it`;
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
