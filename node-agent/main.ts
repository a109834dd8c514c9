// worldline-node-agent entry point: one per node, as root. Opens (and locks) the node store, adopts
// this node's Roots, runs the Worlds bound to this node, heartbeats a Lease so the controller knows
// the node is served, and serves health and metrics.
import { join } from 'node:path';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { loadKubeConfig } from '../kube/client.js';
import { systemClock } from '../kube/clock.js';
import { EventRecorder } from '../kube/events.js';
import { startHttpServer } from '../kube/http-server.js';
import { Informer } from '../kube/informer.js';
import { kindParsers } from '../kube/kind-parsers.js';
import { governingPolicy } from '../core/policy/governing.js';
import type { Policy, Root, World } from '../crds/index.js';
import { createLogger, type Logger } from '../kube/logger.js';
import { createReconcileMetrics } from '../kube/metrics.js';
import { ObjectDeleter } from '../kube/object-deleter.js';
import { ControllerRunner } from '../kube/reconcile.js';
import { objectKey } from '../kube/resource-ref.js';
import { onShutdown } from '../kube/shutdown.js';
import { RefusalWriter } from '../kube/refusal-writer.js';
import { StatusWriter } from '../kube/status-writer.js';
import * as native from '../native/index.js';
import { wantsHelp } from '../kube/cli-help.js';
import { parseAgentConfig, USAGE, type AgentConfig } from './config.js';
import { Heartbeat } from './heartbeat.js';
import { FIELD_MANAGER, refs } from './api-refs.js';
import { makeNodeRootReconciler } from './roots/root-reconciler.js';
import { rootFinalizers } from './roots/root-finalizer.js';
import { favorDynmods, type DynmodsOutcome, type FavorDynmodsState } from './sandbox/cgroup-dynmods.js';
import { recoverReleases } from './store/release-recovery.js';
import { detectCgroups, type CgroupLayout } from './sandbox/cgroup.js';
import { openStore, type Store } from './store/open-store.js';
import { runningWorlds } from './store/world-records.js';
import { recoverCollapses } from './collapses/recover-collapses.js';
import { OwnerEditSync } from './collapses/owner-edits.js';
import { Refusal } from '../core/errors.js';
import { startNodeCollapses } from './collapses/node-collapses.js';
import { isStoreError } from './store/store-errors.js';
import { sweepRunLeftovers } from './worlds/leftover-sweep.js';
import { RunDiskPool } from './sandbox/disk-pool.js';
import { DISK_TEMPLATES_NAME } from './sandbox/disk-image.js';
import { NodeWorlds } from './worlds/world-reconciler.js';
import type { RunAdmission } from './admission/admission-authority.js';
import { AdmissionAuthority, checkResourcesOf } from './admission/admission-authority.js';
import { loadAdmissionPolicy } from './admission/admission-host.js';
import { observeNode } from './admission/observe-node.js';
import { agentPolicyRecord, agentRequestRecord, baseSubject } from './isolation/world-request.js';
import { createAgentMetrics, type AgentMetrics } from './metrics.js';
import { enableBackgroundCompaction } from './collapses/background-compaction.js';
import { listRoots } from './store/store-records.js';
import { NodeChecks } from './checks/check-reconciler.js';
import { receiptPaths } from './receipts/open-ledger.js';
import { publishReceiptsPublicKey } from './receipts/publish-public-key.js';
import { formatHostPort } from '../kube/host-port.js';
import { readTlsDir } from '../kube/tls-dir.js';
import { VIEW_ADDRESS_ANNOTATION } from '../crds/labels.js';
import { startViewServer } from './view/view-server.js';
import { GrantStore, lazyGrantStore } from './evidence/grant-store.js';
import { readTrustPolicyFile } from '../kube/trust-policy-file.js';
import { WaiverSpender } from './evidence/waiver-spender.js';
import { worldProducers } from './isolation/world-producers.js';
import { layerPaths } from './sandbox/run-paths.js';
import { lowerTop } from './sandbox/rootfs.js';
import type { IsolationDecision, IsolationObservation } from '../core/isolation/records.js';
import { observationSubject, worldBaseSubject } from '../core/evidence/isolation-attestation.js';
import { PREDICATE_TYPES } from '../core/evidence/statement.js';
import { EvidenceStore } from './evidence/evidence-store.js';
import { StatementSigner } from './evidence/statement-signer.js';
import { ControllerGrants } from './evidence/controller-grant.js';
import { loadOrCreateSigningKey } from './receipts/signing-key.js';
import type { Attestations } from './isolation/isolation-gate.js';
import { EXEC_FIELD_MANAGER, WorldExecs } from './view/world-exec.js';

/**
 * Whether the trust policy revokes a grant id. Without a trust policy nothing is revoked; an unreadable
 * one revokes everything (fail closed: a revocation that cannot be read may be one that applies).
 */
function grantRevoked(trustPolicy: string | undefined, id: string): boolean {
  if (trustPolicy === undefined) return false;
  try {
    return (readTrustPolicyFile(trustPolicy).revocations.revokedGrants ?? []).includes(id);
  } catch {
    return true;
  }
}

/** Opens (and locks) the store, settles what a crash interrupted, removes leftovers of unrecorded worlds. */
async function openNodeStore(cfg: AgentConfig, logger: Logger): Promise<{ store: Store; cgroups: CgroupLayout; dynmods: FavorDynmodsState }> {
  let opened;
  try {
    opened = await openStore({ dir: cfg.storeDir, watchPrime: cfg.primeWatcher });
  } catch (err) {
    if (isStoreError(err) && err.code === 'STORE_LOCKED') {
      logger.error('another node-agent owns this store', { code: err.code, store: cfg.storeDir, error: err.message });
      process.exit(2);
    }
    throw err;
  }
  const { store, recovered, created, watcherError } = opened;
  if (watcherError !== undefined) logger.warn('the PRIME watcher could not start: every collapse walks PRIME', { error: watcherError });
  else if (cfg.primeWatcher) logger.info('the PRIME watcher observes the store filesystem', { store: store.dir });
  // The grant store is provisioned with the store, and only then: one that goes missing later is never
  // quietly started anew (that would forget what was spent); the waivers it would spend refuse instead.
  if (created) {
    GrantStore.provision(store.layout.grants).close();
    logger.info('provisioned the grant store with a new node store', { path: store.layout.grants });
  }
  for (const r of recovered) logger.warn('recovered an interrupted adoption', { ...r });
  for (const r of await recoverReleases(store)) logger.warn('settled an interrupted root release', { ...r }); // Root release (issue 12)
  // Collapse (issue 5): settle collapses a crash interrupted, before anything reads PRIME.
  for (const r of await recoverCollapses(store)) logger.warn('settled an interrupted collapse', { ...r });
  const cgroups = detectCgroups(cfg.cgroupRoot);
  const dynmods = cfg.cgroupFavorDynmods ? reportDynmods(favorDynmods(), logger) : 'off';
  const swept = await sweepRunLeftovers(store, cgroups);
  const { failed, ...removed } = swept;
  if (Object.values(removed).some((l) => l.length > 0)) logger.warn('removed what runs of the previous agent left', { ...removed });
  for (const f of failed) logger.error('could not remove what a run of the previous agent left; its id range stays held', f);
  logger.info('store opened', { store: store.dir, cgroups: cgroups.version });
  return { store, cgroups, dynmods };
}

/** What setting favordynmods did (sandbox/cgroup-dynmods.ts), logged: launches are slower without it, never refused. */
function reportDynmods(o: DynmodsOutcome, logger: Logger): FavorDynmodsState {
  const from = 'cgroupNs' in o && o.cgroupNs !== undefined ? { cgroupNs: o.cgroupNs } : {};
  if (o.state === 'enabled') logger.info('set favordynmods on the cgroup2 mount: a launch\'s cgroup moves no longer wait for an RCU grace period', { mount: o.mount, ...from });
  else if (o.state === 'already') logger.info('favordynmods is set on the cgroup2 mount', { mount: o.mount });
  else if (o.state === 'refused') logger.warn('could not set favordynmods on the cgroup2 mount: each launch\'s first cgroup move may wait ~10 ms for an RCU grace period', { mount: o.mount, error: o.error, ...from });
  else logger.info('no cgroup2 mount to set favordynmods on: each launch\'s first cgroup move may wait ~10 ms for an RCU grace period');
  return o.state;
}

/** The node's admission authority as worlds and checks use it: a malformed ceiling does not stop the agent; every World is then refused by name. */
function nodeAdmission(cfg: AgentConfig, store: Store, agentMetrics: AgentMetrics, logger: Logger): RunAdmission {
  const policyLoad = loadAdmissionPolicy(cfg.admissionRaw, { storeDir: store.dir });
  for (const note of policyLoad.notes) logger.info('admission default', { note });
  if (policyLoad.ok) {
    const authority = new AdmissionAuthority({ db: store.db, ...policyLoad.policy, observe: () => observeNode({ procDir: cfg.observeProcDir, storeDir: store.dir, runDirs: [store.layout.worlds, join(store.dir, 'checks'), store.layout.diskPool] }), clock: store.now, metrics: agentMetrics });
    // Worlds recorded running outlived the previous agent: their reservations stay until the world
    // reconciler re-attaches and finishes them (or cleans up one no supervisor started). Every other
    // reservation ended with that agent (the same holders keep their id ranges: leftover-sweep.ts).
    const recoveredReservations = authority.recover(new Set(runningWorlds(store.db)));
    if (recoveredReservations.kept.length > 0) logger.info('kept reservations of worlds that outlived the previous agent', { holders: recoveredReservations.kept });
    if (recoveredReservations.dropped.length > 0) logger.warn('dropped reservations of runs that ended with the previous agent', { holders: recoveredReservations.dropped });
    agentMetrics.setCapacity(policyLoad.policy.ceilings);
    agentMetrics.setReserved(authority.totals());
    return {
      admit: (holder, stage, resources) => authority.admit({ holder, stage, resources }),
      release: (holder) => {
        authority.release(holder);
        agentMetrics.setReserved(authority.totals());
      },
      checkResources: () => checkResourcesOf(authority.perWorld),
    };
  } else {
    logger.error('admission policy is invalid; every World is refused with RESOURCE_POLICY_INVALID until it is fixed', { field: policyLoad.field, error: policyLoad.message });
    return {
      admit: (_holder, stage) => {
        agentMetrics.admission(stage, 'RESOURCE_POLICY_INVALID');
        return { outcome: 'RESOURCE_POLICY_INVALID', message: policyLoad.message };
      },
      release: () => undefined,
      checkResources: () => null,
    };
  }
}

/** Roots and Worlds to the work queues (a Root's change wakes its Worlds), and the worlds-by-phase gauge. */
function wireInformerEvents(roots: Informer<Root>, worlds: Informer<World>, rootRunner: ControllerRunner, worldRunner: ControllerRunner, agentMetrics: AgentMetrics): void {
  const countPhases = (): void => {
    const counts: Record<string, number> = {};
    for (const w of worlds.list()) {
      const p = w.status?.phase;
      if (p !== undefined) counts[p] = (counts[p] ?? 0) + 1;
    }
    agentMetrics.setWorlds(counts);
  };
  const onRoot = (o: Root): void => {
    rootRunner.enqueue(objectKey(o));
    for (const w of worlds.list()) if (w.spec.roots.includes(o.metadata.name ?? '')) worldRunner.enqueue(objectKey(w));
  };
  roots.onAdd(onRoot);
  roots.onUpdate((o) => onRoot(o));
  roots.onDelete(onRoot);
  worlds.onAdd((o) => {
    worldRunner.enqueue(objectKey(o));
    countPhases();
  });
  worlds.onUpdate((o) => {
    worldRunner.enqueue(objectKey(o));
    countPhases();
  });
  worlds.onDelete((o) => {
    worldRunner.enqueue(objectKey(o));
    countPhases();
  });
}

async function main(): Promise<void> {
  if (wantsHelp(process.argv.slice(2))) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const cfg = parseAgentConfig(process.argv.slice(2), process.env);
  const logger = createLogger('worldline-node-agent', { level: cfg.logLevel }).child({ node: cfg.nodeName });
  if (process.getuid?.() !== 0) throw new Error('the node-agent must run as root (it mounts, creates namespaces and writes cgroups)');
  const { store, cgroups, dynmods } = await openNodeStore(cfg, logger);

  const kc = loadKubeConfig(cfg.kubeconfig ? { kubeconfig: cfg.kubeconfig } : {});
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createReconcileMetrics(registry);
  const agentMetrics = createAgentMetrics(registry);
  agentMetrics.favorDynmods(dynmods);
  store.primeMeasures.onRehash = (by) => agentMetrics.primeRehash(by);

  const admission = nodeAdmission(cfg, store, agentMetrics, logger);
  const clock = systemClock;
  const events = new EventRecorder(kc, { component: 'worldline-node-agent', instance: cfg.nodeName, logger });
  const status = new StatusWriter(kc, FIELD_MANAGER, logger);
  const refusals = new RefusalWriter(kc, FIELD_MANAGER, logger);
  const deleter = new ObjectDeleter(kc, logger);
  // Parsed at the edge: the node-agent's caches hold only objects their kind's schema accepts. A refused
  // Root, World or Policy is refused on status by the controller (which owns Accepted); a refused Check or
  // Collapse bound to this node is refused by its reconciler here.
  const roots = new Informer<Root>({ kubeConfig: kc, resource: refs.Root, parse: kindParsers.Root, fieldSelector: `spec.nodeName=${cfg.nodeName}`, logger, clock });
  const worlds = new Informer<World>({ kubeConfig: kc, resource: refs.World, parse: kindParsers.World, fieldSelector: `status.nodeName=${cfg.nodeName}`, logger, clock });
  const policies = new Informer<Policy>({ kubeConfig: kc, resource: refs.Policy, parse: kindParsers.Policy, logger, clock });
  // The world runner is made after the reconciler it drives; the reconciler wakes waiting worlds through it.
  const wake: { runner?: ControllerRunner } = {};

  const evidence = new EvidenceStore(store.dir);
  const disks = new RunDiskPool(store.layout.diskPool, join(store.layout.worlds, DISK_TEMPLATES_NAME), (err) => logger.warn('could not make a run disk ahead; the next launch of its size makes its own', { error: err.message }));
  const statements = new StatementSigner(loadOrCreateSigningKey(receiptPaths(store).keyDir), evidence);
  const controllerGrants = new ControllerGrants({ nodeName: cfg.nodeName, now: () => clock.now(), evidence, waitMs: cfg.grantWaitSeconds * 1000, ...(cfg.trustPolicy ? { trustPolicyPath: cfg.trustPolicy } : {}) });
  const grants = lazyGrantStore(store.layout.grants);
  const waivers = new WaiverSpender({ grants, nodeName: cfg.nodeName, now: () => clock.now(), ...(cfg.trustPolicy ? { trustPolicyPath: cfg.trustPolicy } : {}) });
  const nodeWorlds = new NodeWorlds({
    informer: worlds,
    rootPath: (name) => roots.get(name)?.spec.path,
    store,
    kubeConfig: kc,
    config: cfg,
    launch: { store, kubeConfig: kc, config: cfg, cgroups, agentNs: native.nsIds('self'), disks, policyNetwork: (names) => governingPolicy(policies.list(), names)?.spec.network },
    status,
    events,
    deleter,
    clock,
    logger,
    admission,
    metrics: agentMetrics,
    isolationPlan: (w, plan, base) => {
      const roots = w.spec.roots;
      const governing = governingPolicy(policies.list(), roots);
      const view = { ...w.spec.isolation, roots, network: plan.network.policy, base };
      const envelope = w.spec.isolation?.waiver;
      const world = { namespace: w.metadata.namespace ?? '', name: w.metadata.name ?? '', uid: w.metadata.uid ?? '' };
      const lowers = plan.spec.roots.map((r) => ({ root: r.name, rootKey: r.rootKey, path: lowerTop(layerPaths(plan.spec.paths, r.rootKey)) }));
      const producers = worldProducers({ kubeConfig: kc, store, world, network: plan.network.policy, base, lowers });
      const ref = `worlds/${world.namespace}/${world.name}`;
      // Signed only when the observation is about the base the plan forked (else the World is refused anyway).
      const attest = (observation: IsolationObservation, decision: IsolationDecision): Attestations | undefined => {
        if (observation.subject !== baseSubject(base)) return undefined;
        // Both stored together: one directory fsync for the two, before the go-ahead.
        const [signedObservation, signedDecision] = statements.signAll([
          { subject: worldBaseSubject(ref, base), predicateType: PREDICATE_TYPES.isolationObservation, predicate: observation },
          { subject: observationSubject(ref, observation), predicateType: PREDICATE_TYPES.isolationDecision, predicate: decision },
        ]);
        return signedObservation && signedDecision ? { observation: signedObservation, decision: signedDecision } : undefined;
      };
      return { policy: agentPolicyRecord(governing, view), request: agentRequestRecord(view), producers, attest, ...(envelope !== undefined ? { waiver: (decision: IsolationDecision) => waivers.spend(envelope, world, decision) } : {}) };
    },
    requeue: (key) => wake.runner?.enqueue(key),
  });
  // Owners edit their Roots through the host path (store/owner-view.ts); what they write becomes PRIME's next
  // generation, and the Root's status follows (OwnerEditsPublished=False names an edit that cannot be).
  const ownerEdits = new OwnerEditSync(store, {
    onPublished: (p) => {
      if (p.generation !== undefined) {
        logger.info('published an owner edit', { ...p });
        agentMetrics.ownerEdit('PUBLISHED');
      }
      rootRunner.enqueue(p.root);
    },
    onError: (root, e) => {
      const code = e instanceof Refusal ? e.code : 'OWNER_EDIT_FAILED';
      logger.warn('could not publish an owner edit; tried again', { root, code, error: e instanceof Error ? e.message : String(e) });
      agentMetrics.ownerEdit(code);
      rootRunner.enqueue(root);
    },
  });
  // PRIME's upkeep in the background (issue 11), after each collapse or adoption and for every Root at start:
  // its stack is compacted off the collapse's path once it is deep, or else PRIME is measured ahead of the next collapse.
  const compactor = enableBackgroundCompaction(store, {
    atDepth: cfg.compactAtDepth,
    onOutcome: (root, o) => {
      if (o.outcome === 'skipped') return;
      if (o.outcome === 'measure-failed') return logger.warn('could not measure PRIME in the background; the next collapse walks it', { root, error: o.error });
      if (o.outcome === 'compacted') logger.info('compacted a root\'s stack in the background', { root, generation: o.generationId, depth: o.depth, linked: o.linked, ms: o.ms });
      else logger.warn('a background compaction did not publish', { root, ...o });
      agentMetrics.compaction(o.outcome, o.outcome === 'compacted' ? (o.ms.build + o.ms.walk + (Number.isFinite(o.ms.remeasure) ? o.ms.remeasure : 0)) / 1000 : undefined);
    },
    onBacklog: (n) => agentMetrics.backlog(n),
  });
  const rootRunner = new ControllerRunner({ kind: 'NodeRoot', reconcile: makeNodeRootReconciler({ informer: roots, store, status, events, clock, nodeName: cfg.nodeName, logger, finalizers: rootFinalizers(kc), worlds: nodeWorlds, ownerEditProblem: (name) => ownerEdits.problem(name), afterAdopt: (name) => compactor.request(name) }), workers: 2, metrics, logger });
  const worldRunner = new ControllerRunner({ kind: 'NodeWorld', reconcile: nodeWorlds.reconcile, workers: 4, metrics, logger });
  wake.runner = worldRunner;
  wireInformerEvents(roots, worlds, rootRunner, worldRunner, agentMetrics);

  let ready = false;
  const server = await startHttpServer({ host: cfg.metricsHost, port: cfg.metricsPort, registry, ready: () => ready, logger });
  logger.info('serving health and metrics', { host: cfg.metricsHost, port: server.port });
  // The view server (a World's log and diff, for the controller alone), advertised on the heartbeat Lease.
  const view = cfg.view ? await startViewServer({ host: cfg.view.host, port: cfg.view.port, tls: readTlsDir(cfg.view.linkTlsDir, '--link-tls-dir'), worlds, store, execs: new WorldExecs({ store, status: new StatusWriter(kc, EXEC_FIELD_MANAGER, logger), events, now: () => clock.now(), logger }), logger }) : undefined;
  const viewAddress = cfg.view && view ? formatHostPort({ host: cfg.view.advertiseHost, port: cfg.view.advertisePort ?? view.port }) : undefined;
  const heartbeat = new Heartbeat({ kubeConfig: kc, namespace: cfg.namespace, nodeName: cfg.nodeName, identity: `${cfg.nodeName}-${process.pid}`, clock, logger, ...(viewAddress ? { annotations: () => ({ [VIEW_ADDRESS_ANNOTATION]: viewAddress }) } : {}) });

  // Collapse (issue 5): run this node's Collapses once, with receipts in <store>/receipts/ledger.jsonl.
  const collapses = startNodeCollapses({ kubeConfig: kc, store, worlds, roots: (name) => roots.get(name), policies, status, refusals, events, clock, nodeName: cfg.nodeName, logger, metrics, requeueRoot: (name) => rootRunner.enqueue(name), requeueWorld: (key) => worldRunner.enqueue(key), agentMetrics, checkResources: () => admission.checkResources(), grants, grantRevoked: (id) => grantRevoked(cfg.trustPolicy, id), statements, controllerGrants, progressHoldMs: cfg.collapseStatusHoldMs, ...(cfg.receiptsExport ? { receiptsExport: cfg.receiptsExport } : {}) });
  for (const r of listRoots(store.db)) if (r.state === 'Ready') compactor.request(r.name);
  void collapses.start().catch((err: unknown) => logger.error('collapse reconciler failed to start', { error: (err as Error).message }));
  ownerEdits.start();
  // Receipts: publish the public key as ConfigMap worldline-receipts-<node>, retried in the background, never fatal.
  const receiptsKey = publishReceiptsPublicKey({ kubeConfig: kc, namespace: cfg.namespace, nodeName: cfg.nodeName, keyDir: receiptPaths(store).keyDir, clock, logger });

  onShutdown(async () => {
    logger.info('shutting down');
    ready = false;
    roots.stop();
    worlds.stop();
    policies.stop();
    await rootRunner.stop();
    await worldRunner.stop();
    await collapses.stop(); // Collapse (issue 5)
    await compactor.close();
    await ownerEdits.stop();
    await receiptsKey.stop();
    // Worlds run on under their supervisors; the next agent re-attaches (a rolling upgrade ends none).
    const detached = nodeWorlds.detachAll();
    if (detached.length > 0) logger.info('left running worlds to their supervisors', { worlds: detached });
    disks.close(); // the run disks made ahead and not taken
    await heartbeat.stop();
    await view?.close();
    await events.flush();
    await server.close();
    store.close();
  }, logger, { timeoutMs: 60_000 });

  await Promise.all([roots.start(), worlds.start(), policies.start()]);
  rootRunner.start();
  worldRunner.start();
  // Checks (issue 5): runs the Checks of Worlds bound to this node on their captured candidates. It dies
  // with the process (a Check left Running by a killed agent is not resumed yet).
  const nodeChecks = new NodeChecks({ kubeConfig: kc, nodeName: cfg.nodeName, worlds, policies, rootPath: (name) => roots.get(name)?.spec.path, store, config: cfg, cgroups, agentNs: native.nsIds('self'), admission, status, refusals, events, clock, logger, metrics, agentMetrics, onEvaluated: () => collapses.wakeRebasing(), statements });
  await nodeChecks.start();
  await heartbeat.start();
  ready = true;
  logger.info('node-agent started', { store: store.dir });
}

main().catch((err: unknown) => {
  const e = err as Error;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', component: 'worldline-node-agent', msg: 'fatal', error: e?.message ?? String(err) })}\n`);
  process.exit(1);
});
