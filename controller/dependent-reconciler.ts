// Reconciles Checks and Collapses: links each to its World (ownerReference, node label, nodeName)
// and binds it to that World's uid (spec.worldUID) when it first sees one; says on status whether that
// World exists and is the bound one, and shows the wait (or the refusal) as a phase until a node-agent has
// the object. A dependent of its World being deleted is deleted; one bound to a replaced World is refused.
import type { Check, Collapse } from '../crds/index.js';
import type { Clock } from '../kube/clock.js';
import type { InformedObject, ObjectCache } from '../kube/informer.js';
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
import { ensureRebaseChecks } from './rebase-checks.js';
import { requiredChecks, type CheckCreator } from './world-checks.js';

export interface DependentReconcilerDeps {
  kind: 'Check' | 'Collapse';
  ref: ResourceRef;
  /** The kind's informer; this reconciler's own writes go into it at once (observeWrite). */
  informer: ObjectCache<Check | Collapse> & { observeWrite(raw: InformedObject | undefined): void };
  caches: Caches;
  status: StatusWriter;
  refusals: RefusalWriter;
  events: EventRecorder;
  deleter: ObjectDeleter;
  clock: Clock;
  /** Creates the Checks of a Collapse's rebased candidate (Collapses only). */
  createCheck?: CheckCreator;
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
    const desired = computeDependentStatus(d.kind, obj, world, d.clock.now());
    const binding = desired.binding;
    const ours = binding.state === 'bound' || binding.state === 'unbound';

    // A dependent of its own World being deleted goes with it (a replaced World's are kept, refused).
    if (world?.metadata.deletionTimestamp && ours) {
      await d.deleter.delete(d.ref, key);
      return;
    }

    let boundNow = false;
    // Bind first (spec.worldUID, ownerReference, node label), so a node-agent never sees the object
    // handed to it (status.nodeName) without the uid it must check the World against.
    if ((binding.state === 'bound' || binding.state === 'unbound') && world?.metadata.name) {
      const uid = binding.worldUid;
      const owned = (obj.metadata.ownerReferences ?? []).some((o) => o.uid === uid);
      const node = world.status?.nodeName;
      const labelled = !node || obj.metadata.labels?.[NODE_LABEL] === node;
      if (binding.state === 'unbound' || !owned || !labelled) {
        d.informer.observeWrite(await d.status.applyObject<Check | Collapse>(d.ref, {
          apiVersion: API_VERSION,
          kind: d.kind,
          metadata: {
            name,
            namespace: ns,
            ownerReferences: [{ apiVersion: API_VERSION, kind: 'World', name: world.metadata.name, uid, blockOwnerDeletion: true }],
            ...(node ? { labels: { [NODE_LABEL]: node } } : {}),
          },
          // Applied every time: a field this manager applied once and then omits would be removed.
          spec: { worldUID: uid },
        }));
        if (binding.state === 'unbound') {
          d.events.normal(obj, 'WorldBound', `bound to World "${world.metadata.name}" uid ${uid}${node ? ` on node "${node}"` : ''}`);
          boundNow = true;
        }
      }
    }

    // A Collapse the node-agent rebased waits for the checks of its rebased candidate: they are made here.
    const rebase = d.kind === 'Collapse' ? (obj as Collapse).status?.rebase : undefined;
    if (rebase && obj.status?.phase === 'Rebasing' && binding.state === 'bound' && world?.metadata.name && d.createCheck) {
      const required = requiredChecks(d.caches.policies.list(), world.spec.roots);
      const made = await ensureRebaseChecks(d.createCheck, d.caches.checks, { name, namespace: ns }, { name: world.metadata.name, uid: binding.worldUid }, rebase.candidate, required);
      if (made.length > 0) d.events.normal(obj, 'RebaseChecksCreated', `checks of the rebased candidate ${rebase.candidate}: ${made.join(', ')}`);
    }

    // The status is computed from the object as the binding left it: binding sets spec.worldUID, a new
    // generation, which the conditions' observedGeneration must carry (else the next reconcile writes again).
    const cached = d.informer.get(key);
    const seen = cached && cached.metadata.uid === obj.metadata.uid ? cached : obj;
    const settled = seen === obj ? desired : computeDependentStatus(d.kind, seen, world, d.clock.now());
    const phase = settled.phase ? { phase: settled.phase.phase, reason: settled.phase.reason, message: settled.phase.message, ...(settled.phase.verdict ? { verdict: settled.phase.verdict } : {}) } : {};
    const want = { nodeName: settled.nodeName, conditions: settled.conditions, ...phase };
    const current = {
      nodeName: seen.status?.nodeName,
      conditions: (seen.status?.conditions ?? []).filter((c) => c.type === ControllerConditions.WorldFound),
      ...(settled.phase ? pickPhase(seen.status) : {}),
    };
    if (!statusEqual(current, want)) {
      // Into the cache at once: a reconcile woken by another write before this one's echo (the binding's,
      // the node-agent's first phase) compares against it instead of applying the same status again.
      d.informer.observeWrite(await d.status.applyStatus<Check | Collapse>(d.ref, { metadata: { name, namespace: ns }, status: { ...want } }));
      const before = findCondition(seen.status?.conditions, ControllerConditions.WorldFound);
      const after = findCondition(settled.conditions, ControllerConditions.WorldFound);
      if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
        // The binding's own Event already said where the World is: one Event for one step, not two.
        if (after.status === 'True' && !boundNow) d.events.normal(obj, after.reason, after.message);
        else if (after.status !== 'True') d.events.warning(obj, after.reason, after.message);
      }
    }
    return;
  };
}

/** The phase fields the controller writes while no node-agent has the object (verdict: Checks only). */
function pickPhase(status: (Check | Collapse)['status']): Record<string, unknown> {
  const s = (status ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { phase: s.phase, reason: s.reason, message: s.message };
  if (s.verdict !== undefined) out.verdict = s.verdict;
  return out;
}
