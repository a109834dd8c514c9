// Reconciles a Policy's controller-owned status: the Accepted condition and the verifier warnings.
import type { Clock } from '../kube/clock.js';
import { findCondition } from '../kube/conditions.js';
import type { EventRecorder } from '../kube/events.js';
import type { ReconcileResult } from '../kube/reconcile.js';
import type { RefusalWriter } from '../kube/refusal-writer.js';
import { statusEqual, type StatusWriter } from '../kube/status-writer.js';
import type { Caches } from './caches.js';
import { computePolicyStatus } from './policy-status.js';
import { ControllerConditions } from './reasons.js';
import { refs } from './api-refs.js';

export function makePolicyReconciler(d: { caches: Caches; status: StatusWriter; refusals: RefusalWriter; events: EventRecorder; clock: Clock }): (key: string) => Promise<ReconcileResult> {
  return async (key) => {
    const refused = d.caches.policies.refusal(key);
    if (refused) {
      await d.refusals.refuse(refs.Policy, refused, { condition: ControllerConditions.Accepted }, d.clock.now());
      return;
    }
    const policy = d.caches.policies.get(key);
    if (!policy?.metadata.name || policy.metadata.deletionTimestamp) return;
    const all = d.caches.policiesNaming(policy.spec.roots);
    const desired = computePolicyStatus(policy, all, (r) => d.caches.roots.get(r) !== undefined, d.clock.now());
    const current = {
      conditions: (policy.status?.conditions ?? []).filter((c) => c.type === ControllerConditions.Accepted),
      warnings: policy.status?.warnings ?? [],
    };
    if (statusEqual(current, desired)) return;
    await d.status.applyStatus(refs.Policy, { metadata: { name: policy.metadata.name }, status: { ...desired } });
    const before = findCondition(policy.status?.conditions, ControllerConditions.Accepted);
    const after = findCondition(desired.conditions, ControllerConditions.Accepted);
    if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
      if (after.status === 'True') d.events.normal(policy, after.reason, after.message);
      else d.events.warning(policy, after.reason, after.message);
    }
    if (desired.warnings.length > 0 && !statusEqual(current.warnings, desired.warnings)) {
      d.events.warning(policy, 'UnboundVerifier', desired.warnings.join('; '));
    }
  };
}
