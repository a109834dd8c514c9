// Reconciles a World: binds it to the node of its Roots, keeps the controller's conditions current,
// holds the node-cleanup finalizer while it is bound, and deletes its Checks and Collapses when the
// World is deleted (ownerReferences do the same wherever a garbage collector runs).
import type { World } from '../crds/index.js';
import type { Clock } from '../kube/clock.js';
import { findCondition, setCondition } from '../kube/conditions.js';
import type { EventRecorder } from '../kube/events.js';
import type { Logger } from '../kube/logger.js';
import type { ReconcileResult } from '../kube/reconcile.js';
import type { RefusalWriter } from '../kube/refusal-writer.js';
import { statusEqual, type StatusWriter } from '../kube/status-writer.js';
import type { Caches } from './caches.js';
import type { ObjectDeleter } from '../kube/object-deleter.js';
import { ControllerConditions, NODE_CLEANUP_FINALIZER, NODE_LABEL, Reasons } from './reasons.js';
import { API_VERSION, refs } from './api-refs.js';
import { computeWorldStatus, type RootView } from './world-status.js';
import { checksPassedCondition, checksSummary, degradedCondition, ensureChecks, requiredChecks, type CheckCreator } from './world-checks.js';

export interface WorldReconcilerDeps {
  caches: Caches;
  status: StatusWriter;
  refusals: RefusalWriter;
  events: EventRecorder;
  deleter: ObjectDeleter;
  clock: Clock;
  logger: Logger;
  /** Creates a Check (AlreadyExists is success); Captured Worlds get one per required check. */
  createCheck: CheckCreator;
}

function ownedSubset(status: World['status'], keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const st: Record<string, unknown> = { ...status };
  for (const k of keys) {
    if (k === 'conditions') continue;
    if (st[k] !== undefined) out[k] = st[k];
  }
  return out;
}

export function makeWorldReconciler(d: WorldReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  return async (key) => {
    const refused = d.caches.worlds.refusal(key);
    if (refused) {
      // The World is refused by name: Accepted=False and phase Refused with OBJECT_SCHEMA_INVALID.
      await d.refusals.refuse(refs.World, refused, { condition: ControllerConditions.Accepted, phase: 'Refused' }, d.clock.now());
      return;
    }
    const world = d.caches.worlds.get(key);
    if (!world?.metadata.name) return;
    const ns = world.metadata.namespace ?? '';
    const name = world.metadata.name;

    if (world.metadata.deletionTimestamp) {
      // Only those bound to this World (or not bound yet): one bound to an earlier World of the name stays, refused.
      const ours = (o: { spec: { worldUID?: string | undefined } } | undefined): boolean => !o?.spec.worldUID || o.spec.worldUID === world.metadata.uid;
      for (const k of d.caches.checksOf(ns, name)) if (ours(d.caches.checks.get(k))) await d.deleter.delete(refs.Check, k);
      for (const k of d.caches.collapsesOf(ns, name)) if (ours(d.caches.collapses.get(k))) await d.deleter.delete(refs.Collapse, k);
      const fins = world.metadata.finalizers ?? [];
      if (fins.includes(NODE_CLEANUP_FINALIZER) && !world.status?.nodeName) {
        // Never bound: nothing exists on any node, so there is nothing for a node-agent to release.
        await d.deleter.removeFinalizer(refs.World, key, NODE_CLEANUP_FINALIZER);
      }
      return;
    }

    const roots = new Map<string, RootView>();
    for (const r of world.spec.roots) {
      const root = d.caches.roots.get(r);
      if (root) roots.set(r, root);
    }
    const now = d.clock.now();
    const computed = computeWorldStatus({ world, roots, nodeAgentPresent: (n) => d.caches.nodeAgentPresent(n, now), now });
    // A captured candidate needs one Check per check of the governing Policy (created while Captured);
    // the CHECKS column and ChecksPassed follow them, and stay once the World is Collapsed.
    const phase = world.status?.phase;
    const policyChecks = phase === 'Captured' || phase === 'Collapsed' ? requiredChecks(d.caches.policiesNaming(world.spec.roots), world.spec.roots) : [];
    if (phase === 'Captured' && policyChecks.length > 0 && world.metadata.uid) {
      const made = await ensureChecks(d.createCheck, d.caches.checks, { name, namespace: ns, uid: world.metadata.uid }, policyChecks, (check) => d.deleter.delete(refs.Check, `${ns}/${check}`));
      if (made.length > 0) d.events.normal(world, 'ChecksCreated', `created Check ${made.join(', ')} for the captured candidate`);
    }
    let desired = policyChecks.length > 0 ? { ...computed, checksSummary: checksSummary(d.caches.checks, ns, name, policyChecks) } : computed;
    if (phase === 'Captured' || phase === 'Collapsed') {
      const candidate = world.status?.candidate?.digest;
      // Both follow the candidate's Checks while Captured and stay as they were once the World is Collapsed.
      for (const [type, compute] of [['ChecksPassed', checksPassedCondition], ['Degraded', degradedCondition]] as const) {
        const prev = findCondition(world.status?.conditions, type);
        const cond = phase === 'Collapsed' && prev ? { status: prev.status, reason: prev.reason, message: prev.message } : compute(d.caches.checks, ns, name, policyChecks, candidate);
        desired = { ...desired, conditions: setCondition([...desired.conditions, ...(prev ? [prev] : [])], { type, ...cond }, world.metadata.generation, now) };
      }
    }

    const keys = Object.keys(desired);
    const currentOwned = ownedSubset(world.status, keys);
    const currentConds = (world.status?.conditions ?? []).filter((c) => desired.conditions.some((x) => x.type === c.type));
    const { conditions: desiredConds, ...desiredRest } = desired;
    const changed = !statusEqual(currentOwned, desiredRest) || !statusEqual(sortByType(currentConds), sortByType(desiredConds));
    if (changed) {
      // The write's result goes into the cache at once: the next look at this World sees it, and the
      // watch's echo of it wakes nothing.
      d.caches.worlds.observeWrite(await d.status.applyStatus<World>(refs.World, { metadata: { name, namespace: ns }, status: { ...desired } }));
      const before = findCondition(world.status?.conditions, ControllerConditions.Accepted);
      const after = findCondition(desired.conditions, ControllerConditions.Accepted);
      const acceptedEvent = after !== undefined && (before?.status !== after.status || before?.reason !== after.reason);
      if (after && acceptedEvent) {
        if (after.status === 'True') d.events.normal(world, after.reason, after.message);
        else d.events.warning(world, after.reason, after.message);
      }
      const readyBefore = findCondition(world.status?.conditions, 'Ready');
      const readyAfter = findCondition(desired.conditions, 'Ready');
      // Not for Ready's two steps another Event already tells: NodeAgentPresent in the write that binds
      // (the Accepted Event names the node) and CandidateCaptured (the node-agent's Captured Event).
      const toldElsewhere = readyAfter?.reason === Reasons.CandidateCaptured.reason || (readyAfter?.reason === Reasons.NodeAgentPresent.reason && acceptedEvent && after.reason === Reasons.Bound.reason);
      if (readyAfter && readyAfter.reason !== readyBefore?.reason && readyAfter.reason !== after?.reason && !toldElsewhere) {
        d.events.normal(world, readyAfter.reason, readyAfter.message);
      }
      const degradedBefore = findCondition(world.status?.conditions, 'Degraded');
      const degradedAfter = findCondition(desired.conditions, 'Degraded');
      if (degradedAfter?.status === 'True' && degradedBefore?.status !== 'True') d.events.warning(world, degradedAfter.reason, degradedAfter.message);
    }

    const nodeName = desired.nodeName;
    if (nodeName) {
      const hasFinalizer = (world.metadata.finalizers ?? []).includes(NODE_CLEANUP_FINALIZER);
      const hasLabel = world.metadata.labels?.[NODE_LABEL] === nodeName;
      if (!hasFinalizer || !hasLabel) {
        d.caches.worlds.observeWrite(await d.status.applyObject<World>(refs.World, {
          apiVersion: API_VERSION,
          kind: 'World',
          metadata: { name, namespace: ns, finalizers: [NODE_CLEANUP_FINALIZER], labels: { [NODE_LABEL]: nodeName } },
        }));
      }
    }
    return;
  };
}

function sortByType<T extends { type: string }>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => a.type.localeCompare(b.type));
}
