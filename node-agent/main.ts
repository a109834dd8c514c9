// worldline-node-agent entry point: one per node, as root. Opens (and locks) the node store, adopts
// this node's Roots, runs the Worlds bound to this node, heartbeats a Lease so the controller knows
// the node is served, and serves health and metrics.
import type { KubernetesObject } from '@kubernetes/client-node';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { loadKubeConfig } from '../kube/client.js';
import { systemClock } from '../kube/clock.js';
import { EventRecorder } from '../kube/events.js';
import { startHttpServer } from '../kube/http-server.js';
import { Informer } from '../kube/informer.js';
import { createLogger } from '../kube/logger.js';
import { createReconcileMetrics } from '../kube/metrics.js';
import { ObjectDeleter } from '../kube/object-deleter.js';
import { ControllerRunner } from '../kube/reconcile.js';
import { objectKey } from '../kube/resource-ref.js';
import { onShutdown } from '../kube/shutdown.js';
import { StatusWriter } from '../kube/status-writer.js';
import * as native from '../native/index.js';
import { parseAgentConfig } from './config.js';
import { Heartbeat } from './heartbeat.js';
import { FIELD_MANAGER, refs } from './resources.js';
import { makeNodeRootReconciler } from './root-reconciler.js';
import { detectCgroups } from './sandbox/cgroup.js';
import { openStore } from './store/open-store.js';
import { isStoreError } from './store/store-errors.js';
import { sweepOrphanWorlds } from './orphan-sweep.js';
import type { WorldObj } from './world-launch.js';
import { NodeWorlds } from './world-reconciler.js';

interface RootObj extends KubernetesObject {
  spec?: { nodeName?: string; path?: string };
}

async function main(): Promise<void> {
  const cfg = parseAgentConfig(process.argv.slice(2), process.env);
  const logger = createLogger('worldline-node-agent', { level: cfg.logLevel }).child({ node: cfg.nodeName });
  if (process.getuid?.() !== 0) throw new Error('the node-agent must run as root (it mounts, creates namespaces and writes cgroups)');
  let opened;
  try {
    opened = await openStore({ dir: cfg.storeDir });
  } catch (err) {
    if (isStoreError(err) && err.code === 'STORE_LOCKED') {
      logger.error('another node-agent owns this store', { code: err.code, store: cfg.storeDir, error: err.message });
      process.exit(2);
    }
    throw err;
  }
  const { store, recovered } = opened;
  for (const r of recovered) logger.warn('recovered an interrupted adoption', { ...r });
  const cgroups = detectCgroups();
  const swept = sweepOrphanWorlds(store, cgroups);
  if (swept.length > 0) logger.warn('removed leftovers of worlds no longer recorded', { worlds: swept });
  logger.info('store opened', { store: store.dir, cgroups: cgroups.version });

  const kc = loadKubeConfig(cfg.kubeconfig ? { kubeconfig: cfg.kubeconfig } : {});
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createReconcileMetrics(registry);
  const clock = systemClock;
  const events = new EventRecorder(kc, { component: 'worldline-node-agent', instance: cfg.nodeName, logger });
  const status = new StatusWriter(kc, FIELD_MANAGER, logger);
  const deleter = new ObjectDeleter(kc, logger);
  const roots = new Informer<RootObj>({ kubeConfig: kc, resource: refs.Root, fieldSelector: `spec.nodeName=${cfg.nodeName}`, logger, clock });
  const worlds = new Informer<WorldObj>({ kubeConfig: kc, resource: refs.World, fieldSelector: `status.nodeName=${cfg.nodeName}`, logger, clock });

  const nodeWorlds = new NodeWorlds({
    informer: worlds,
    rootPath: (name) => roots.get(name)?.spec?.path,
    store,
    kubeConfig: kc,
    config: cfg,
    launch: { store, kubeConfig: kc, config: cfg, cgroups, agentNs: native.nsIds('self') },
    status,
    events,
    deleter,
    clock,
    logger,
  });
  const rootRunner = new ControllerRunner({ kind: 'NodeRoot', reconcile: makeNodeRootReconciler({ informer: roots, store, status, events, clock, nodeName: cfg.nodeName, logger }), workers: 2, metrics, logger });
  const worldRunner = new ControllerRunner({ kind: 'NodeWorld', reconcile: nodeWorlds.reconcile, workers: 4, metrics, logger });
  const onRoot = (o: RootObj): void => {
    rootRunner.enqueue(objectKey(o));
    for (const w of worlds.list()) if ((w.spec?.roots ?? []).includes(o.metadata?.name ?? '')) worldRunner.enqueue(objectKey(w));
  };
  roots.onAdd(onRoot);
  roots.onUpdate((o) => onRoot(o));
  roots.onDelete(onRoot);
  worlds.onAdd((o) => worldRunner.enqueue(objectKey(o)));
  worlds.onUpdate((o) => worldRunner.enqueue(objectKey(o)));
  worlds.onDelete((o) => worldRunner.enqueue(objectKey(o)));

  let ready = false;
  const server = await startHttpServer({ host: cfg.metricsHost, port: cfg.metricsPort, registry, ready: () => ready, logger });
  logger.info('serving health and metrics', { host: cfg.metricsHost, port: server.port });
  const heartbeat = new Heartbeat({ kubeConfig: kc, namespace: cfg.namespace, nodeName: cfg.nodeName, identity: `${cfg.nodeName}-${process.pid}`, clock, logger });

  onShutdown(async () => {
    logger.info('shutting down');
    ready = false;
    roots.stop();
    worlds.stop();
    await rootRunner.stop();
    await worldRunner.stop();
    await nodeWorlds.stopAll();
    await heartbeat.stop();
    await events.flush();
    await server.close();
    store.close();
  }, logger, { timeoutMs: 60_000 });

  await Promise.all([roots.start(), worlds.start()]);
  rootRunner.start();
  worldRunner.start();
  await heartbeat.start();
  ready = true;
  logger.info('node-agent started', { store: store.dir });
}

main().catch((err: unknown) => {
  const e = err as Error;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', component: 'worldline-node-agent', msg: 'fatal', error: e?.message ?? String(err) })}\n`);
  process.exit(1);
});
