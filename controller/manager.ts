// Wires the controller together: informers feed keys into one work queue per kind, and each queue
// is drained by that kind's level-based reconciler. Started only while this replica is the leader.
import type { KubeAccess } from '../kube/kube-access.js';
import type { Registry } from 'prom-client';
import type { Clock } from '../kube/clock.js';
import { systemClock } from '../kube/clock.js';
import type { EventRecorder } from '../kube/events.js';
import type { InformedObject, Informer } from '../kube/informer.js';
import type { Logger } from '../kube/logger.js';
import { createReconcileMetrics } from '../kube/metrics.js';
import { ControllerRunner, type ReconcileResult } from '../kube/reconcile.js';
import { objectKey } from '../kube/resource-ref.js';
import { RefusalWriter } from '../kube/refusal-writer.js';
import { StatusWriter } from '../kube/status-writer.js';
import { Caches } from './caches.js';
import { DEFAULT_WORKERS } from './config.js';
import { makeDependentReconciler } from './dependent-reconciler.js';
import { GrantIssuer } from './evidence/grant-issuer.js';
import type { GrantKey } from './evidence/grant-key.js';
import type { WorldRefView } from './dependent-status.js';
import { ObjectDeleter } from '../kube/object-deleter.js';
import { makePolicyReconciler } from './policy-reconciler.js';
import { NODE_LABEL } from './reasons.js';
import { refs } from './api-refs.js';
import { makeRootReconciler } from './root-reconciler.js';
import { makeWorldReconciler } from './world-reconciler.js';
import { registerNodeAgentMetrics } from './node-agent-metrics.js';
import { checkCreator } from './world-checks.js';
import { LedgerHeads } from './ledger-heads.js';
import { NodePresence } from './node-presence.js';
import { pathsOverlap } from './root-status.js';
import { governingPolicy, olderPolicyFirst } from '../core/policy/governing.js';

export const FIELD_MANAGER = 'worldline-controller';

/** Whether what a Check or Collapse reads of its World (controller/dependent-status.ts WorldRefView) changed. */
function worldRefChanged(before: WorldRefView, after: WorldRefView): boolean {
  return before.metadata.uid !== after.metadata.uid
    || String(before.metadata.deletionTimestamp ?? '') !== String(after.metadata.deletionTimestamp ?? '')
    || before.status?.nodeName !== after.status?.nodeName;
}

export interface ManagerOptions {
  kubeConfig: KubeAccess;
  namespace: string;
  registry: Registry;
  events: EventRecorder;
  logger: Logger;
  clock?: Clock;
  workers?: number;
  /** The trust policy file: ledger heads are then recorded only under keys it pins for each node. */
  trustPolicy?: string;
  /** With a trust policy: the key that signs collapse grants after each evidence graph verifies. */
  grantKey?: GrantKey;
}

/** The Collapse reconciler, then (with a grant issuer) the verification of an Authorized Collapse's evidence graph. */
function withGrants(reconcile: (key: string) => Promise<ReconcileResult>, grants: GrantIssuer | undefined): (key: string) => Promise<ReconcileResult> {
  if (!grants) return reconcile;
  return async (key) => {
    const result = await reconcile(key);
    await grants.reconcile(key);
    return result;
  };
}

export class Manager {
  readonly caches: Caches;
  private readonly runners: Record<'Root' | 'Policy' | 'World' | 'Check' | 'Collapse', ControllerRunner>;
  private synced = false;
  private readonly presence: NodePresence;
  private readonly heads: LedgerHeads;

  constructor(private readonly opts: ManagerOptions) {
    const clock = opts.clock ?? systemClock;
    const logger = opts.logger;
    this.caches = new Caches(opts.kubeConfig, opts.namespace, logger, clock);
    const status = new StatusWriter(opts.kubeConfig, FIELD_MANAGER, logger);
    const refusals = new RefusalWriter(opts.kubeConfig, FIELD_MANAGER, logger);
    const deleter = new ObjectDeleter(opts.kubeConfig, logger);
    const metrics = createReconcileMetrics(opts.registry);
    const events = opts.events;
    const caches = this.caches;
    const grants = opts.grantKey && opts.trustPolicy
      ? new GrantIssuer({ kubeConfig: opts.kubeConfig, caches, key: opts.grantKey, trustPolicyPath: opts.trustPolicy, events, clock, logger: logger.child({ part: 'collapse-grants' }), registry: opts.registry })
      : undefined;
    const runner = (kind: string, reconcile: (key: string) => Promise<ReconcileResult>): ControllerRunner =>
      new ControllerRunner({ kind, reconcile, workers: opts.workers ?? DEFAULT_WORKERS, metrics, logger: logger.child({ reconciler: kind }) });
    this.runners = {
      Root: runner('Root', makeRootReconciler({ caches, status, refusals, events, clock })),
      Policy: runner('Policy', makePolicyReconciler({ caches, status, refusals, events, clock })),
      World: runner('World', makeWorldReconciler({ caches, status, refusals, events, deleter, clock, logger, createCheck: checkCreator(opts.kubeConfig) })),
      Check: runner('Check', makeDependentReconciler({ kind: 'Check', ref: refs.Check, informer: caches.checks, caches, status, refusals, events, deleter, clock })),
      Collapse: runner('Collapse', withGrants(makeDependentReconciler({ kind: 'Collapse', ref: refs.Collapse, informer: caches.collapses, caches, status, refusals, events, deleter, clock, createCheck: checkCreator(opts.kubeConfig) }), grants)),
    };
    this.heads = new LedgerHeads({ kubeConfig: opts.kubeConfig, namespace: opts.namespace, writer: status, events, clock, logger: logger.child({ part: 'ledger-heads' }), ...(opts.trustPolicy ? { trustPolicy: opts.trustPolicy } : {}) });
    this.presence = new NodePresence(() => caches.leases.list(), clock, (node) => {
      for (const w of caches.worldsOnNode(node)) this.runners.World.enqueue(w);
    });
    this.wire();
    registerNodeAgentMetrics(opts.registry, { synced: () => this.synced, leases: () => caches.leases.list() }, clock);
  }

  private wire(): void {
    const c = this.caches;
    const r = this.runners;
    // Fan-out follows indexes (kube/informer-index.ts), never a scan of a whole cache: under a flood of
    // objects a scan per event made the controller fall minutes behind (docs/testing.md, fuzz campaign).
    const each = <T extends InformedObject>(inf: Informer<T>, fn: (o: T, old?: T) => void): void => {
      inf.onAdd((o) => fn(o));
      inf.onUpdate((o, old) => fn(o, old));
      inf.onDelete((o) => fn(o));
    };
    // An object its schema refuses is handed to its own reconciler by key, which writes the refusal.
    c.roots.onRefuse((x) => {
      r.Root.enqueue(x.key);
      for (const w of c.worldsUsingRoot(x.metadata.name)) r.World.enqueue(w);
      // A refused Root leaves the cache: Policies naming it no longer find it.
      for (const p of c.policiesNaming([x.metadata.name])) r.Policy.enqueue(objectKey(p));
    });
    c.policies.onRefuse((x) => r.Policy.enqueue(x.key));
    c.worlds.onRefuse((x) => r.World.enqueue(x.key));
    c.checks.onRefuse((x) => r.Check.enqueue(x.key));
    c.collapses.onRefuse((x) => r.Collapse.enqueue(x.key));
    // Each node's newest receipt, recorded where the node cannot rewrite it (ledger-heads.ts).
    c.collapses.onAdd((o) => this.heads.observe(o));
    c.collapses.onUpdate((o) => this.heads.observe(o));
    each(c.roots, (o, old) => {
      const name = o.metadata.name ?? '';
      r.Root.enqueue(name);
      // A Root's Worlds follow its status.
      for (const w of c.worldsUsingRoot(name)) r.World.enqueue(w);
      // Its path, node and age are immutable: only its arrival or departure changes what others decide.
      if (old) return;
      // Overlap is decided among the Roots on a node: those this one overlaps are re-decided.
      for (const other of c.rootsOnNode(o.spec.nodeName)) {
        if (pathsOverlap(other.spec.path, o.spec.path)) r.Root.enqueue(objectKey(other));
      }
      // A Policy naming a Root that does not exist is refused until it does.
      for (const p of c.policiesNaming([name])) r.Policy.enqueue(objectKey(p));
    });
    each(c.policies, (o, old) => {
      r.Policy.enqueue(objectKey(o));
      // Among Policies naming a Root in common the oldest governs and the others are refused naming it, so
      // this one (arriving, changing its Roots or leaving) changes what is decided only for younger ones,
      // and which checks a Captured World needs only where it is the oldest. Roots named before an update count too.
      const roots = [...new Set([...o.spec.roots, ...(old?.spec.roots ?? [])])];
      const others = c.policiesNaming(roots).filter((p) => p.metadata.name !== o.metadata.name);
      for (const p of others) if (olderPolicyFirst(o, p) < 0) r.Policy.enqueue(objectKey(p));
      for (const root of roots) {
        // Whether it governs (or governed, before this update or its deletion) the Root: the same rule as
        // everywhere, asked as if it named the Root now.
        const asNaming = { metadata: o.metadata, spec: { roots: [root] } };
        if (governingPolicy([asNaming, ...others], [root]) !== asNaming) continue;
        for (const k of c.worldsUsingRoot(root)) if (c.worlds.get(k)?.status?.phase === 'Captured') r.World.enqueue(k);
      }
    });
    each(c.worlds, (o, old) => {
      const ns = o.metadata.namespace ?? '';
      const name = o.metadata.name ?? '';
      r.World.enqueue(objectKey(o));
      // Its Checks and Collapses read its uid, deletion and node (WorldRefView): a change elsewhere (its
      // conditions, say, written at every step of its run) leaves them as they are.
      if (old && !worldRefChanged(old, o)) return;
      for (const k of c.checksOf(ns, name)) r.Check.enqueue(k);
      for (const k of c.collapsesOf(ns, name)) r.Collapse.enqueue(k);
    });
    each(c.checks, (o) => {
      r.Check.enqueue(objectKey(o));
      // The World's CHECKS summary follows its Checks' verdicts.
      r.World.enqueue(`${o.metadata.namespace ?? ''}/${o.spec.worldRef}`);
    });
    each(c.collapses, (o) => r.Collapse.enqueue(objectKey(o)));
    // A node's Worlds are woken when its node-agent comes or goes, not at every heartbeat.
    each(c.leases, (o) => {
      const node = o.metadata?.labels?.[NODE_LABEL];
      if (node) this.presence.observe(node);
    });
  }

  /** Lists every kind, then starts the reconcilers; resolves once caches are synced. */
  async start(): Promise<void> {
    await this.caches.start();
    for (const runner of Object.values(this.runners)) runner.start();
    this.synced = true;
    this.opts.logger.info('controller started', { kinds: Object.keys(this.runners) });
  }

  isSynced(): boolean {
    return this.synced;
  }

  async stop(): Promise<void> {
    this.caches.stop();
    this.presence.stop();
    await this.heads.stop();
    await Promise.all(Object.values(this.runners).map((x) => x.stop()));
    this.synced = false;
  }
}
