// Reconciles a Root's controller-owned condition (Accepted: no overlapping Root on its node).
import type { Clock } from '../kube/clock.js';
import { findCondition } from '../kube/conditions.js';
import type { EventRecorder } from '../kube/events.js';
import type { ReconcileResult } from '../kube/reconcile.js';
import type { RefusalWriter } from '../kube/refusal-writer.js';
import { statusEqual, type StatusWriter } from '../kube/status-writer.js';
import type { Caches } from './caches.js';
import { ControllerConditions } from './reasons.js';
import { refs } from './api-refs.js';
import { computeRootStatus } from './root-status.js';

export function makeRootReconciler(d: { caches: Caches; status: StatusWriter; refusals: RefusalWriter; events: EventRecorder; clock: Clock }): (key: string) => Promise<ReconcileResult> {
  return async (key) => {
    const refused = d.caches.roots.refusal(key);
    if (refused) {
      await d.refusals.refuse(refs.Root, refused, { condition: ControllerConditions.Accepted }, d.clock.now());
      return;
    }
    const root = d.caches.roots.get(key);
    if (!root?.metadata.name || root.metadata.deletionTimestamp) return;
    const all = d.caches.rootsOnNode(root.spec.nodeName);
    const desired = computeRootStatus(root, all, d.clock.now());
    const current = (root.status?.conditions ?? []).filter((c) => c.type === ControllerConditions.Accepted);
    if (statusEqual(current, desired.conditions)) return;
    await d.status.applyStatus(refs.Root, { metadata: { name: root.metadata.name }, status: { ...desired } });
    const before = findCondition(root.status?.conditions, ControllerConditions.Accepted);
    const after = findCondition(desired.conditions, ControllerConditions.Accepted);
    if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
      if (after.status === 'True') d.events.normal(root, after.reason, after.message);
      else d.events.warning(root, after.reason, after.message);
    }
  };
}
