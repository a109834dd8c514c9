// Reconciles the Worlds bound to this node. A World runs once: admitted, started in its sandbox,
// supervised, captured (or failed) — each step persisted in the store and applied to status under
// the node-agent's field manager. Deleting a World kills what still runs, removes every mount and
// file it had here, releases its id range and then its finalizer. A World's workload runs under its own
// supervisor and outlives the agent: a new agent re-attaches to each World recorded running with one
// (resumeWorldRun) and finishes it as if it had watched it all along; shutdown detaches, never kills.
import type { KubeConfig } from '@kubernetes/client-node';
import { asRefusal, classifyError } from '../../core/errors.js';
import type { Clock } from '../../kube/clock.js';
import { findCondition } from '../../kube/conditions.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import type { Logger } from '../../kube/logger.js';
import type { ObjectDeleter } from '../../kube/object-deleter.js';
import type { ReconcileResult } from '../../kube/reconcile.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import type { AgentConfig } from '../config.js';
import { NODE_CLEANUP_FINALIZER, refs } from '../api-refs.js';
import type { CgroupReadback } from '../sandbox/cgroup.js';
import type { Store } from '../store/open-store.js';
import { cleanupWorldLeftovers } from './world-cleanup.js';
import type { RunAdmission } from '../admission/admission-authority.js';
import type { AgentMetrics } from '../metrics.js';
import { applyReservation, buildRunSpec, type LaunchContext, type LaunchPlan } from './world-launch.js';
import type { BaseEntry, World } from '../../crds/index.js';
import { worldGate, type GateEvents, type GatePlan } from '../isolation/isolation-gate.js';
import { AGENT_VERSION } from '../version.js';
import { releaseRun, reserveRun, type ReservationDeps } from '../sandbox/run-reservation.js';
import { resumeWorldRun, startWorldRun, type WorldEvent, type WorldRoot, type WorldRun } from './run-world.js';
import { deleteWorldRecord, generationManifest, getWorldRecord, getWorldSupervisor, putWorldRecord, setWorldSupervisor, type WorldState, type WorldSupervisor } from '../store/world-records.js';
import { StoreError } from '../store/store-errors.js';
import { admittedStatus, isolationMessage, refusedStatus, withEvent, withIsolation, withNetworkRefusal, type AgentWorldStatus } from './world-status.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { coalesced, latestWrites, statusSteps } from './status-steps.js';
import { processStartTime } from '../sandbox/supervisor-record.js';
import { reopenAllowlist } from '../network/resume-allowlist.js';
import { closeWorldNetworks } from '../network/world-network.js';

export interface WorldReconcilerDeps {
  informer: Informer<World>;
  rootPath: (name: string) => string | undefined;
  store: Store;
  kubeConfig: KubeConfig;
  config: AgentConfig;
  launch: Omit<LaunchContext, 'rootPaths'>;
  status: StatusWriter;
  events: EventRecorder;
  deleter: ObjectDeleter;
  clock: Clock;
  logger: Logger;
  admission: RunAdmission;
  metrics?: AgentMetrics;
  /** The isolation policy and request for a World's agent stage (from its governing Policy and spec). */
  isolationPlan: (w: World, plan: LaunchPlan, base: { root: string; generation: number; digest: string }[]) => Pick<GatePlan, 'policy' | 'request' | 'waiver' | 'producers'>;
  /** Puts a key back on the work queue now. */
  requeue: (key: string) => void;
}


/** Owned keys of World.status (the node-agent's field set). */
const OWNED_KEYS = ['phase', 'reason', 'message', 'base', 'admission', 'isolation', 'candidate', 'exit', 'networkRefusals'] as const;
const OWNED_CONDITIONS = new Set(['Admitted', 'Isolated', 'Running', 'Captured', 'Collapsed']);

/** The store state a World's status document stands for. */
function stateOf(s: AgentWorldStatus): WorldState {
  return s.phase === 'Captured' ? 'captured' : s.phase === 'Failed' ? 'failed' : s.phase === 'Refused' ? 'refused' : s.phase === 'Collapsed' ? 'collapsed' : 'running';
}

export class NodeWorlds {
  readonly running = new Map<string, WorldRun>();
  /** Worlds waiting for room (uid → key), woken when a reservation is released. */
  private readonly waiting = new Map<string, string>();
  private readonly attempts = new Map<string, number>();
  /** Runs ended from outside (a Root being released: roots/root-reconciler.ts), uid → the code their end reports. */
  private readonly endings = new Map<string, { code: string; message: string }>();
  /** Each World's status writes, one at a time, the newest record each (status-steps.ts). */
  private readonly latest = latestWrites();
  /** Launches holding their World's status writes (uid → the release): see launch(). */
  private readonly launching = new Map<string, () => void>();
  constructor(private readonly d: WorldReconcilerDeps) {}

  private reservations(): ReservationDeps {
    return { admission: this.d.admission, db: this.d.store.db, idBase: this.d.config.idBase, idSlots: this.d.config.idSlots };
  }

  private keyOf(w: World): string {
    return `${w.metadata?.namespace ?? ''}/${w.metadata?.name ?? ''}`;
  }

  /**
   * Applies the agent's whole status document if it differs from what the World shows. The write's result
   * goes into the informer at once, so a reconcile woken before the watch's echo compares against it and
   * does not apply the same document again.
   */
  private async applyStatus(w: World, s: AgentWorldStatus): Promise<void> {
    this.d.informer.observeWrite(await this.d.status.applyOwnedStatus<World>(refs.World, w, s, { keys: OWNED_KEYS, conditionTypes: OWNED_CONDITIONS }));
  }

  private persist(w: World, state: WorldState, s: AgentWorldStatus): void {
    putWorldRecord(this.d.store.db, { uid: w.metadata?.uid ?? '', namespace: w.metadata?.namespace ?? '', name: w.metadata?.name ?? '', state, status: s }, this.d.clock.now());
  }

  /** Records `status` in the store and applies it; a failed API write is logged (the next reconcile re-applies it). */
  private async publish(key: string, w: World, state: WorldState, status: AgentWorldStatus): Promise<void> {
    this.persist(w, state, status);
    await this.write(key, w);
  }

  /** Applies the World's status as the store has it now; a failed API write is logged (the next write or reconcile carries it). */
  private async write(key: string, w: World): Promise<void> {
    try {
      await this.applyRecord(key, w);
    } catch (err) {
      this.d.logger.warn('status write failed; the next reconcile re-applies it', { world: key, error: (err as Error).message });
    }
  }

  /**
   * Applies the store's record of the World, through its one chain of writes (latestWrites): a run's own
   * steps and a reconcile woken by someone else's write never race, and whichever write goes last carries
   * the newest record. Compared against the informer's copy of this World (its uid, not just its name).
   */
  private applyRecord(key: string, w: World): Promise<void> {
    const uid = w.metadata?.uid ?? '';
    if (this.launching.has(uid)) return Promise.resolve(); // its launch writes it (launch())
    return this.latest(uid, async () => {
      const rec = getWorldRecord(this.d.store.db, uid);
      if (!rec) return;
      const cached = this.d.informer.get(key);
      await this.applyStatus(cached?.metadata?.uid === uid ? cached : w, rec.status as AgentWorldStatus);
    });
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const w = this.d.informer.get(key);
    if (!w?.metadata?.uid || w.status?.nodeName !== this.d.config.nodeName) return;
    const uid = w.metadata.uid;
    if (w.metadata.deletionTimestamp) return this.finalize(key, w);

    const rec = getWorldRecord(this.d.store.db, uid);
    if (rec) {
      if (rec.state === 'running' && !this.running.has(uid) && !this.detached) {
        const supervisor = getWorldSupervisor(this.d.store.db, uid);
        if (supervisor) return this.resume(key, w, supervisor);
        // Its workload had not started when the previous agent ended (no supervisor recorded): whatever
        // of it is left is killed and cleaned up.
        await cleanupWorldLeftovers(this.d.store.layout.worlds, uid, this.d.launch.cgroups, { keepOutput: true });
        releaseRun(this.reservations(), uid);
        const s = withEvent(rec.status as AgentWorldStatus, { type: 'failed', code: 'AGENT_RESTARTED', message: 'the node-agent restarted before the world\'s workload started; the world was ended' }, { newNetwork: true, now: this.d.clock.now(), ...(w.metadata.generation !== undefined ? { generation: w.metadata.generation } : {}) });
        this.persist(w, 'failed', s);
        this.d.events.warning(w, 'AGENT_RESTARTED', s.message ?? '');
      }
      await this.applyRecord(key, w);
      return;
    }

    const accepted = findCondition(w.status?.conditions, 'Accepted');
    if (accepted?.status !== 'True') return;
    return this.launch(key, w);
  };

  private async launch(key: string, w: World): Promise<ReconcileResult> {
    const uid = w.metadata?.uid ?? '';
    const now = this.d.clock.now();
    const gen = w.metadata?.generation;
    const refuse = async (code: string, message: string): Promise<void> => {
      const s = refusedStatus(code, message, gen, now);
      this.persist(w, 'refused', s);
      await this.applyStatus(w, s);
      this.d.events.warning(w, code, message);
    };
    let plan: LaunchPlan;
    try {
      plan = await buildRunSpec(w, { ...this.d.launch, rootPaths: this.d.rootPath });
    } catch (err) {
      // A refusal (LaunchRefused, StoreError…) ends the World; anything else (an errno) is retried.
      const failure = classifyError(err);
      if (!failure.terminal) throw err;
      await refuse(failure.code, failure.message);
      return;
    }

    // Admission by the node's one authority, then an id range: the same step a Check takes. The World's
    // Admitted record commits with its reservation, in one transaction.
    const admission = reserveRun(this.reservations(), uid, 'agent', plan.requested, now, (r) => {
      const spec = applyReservation(plan.spec, r);
      const base: BaseEntry[] = spec.roots.map((root) => ({ root: root.name, generation: root.generation, digest: root.digest }));
      const status = admittedStatus(base, gen, now, `${r.message}; id range ${spec.idBase}-${spec.idBase + spec.idCount - 1} on node ${this.d.config.nodeName}`);
      this.persist(w, 'running', status);
      return { spec, base, status };
    });
    if (!admission.ok) {
      if (admission.wait) return this.wait(key, w, admission.code, admission.message);
      await refuse(admission.code, admission.message);
      return;
    }
    this.waiting.delete(uid);
    const { spec, base } = admission.recorded;
    let status = admission.recorded.status;
    // Each change of the World's status is recorded in the store at once, in the order it happens, and
    // written to the API server by the World's chain of writes (applyRecord), one after another, each
    // carrying the newest record; changes made while a write waits to start share it. The run never waits
    // for the API server: a write is not work the World needs done before it goes on (the store is the
    // record; a write that fails is logged, and the next write or reconcile carries it).
    const send = (state: WorldState): void => {
      this.persist(w, state, status);
      void this.write(key, w);
    };
    // The launch holds the World's status writes until its workload runs or it fails (or
    // --launch-status-hold-ms pass, default LAUNCH_HOLD_MS): every change is recorded in the store at
    // once, and one write then carries them all. A launch takes tens of milliseconds; writing Admitted,
    // then each step, then Running cost two or three API writes (and the watch events of each) for states
    // nobody could act on, taken from the CPU the launch needs where they share a machine.
    const admittedMessage = status.message ?? '';
    const release = (): void => {
      if (this.launching.get(uid) !== release) return;
      this.launching.delete(uid);
      clearTimeout(holdTimer);
      this.d.events.normal(w, 'ADMITTED', admittedMessage);
      void this.write(key, w);
    };
    const holdTimer = setTimeout(release, this.d.config.launchStatusHoldMs);
    holdTimer.unref();
    this.launching.set(uid, release);
    if (this.d.config.launchStatusHoldMs === 0) release();

    const iso = this.d.isolationPlan(w, plan, base);
    let cgroup: CgroupReadback | undefined;
    const ctxNow = () => ({ newNetwork: spec.newNetwork, now: this.d.clock.now(), ...(cgroup ? { cgroup } : {}), ...(gen !== undefined ? { generation: gen } : {}) });
    const report = (event: WorldEvent): Promise<void> => {
      const ending = this.endings.get(uid);
      const e: WorldEvent = event.type === 'failed' && ending ? { ...event, ...ending } : event;
      if (e.type === 'cgroup') cgroup = e.readback;
      if (e.type === 'running' && e.supervisor) {
        // Before anything else of this event: a new agent finds the world again from this record.
        const sup: WorldSupervisor = {
          ...e.supervisor,
          wallTimeMs: spec.wallTimeMs,
          idBase: spec.idBase,
          idCount: spec.idCount,
          ...(spec.ephemeralStorageBytes !== undefined ? { ephemeralStorageBytes: spec.ephemeralStorageBytes } : {}),
          roots: spec.roots.map((r) => ({ name: r.name, rootKey: r.rootKey, path: r.path, generation: r.generation, digest: r.digest })),
          // Where its proxy listens (verified by the gate before the go-ahead): a new agent re-opens it there.
          ...(plan.network.policy === 'Allowlist' ? { network: { allow: plan.network.allow, netns: e.observation.ns.net, pid: e.pid, startTime: processStartTime(e.pid) ?? '' } } : {}),
          workload: { pid: e.pid, startTime: processStartTime(e.pid) ?? '', uid: spec.runAsUid, gid: spec.runAsGid, cwd: spec.cwd, env: spec.env, cgroupProcs: e.cgroupProcs },
        };
        // The Running status and its supervisor commit together, in one transaction (the record's upsert
        // keeps the supervisor column; the update then fills it).
        this.d.store.db.transaction(() => {
          status = withEvent(status, e, ctxNow());
          this.persist(w, 'running', status);
          setWorldSupervisor(this.d.store.db, uid, sup);
        })();
        release();
        void this.write(key, w);
        return Promise.resolve();
      }
      status = withEvent(status, e, ctxNow());
      if (e.type === 'failed' || e.type === 'exited' || e.type === 'captured') release();
      // The cgroup's and the disk's readbacks are recorded with the next change, the isolation decision
      // (or the failure) just before the go-ahead: one store commit, one fsync, instead of three.
      if (e.type === 'cgroup' || e.type === 'disk') return Promise.resolve();
      send(e.type === 'captured' ? (status.phase === 'Captured' ? 'captured' : 'failed') : e.type === 'failed' ? 'failed' : 'running');
      if (e.type === 'captured') this.d.events.normal(w, status.phase ?? 'Captured', status.message ?? '');
      if (e.type === 'failed') this.d.events.warning(w, e.code, e.message);
      return Promise.resolve();
    };
    // Network refusals arrive in bursts: collected at once, written at most once a second.
    const refusalWrites = coalesced(() => send(stateOf(status)));
    const events: GateEvents = {
      isolation: (e) => {
        status = withIsolation(status, e, ctxNow());
        send(stateOf(status));
        if (e.decision.outcome !== 'reported-sufficient') this.d.events.warning(w, e.waiver ? 'IsolationWaived' : (e.waiverRefused?.code ?? 'ISOLATION_INSUFFICIENT'), isolationMessage(e));
        return Promise.resolve();
      },
      networkRefusal: (r) => {
        status = withNetworkRefusal(status, r);
        refusalWrites.poke();
      },
    };
    const run = startWorldRun({ ...spec, ...(this.d.metrics ? { timers: this.d.metrics } : {}), gate: (cg) => worldGate({ ...iso, rootPaths: spec.roots.map((r) => r.path), credentialPaths: plan.credentialPaths, envNames: plan.envNames, network: plan.network, agentNs: spec.agentNs, worldUid: uid, wallTimeArmed: true, outputLimitArmed: true, backendVersion: AGENT_VERSION }, cg, events, this.d.metrics, this.d.logger) }, report);
    this.track(key, uid, run, () => {
      refusalWrites.cancel();
      release();
    });
    return;
  }

  /** Keeps a run in `running` until it ends, then gives back its reservation and wakes the waiting. */
  private track(key: string, uid: string, run: WorldRun, ended: () => void): void {
    this.running.set(uid, run);
    // Nothing one World does may end the agent: a run that ends in an error is logged, never rethrown.
    void run.finished
      .catch((err: unknown) => this.d.logger.error('world run ended with an error', { world: key, error: (err as Error).message }))
      .then(() => {
        ended();
        if (this.detached) return; // the agent is leaving; the next one owns what is left
        this.running.delete(uid);
        releaseRun(this.reservations(), uid);
        // A world that waits for room is looked at again as soon as this one's reservation is gone.
        for (const k of this.waiting.values()) this.d.requeue(k);
      })
      .catch((err: unknown) => this.d.logger.error('releasing a finished world failed', { world: key, error: (err as Error).message }));
  }

  /**
   * A World a previous agent started: re-attach to its supervisor and finish it (capture or fail with its
   * real exit), keeping its reservation and id range until then. A supervisor gone without an exit record
   * ends it SUPERVISOR_LOST. An Allowlist World gets its proxy again, in the network namespace recorded at
   * start and nowhere else (network/resume-allowlist.ts); when that cannot be done it runs on without one
   * (loopback only) and status and a Warning event say why (NETWORK_NAMESPACE_MISMATCH).
   */
  private resume(key: string, w: World, sup: WorldSupervisor, opts: { network: boolean } = { network: true }): ReconcileResult {
    const uid = w.metadata?.uid ?? '';
    const gen = w.metadata?.generation;
    const { db } = this.d.store;
    let status = getWorldRecord(db, uid)!.status as AgentWorldStatus;
    const publish = (state: WorldState): Promise<void> => this.publish(key, w, state, status);
    // None after the agent detached (the next agent owns the world).
    const step = statusSteps(key, this.d.logger, () => this.detached);
    const report = (event: WorldEvent): Promise<void> => {
      const ending = this.endings.get(uid); // ended from outside (endOnRoot): its end reports that code
      const e: WorldEvent = event.type === 'failed' && ending ? { ...event, ...ending } : event;
      return step(async () => {
        status = withEvent(status, e, { newNetwork: true, now: this.d.clock.now(), ...(gen !== undefined ? { generation: gen } : {}) });
        const state: WorldState = e.type === 'captured' ? (status.phase === 'Captured' ? 'captured' : 'failed') : e.type === 'failed' ? 'failed' : 'running';
        await publish(state);
        if (e.type === 'captured') this.d.events.normal(w, status.phase ?? 'Captured', status.message ?? '');
        if (e.type === 'failed') this.d.events.warning(w, e.code, e.message);
      });
    };
    // Network refusals of the re-opened proxy, collected as at launch and written at most once a second.
    const refusalWrites = coalesced(() => void step(() => publish(stateOf(status))).catch(() => undefined)); // logged by step
    const onRefusal = (r: { host: string; port: number; time: string }): void => {
      this.d.metrics?.networkRefusals.inc();
      status = withNetworkRefusal(status, r);
      refusalWrites.poke();
    };
    const allowlist = opts.network && (w.spec.network?.policy === 'Allowlist' || sup.network !== undefined);
    const network = async (): Promise<{ close(): Promise<void> } | undefined> => {
      try {
        const got = await reopenAllowlist(sup.network, onRefusal, this.d.logger);
        if (got.state === 'ended') return undefined;
        if (this.detached) {
          await got.network.close();
          return undefined;
        }
        this.d.logger.info('re-opened the Allowlist proxy in a world\'s network namespace', { world: key, netns: got.network.netns });
        return got.network;
      } catch (err) {
        const { code, message } = asRefusal(err, 'NETWORK_NAMESPACE_MISMATCH');
        const said = `${message}; the world runs on with loopback only (no proxy: it fails closed)`;
        this.d.logger.warn('an Allowlist world\'s proxy was not re-opened', { world: key, code, error: message });
        await step(async () => {
          if (stateOf(status) !== 'running') return; // it ended meanwhile: its end says what matters
          const observation = status.isolation?.observation ?? {};
          const notes = [...((observation.notes as string[] | undefined) ?? []), `${code}: ${said}`].slice(-16);
          status = { ...status, reason: code, message: said, isolation: { ...status.isolation, observation: { ...observation, notes } } };
          await publish('running');
          this.d.events.warning(w, code, said);
        }).catch(() => undefined); // logged by step
        return undefined;
      }
    };
    const roots: WorldRoot[] = sup.roots.map((r) => ({
      ...r,
      payload: '',
      manifest: () => {
        const m = generationManifest(db, r.rootKey, r.generation);
        if (!m) throw new StoreError('LIVE_MAPPING_BROKEN', `generation ${r.generation} of Root ${r.name} has no manifest`);
        return m;
      },
    }));
    const run = resumeWorldRun(
      {
        uid,
        paths: worldPaths(this.d.store.layout.worlds, uid),
        roots,
        idBase: sup.idBase,
        idCount: sup.idCount,
        candidatesDir: this.d.store.layout.candidates,
        cgroups: this.d.launch.cgroups,
        wallTimeMs: sup.wallTimeMs,
        ...(sup.ephemeralStorageBytes !== undefined ? { ephemeralStorageBytes: sup.ephemeralStorageBytes } : {}),
        ...(this.d.metrics ? { timers: this.d.metrics } : {}),
      },
      { pid: sup.pid, startTime: sup.startTime, startedAt: sup.startedAt },
      report,
      allowlist ? network : undefined,
    );
    this.d.logger.info(run.alive ? 're-attached to a running world\'s supervisor' : 'a world\'s supervisor ended while no agent ran; finishing the world from its exit record', { world: key, supervisorPid: sup.pid });
    this.track(key, uid, run, () => refusalWrites.cancel());
    return;
  }

  /** Answers "not now": Pending with the admission outcome, retried with growing delay until it fits or is deleted. */
  private async wait(key: string, w: World, code: string, message: string): Promise<ReconcileResult> {
    const uid = w.metadata?.uid ?? '';
    const gen = w.metadata?.generation;
    this.waiting.set(uid, key);
    const s: AgentWorldStatus = { ...refusedStatus(code, message, gen, this.d.clock.now()), phase: 'Pending' };
    const before = w.status?.reason;
    await this.applyStatus(w, s);
    if (before !== code) this.d.events.warning(w, code, message);
    const tries = (this.attempts.get(uid) ?? 0) + 1;
    this.attempts.set(uid, tries);
    return { requeueAfterMs: Math.min(30_000, 500 * 2 ** Math.min(tries, 6)) };
  }

  private async finalize(key: string, w: World): Promise<ReconcileResult> {
    const uid = w.metadata?.uid ?? '';
    // A World a previous agent started, deleted before this one re-attached: re-attach first, so its
    // supervisor is ended with it and writes nothing after the cleanup.
    const supervisor = this.running.has(uid) || this.detached || getWorldRecord(this.d.store.db, uid)?.state !== 'running' ? undefined : getWorldSupervisor(this.d.store.db, uid);
    if (supervisor) this.resume(key, w, supervisor, { network: false });
    const run = this.running.get(uid);
    if (run) {
      run.kill('Signaled');
      await run.finished.catch(() => undefined); // logged where the run was started
    }
    await cleanupWorldLeftovers(this.d.store.layout.worlds, uid, this.d.launch.cgroups);
    releaseRun(this.reservations(), uid);
    this.waiting.delete(uid);
    this.attempts.delete(uid);
    deleteWorldRecord(this.d.store.db, uid);
    if ((w.metadata?.finalizers ?? []).includes(NODE_CLEANUP_FINALIZER)) {
      await this.d.deleter.removeFinalizer(refs.World, key, NODE_CLEANUP_FINALIZER);
      this.d.logger.info('world cleaned up on node; finalizer released', { world: key, dir: worldPaths(this.d.store.layout.worlds, uid).dir });
    }
    return;
  }

  /** Ends the running Worlds that fork `root` with `code` (their Root is being released); the keys of those still running. */
  endOnRoot(root: string, code: string, message: string): string[] {
    const left: string[] = [];
    for (const w of this.d.informer.list()) {
      const uid = w.metadata?.uid;
      const run = uid ? this.running.get(uid) : undefined;
      if (!uid || !run || !w.spec.roots.includes(root)) continue;
      if (!this.endings.has(uid)) {
        this.endings.set(uid, { code, message });
        run.kill('Signaled');
        void run.finished.catch(() => undefined).then(() => this.endings.delete(uid));
      }
      left.push(this.keyOf(w));
    }
    return left;
  }

  private detached = false;

  /**
   * Agent shutdown: leaves every running world to its supervisor (the next agent re-attaches) and stops
   * writing about them. Worlds keep running; nothing is killed.
   */
  detachAll(): string[] {
    this.detached = true;
    // Every Allowlist proxy's listener is closed now, so the next agent binds 127.0.0.1:3128 in each world
    // again (until then a world has loopback only: it fails closed).
    const proxies = closeWorldNetworks();
    if (proxies.proxies > 0) this.d.logger.info('closed the Allowlist proxies of the worlds left running', { proxies: proxies.proxies });
    proxies.closed.catch((err: unknown) => this.d.logger.error('closing the Allowlist proxies failed', { error: (err as Error).message }));
    return [...this.running.keys()];
  }

  /** Kills every running world; their records say what happened. */
  async stopAll(): Promise<void> {
    for (const run of this.running.values()) run.kill('Signaled');
    await Promise.all([...this.running.values()].map((r) => r.finished.catch(() => undefined)));
  }
}
