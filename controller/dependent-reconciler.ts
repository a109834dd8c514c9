// Reconciles Checks and Collapses: links each to its World (ownerReference, node label, nodeName)
// and says on status whether that World exists. A dependent of a World being deleted is deleted.
import type { Check, Collapse } from '../crds/index.js';
import type { Clock } from '../kube/clock.js';
import type { ObjectCache } from '../kube/informer.js';
import type { EventRecorder } from '../kube/events.js';
import type { ReconcileResult } from '../kube/reconcile.js';
import type { RefusalWriter } from '../kube/refusal-writer.js';
import type { ResourceRef } from '../kube/resource-ref.js';
import { statusEqual, type StatusWriter } from '../kube/status-writer.js';
import { findCondition } from '../kube/conditions.js';
import type { Caches } from './caches.js';
import { computeDependentStatus } from './dependent-status.js';
import type { ObjectDeleter } from '../kube/object-deleter.js';
import { ControllerConditions, NODE_LABEL } from './reasons.js';
import { API_VERSION } from './api-refs.js';

export interface DependentReconcilerDeps {
  kind: 'Check' | 'Collapse';
  ref: ResourceRef;
  informer: ObjectCache<Check | Collapse>;
  caches: Caches;
  status: StatusWriter;
  refusals: RefusalWriter;
  events: EventRecorder;
  deleter: ObjectDeleter;
  clock: Clock;
}

export function makeDependentReconciler(d: DependentReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  return async (key) => {
    const refused = d.informer.refusal(key);
    if (refused) {
      await d.refusals.refuse(d.ref, refused, { condition: ControllerConditions.WorldFound }, d.clock.now());
      return;
    }
    const obj = d.informer.get(key);
    if (!obj?.metadata.name || obj.metadata.deletionTimestamp) return;
    const ns = obj.metadata.namespace ?? '';
    const name = obj.metadata.name;
    const world = d.caches.worlds.get(`${ns}/${obj.spec.worldRef}`);

    if (world?.metadata.deletionTimestamp) {
      await d.deleter.delete(d.ref, key);
      return;
    }

    const desired = computeDependentStatus(d.kind, obj, world, d.clock.now());
    const current = {
      nodeName: obj.status?.nodeName,
      conditions: (obj.status?.conditions ?? []).filter((c) => c.type === ControllerConditions.WorldFound),
    };
    if (!statusEqual({ nodeName: current.nodeName, conditions: current.conditions }, { nodeName: desired.nodeName, conditions: desired.conditions })) {
      await d.status.applyStatus(d.ref, { metadata: { name, namespace: ns }, status: { ...desired } });
      const before = findCondition(obj.status?.conditions, ControllerConditions.WorldFound);
      const after = findCondition(desired.conditions, ControllerConditions.WorldFound);
      if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
        if (after.status === 'True') d.events.normal(obj, after.reason, after.message);
        else d.events.warning(obj, after.reason, after.message);
      }
    }

    if (world?.metadata.uid && world.metadata.name) {
      const uid = world.metadata.uid;
      const owned = (obj.metadata.ownerReferences ?? []).some((o) => o.uid === uid);
      const node = world.status?.nodeName;
      const labelled = !node || obj.metadata.labels?.[NODE_LABEL] === node;
      if (!owned || !labelled) {
        await d.status.applyObject(d.ref, {
          apiVersion: API_VERSION,
          kind: d.kind,
          metadata: {
            name,
            namespace: ns,
            ownerReferences: [{ apiVersion: API_VERSION, kind: 'World', name: world.metadata.name, uid: world.metadata.uid, blockOwnerDeletion: true }],
            ...(node ? { labels: { [NODE_LABEL]: node } } : {}),
          },
        });
      }
    }
    return;
  };
}
