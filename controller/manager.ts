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
import { ObjectDeleter } from '../kube/object-deleter.js';
import { makePolicyReconciler } from './policy-reconciler.js';
import { NODE_LABEL } from './reasons.js';
import { refs } from './api-refs.js';
import { makeRootReconciler } from './root-reconciler.js';
import { makeWorldReconciler } from './world-reconciler.js';
import { registerNodeAgentMetrics } from './node-agent-metrics.js';
import { checkCreator } from './world-checks.js';

export const FIELD_MANAGER = 'worldline-controller';

export interface ManagerOptions {
  kubeConfig: KubeAccess;
  namespace: string;
  registry: Registry;
  events: EventRecorder;
  logger: Logger;
  clock?: Clock;
  workers?: number;
}

export class Manager {
  readonly caches: Caches;
  private readonly runners: Record<'Root' | 'Policy' | 'World' | 'Check' | 'Collapse', ControllerRunner>;
  private synced = false;

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
    const runner = (kind: string, reconcile: (key: string) => Promise<ReconcileResult>): ControllerRunner =>
      new ControllerRunner({ kind, reconcile, workers: opts.workers ?? DEFAULT_WORKERS, metrics, logger: logger.child({ reconciler: kind }) });
    this.runners = {
      Root: runner('Root', makeRootReconciler({ caches, status, refusals, events, clock })),
      Policy: runner('Policy', makePolicyReconciler({ caches, status, refusals, events, clock })),
      World: runner('World', makeWorldReconciler({ caches, status, refusals, events, deleter, clock, logger, createCheck: checkCreator(opts.kubeConfig) })),
      Check: runner('Check', makeDependentReconciler({ kind: 'Check', ref: refs.Check, informer: caches.checks, caches, status, refusals, events, deleter, clock })),
      Collapse: runner('Collapse', makeDependentReconciler({ kind: 'Collapse', ref: refs.Collapse, informer: caches.collapses, caches, status, refusals, events, deleter, clock })),
    };
    this.wire();
    registerNodeAgentMetrics(opts.registry, { synced: () => this.synced, leases: () => caches.leases.list() }, clock);
  }

  private wire(): void {
    const c = this.caches;
    const r = this.runners;
    const each = <T extends InformedObject>(inf: Informer<T>, fn: (o: T) => void): void => {
      inf.onAdd(fn);
      inf.onUpdate((o) => fn(o));
      inf.onDelete(fn);
    };
    // An object its schema refuses is handed to its own reconciler by key, which writes the refusal.
    c.roots.onRefuse((x) => {
      r.Root.enqueue(x.key);
      for (const w of c.worldsUsingRoot(x.metadata.name)) r.World.enqueue(w);
    });
    c.policies.onRefuse((x) => r.Policy.enqueue(x.key));
    c.worlds.onRefuse((x) => r.World.enqueue(x.key));
    c.checks.onRefuse((x) => r.Check.enqueue(x.key));
    c.collapses.onRefuse((x) => r.Collapse.enqueue(x.key));
    each(c.roots, (o) => {
      const name = o.metadata.name ?? '';
      r.Root.enqueue(name);
      // Overlap is decided among all Roots on a node, so a change to one re-decides its neighbours.
      const node = o.spec.nodeName;
      for (const other of c.roots.list()) {
        if (other.spec.nodeName === node) r.Root.enqueue(objectKey(other));
      }
      for (const w of c.worldsUsingRoot(name)) r.World.enqueue(w);
      for (const p of c.policies.list()) r.Policy.enqueue(objectKey(p));
    });
    each(c.policies, () => {
      for (const p of c.policies.list()) r.Policy.enqueue(objectKey(p));
      // A Policy's checks decide which Checks a Captured World needs.
      for (const w of c.worlds.list()) if (w.status?.phase === 'Captured') r.World.enqueue(objectKey(w));
    });
    each(c.worlds, (o) => {
      const ns = o.metadata.namespace ?? '';
      const name = o.metadata.name ?? '';
      r.World.enqueue(objectKey(o));
      for (const k of c.dependentsOf(c.checks, ns, name)) r.Check.enqueue(k);
      for (const k of c.dependentsOf(c.collapses, ns, name)) r.Collapse.enqueue(k);
    });
    each(c.checks, (o) => {
      r.Check.enqueue(objectKey(o));
      // The World's CHECKS summary follows its Checks' verdicts.
      r.World.enqueue(`${o.metadata.namespace ?? ''}/${o.spec.worldRef}`);
    });
    each(c.collapses, (o) => r.Collapse.enqueue(objectKey(o)));
    each(c.leases, (o) => {
      const node = o.metadata?.labels?.[NODE_LABEL];
      for (const w of c.worlds.list()) {
        if (w.status?.nodeName === node || !node) r.World.enqueue(objectKey(w));
      }
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
    await Promise.all(Object.values(this.runners).map((x) => x.stop()));
    this.synced = false;
  }
}
