// One world's life on the node, start to end: cgroup with limits read back, root filesystem, the
// sandboxed workload with its observation checked, supervision, capture of the candidate, teardown.
// Each step reports through `report`; any failure tears down what exists and ends in Failed.
import { mkdirSync } from 'node:fs';
import { asRefusal } from '../../core/errors.js';
import type { Manifest } from '../../core/manifest.js';
import type { SandboxObservation } from '../../native/index.js';
import { WorldCgroup, type CgroupReadback } from '../sandbox/cgroup.js';
import type { SupervisorRef } from '../sandbox/supervisor-record.js';
import { diskBytes, mountRunDisk, runDiskUsage, type DiskReadback, type DiskUsage } from '../sandbox/disk-image.js';
import type { RunDiskPool } from '../sandbox/disk-pool.js';
import { baseIndexOf } from '../store/base-index.js';
import { captureLayer } from '../store/capture-layer.js';
import { storeCandidate, type Candidate, type RootChange } from '../store/candidates.js';
import { rootChanges, summarizeChanges, type ChangeSummary, type RootChangeSummary } from '../store/change-summary.js';
import { unmountRootfs } from '../sandbox/rootfs.js';
import { attachWorkload, ObservationRefused, type ExitReason, type RunningWorkload, type WorkloadEnd } from '../sandbox/supervise.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';
import { layerPaths, type WorldPaths } from '../sandbox/run-paths.js';
import type { AgentMetrics } from '../metrics.js';
import { runCgroup, runRootfs, startRun, type SupervisedRunSpec } from '../sandbox/supervised-run.js';

export interface WorldRoot {
  name: string;
  rootKey: string;
  /** Where the Root appears inside the world. */
  path: string;
  /** PRIME's payload directory at fork time (read through the store). */
  payload: string;
  /** Its layers, topmost first (store/generation-stack.ts); absent: the payload is one directory. */
  layers?: string[];
  generation: number;
  digest: string;
  /**
   * The base generation's manifest. From the store (generationManifest) it is lazy: capture reads it
   * through baseIndexOf, an index over the generation's rows, and never parses it whole.
   */
  manifest: () => Manifest;
}

export interface WorldRunSpec extends SupervisedRunSpec {
  uid: string;
  paths: WorldPaths;
  roots: WorldRoot[];
  credential?: { path: string; value: Buffer };
  candidatesDir: string;
  /** Times the fork (the copy-on-write view) and the capture into the agent's histograms. */
  timers?: Pick<AgentMetrics, 'timeFork' | 'timeCapture'>;
  /** Run disks made ahead: the run takes one of its size when one is ready, and one is made for the next run once its workload runs. */
  disks?: Pick<RunDiskPool, 'take' | 'refill'>;
}

export type WorldEvent =
  | { type: 'cgroup'; readback: CgroupReadback }
  | { type: 'disk'; readback: DiskReadback }
  /** cgroupProcs: the cgroup.procs files of the run's cgroup (what an exec joins). */
  | { type: 'running'; observation: SandboxObservation; pid: number; supervisor?: SupervisorRef; cgroupProcs: string[] }
  | { type: 'exited'; end: WorkloadEnd }
  | { type: 'captured'; candidate: Candidate; summary: ChangeSummary; end: WorkloadEnd; disk?: DiskUsage }
  | { type: 'failed'; code: string; message: string; end?: WorkloadEnd; observation?: SandboxObservation };

export interface WorldRun {
  /**
   * Settles after the final event (captured or failed) and teardown. It rejects only when reporting or
   * teardown itself failed; the caller must handle that (log it), never let it go unhandled.
   */
  finished: Promise<void>;
  /** Kills the world now; the run then ends with the given reason. */
  kill(reason: ExitReason): void;
}

export function startWorldRun(spec: WorldRunSpec, report: (e: WorldEvent) => Promise<void>): WorldRun {
  let workload: RunningWorkload | undefined;
  let killRequested: ExitReason | undefined;
  const finished = (async () => {
    let cgroup: WorldCgroup | undefined;
    let end: WorkloadEnd | undefined;
    let observation: SandboxObservation | undefined;
    try {
      mkdirSync(spec.paths.dir, { recursive: true, mode: 0o711 });
      const made = runCgroup(spec, `world-${spec.uid}`);
      cgroup = made.cgroup;
      await report({ type: 'cgroup', readback: made.readback });
      // The upper layers' own filesystem of the reserved size (disk-image.ts), read back before anything runs.
      const diskSize = spec.ephemeralStorageBytes !== undefined ? diskBytes(spec.ephemeralStorageBytes) : undefined;
      if (diskSize !== undefined) await report({ type: 'disk', readback: spec.disks?.take(spec.paths, diskSize) ?? (await mountRunDisk(spec.paths, diskSize)) });
      const forked = spec.timers?.timeFork();
      const layers = runRootfs(spec, spec.paths, spec.roots.map((r) => ({ rootKey: r.rootKey, payload: r.payload, ...(r.layers ? { layers: r.layers } : {}), path: r.path })), spec.credential ? { credential: spec.credential } : {});
      forked?.();
      workload = await startRun(spec, spec.paths, cgroup, made.readback, spec.paths.output);
      observation = workload.observation;
      if (killRequested) workload.kill(killRequested);
      // What the agent does next (the Running record and its write, the next run's disk) waits for the
      // workload's execve: it would otherwise take the node's CPU from the workload's start.
      await workload.started;
      await report({ type: 'running', observation, pid: workload.pid, supervisor: workload.supervisor, cgroupProcs: cgroup.procsFiles() });
      // The next run of this size finds its disk made (disk-pool.ts: made while this one's workload runs).
      if (diskSize !== undefined) spec.disks?.refill(diskSize);
      end = await workload.done;
      await finishRun(spec, end, layers.map((l) => l.upper), report, observation);
    } catch (err) {
      // A run is not retried (its workload may have run): a refusal keeps its code, anything else (an
      // errno such as EBUSY) ends the World as WORLD_SETUP_FAILED with the errno in the message.
      const { code, message } = asRefusal(err, 'WORLD_SETUP_FAILED');
      await report({ type: 'failed', code, message, ...(end ? { end } : {}), ...(err instanceof ObservationRefused && err.observation ? { observation: err.observation } : observation ? { observation } : {}) });
    } finally {
      // The run's outcome is already reported; a teardown failure rejects `finished` for the caller to log.
      throwTeardownErrors(await teardownRun(spec.paths, cgroup, () => workload?.kill()));
    }
  })();
  return {
    finished,
    kill(reason) {
      killRequested = reason;
      workload?.kill(reason);
    },
  };
}

/** After the workload's end: report it, then capture the upper layers (`uppers`, one per root) or fail by its reason. */
async function finishRun(spec: ResumeSpec, end: WorkloadEnd, uppers: string[], report: (e: WorldEvent) => Promise<void>, observation?: SandboxObservation): Promise<void> {
  await report({ type: 'exited', end });
  if (end.reason !== 'Completed') {
    await report({ type: 'failed', code: endCode(end.reason), message: describeEnd(end), end, ...(observation ? { observation } : {}) });
    return;
  }
  // The world is over: unmount its view, then read the upper layers from the store's side.
  unmountRootfs(spec.paths);
  const disk = spec.ephemeralStorageBytes !== undefined ? runDiskUsage(spec.paths) : undefined;
  const captured = spec.timers?.timeCapture();
  const changes: RootChange[] = [];
  const summaries: RootChangeSummary[] = [];
  for (const [i, r] of spec.roots.entries()) {
    const upper = uppers[i]!;
    // The base is read through its index (O(log N) per path the upper layer touches), never whole.
    const base = baseIndexOf(r.manifest());
    const capture = await captureLayer(upper, base, spec.idBase, spec.idCount);
    changes.push({ root: r.name, rootKey: r.rootKey, baseGeneration: r.generation, baseDigest: r.digest, capture, upperDir: upper });
    summaries.push(rootChanges(r.name, capture.upsert, capture.deleted, (p) => base.get(p)));
  }
  const candidate = await storeCandidate(spec.candidatesDir, changes);
  captured?.();
  await report({ type: 'captured', candidate, summary: summarizeChanges(summaries), end, ...(disk ? { disk } : {}) });
}

/** What a new agent knows of a world a previous agent started: enough to wait for it and capture it. */
export type ResumeSpec = Pick<WorldRunSpec, 'uid' | 'paths' | 'roots' | 'idBase' | 'idCount' | 'candidatesDir' | 'ephemeralStorageBytes' | 'timers' | 'cgroups' | 'wallTimeMs'>;

/** What a resumed world serves while it runs (an Allowlist World's proxy): opened once re-attached, closed at its end. */
export type ResumeNetwork = () => Promise<{ close(): Promise<void> } | undefined>;

/**
 * Re-attaches to a world whose workload outlived the agent that started it (supervise.ts attachWorkload):
 * waits for its supervisor, then captures or fails exactly as startWorldRun would have, and tears down.
 * A supervisor gone without an exit record ends the world SUPERVISOR_LOST. `network`, when given, is
 * opened if the supervisor still runs and closed when the world has ended; it reports its own failures
 * (a world whose proxy cannot be re-opened runs on without it) and must not reject.
 */
export function resumeWorldRun(spec: ResumeSpec, supervisor: SupervisorRef, report: (e: WorldEvent) => Promise<void>, network?: ResumeNetwork): WorldRun & { alive: boolean } {
  const cgroup = WorldCgroup.attach(spec.cgroups, 'worldline', `world-${spec.uid}`);
  let served: Promise<{ close(): Promise<void> } | undefined> = Promise.resolve(undefined);
  const attached = attachWorkload({ supervisor, cgroup, outputFile: spec.paths.output, wallTimeMs: spec.wallTimeMs, onEnd: async () => (await served)?.close() });
  if (attached.alive && network) served = network().catch(() => undefined);
  const finished = (async () => {
    let end: WorkloadEnd | undefined;
    try {
      end = await attached.done;
      await finishRun(spec, end, spec.roots.map((r) => layerPaths(spec.paths, r.rootKey).upper), report);
    } catch (err) {
      const { code, message } = asRefusal(err, 'WORLD_SETUP_FAILED');
      await report({ type: 'failed', code, message, ...(end ? { end } : {}) });
    } finally {
      throwTeardownErrors(await teardownRun(spec.paths, cgroup, () => attached.kill()));
    }
  })();
  return { alive: attached.alive, finished, kill: (reason) => attached.kill(reason) };
}

/**
 * status.reason holds UPPER_SNAKE outcome codes only (the CRD rejects anything else, which would leave the
 * World stuck in Running); status.exit.reason keeps the CamelCase ExitReason.
 */
export function endCode(reason: Exclude<ExitReason, 'Completed'>): string {
  switch (reason) {
    case 'WallTimeExceeded':
      return 'WALL_TIME_EXCEEDED';
    case 'OutputLimitExceeded':
      return 'OUTPUT_LIMIT_EXCEEDED';
    case 'OOMKilled':
      return 'OOM_KILLED';
    case 'Signaled':
      return 'AGENT_SIGNALED';
  }
}

function describeEnd(e: WorkloadEnd): string {
  switch (e.reason) {
    case 'WallTimeExceeded':
      return 'the wall-time limit expired; every process of the world was killed';
    case 'OutputLimitExceeded':
      return `the world wrote more than its output limit (${e.outputBytes} bytes seen); every process was killed`;
    case 'OOMKilled':
      return 'the kernel killed the world for exceeding its memory limit';
    case 'Signaled':
      return `the agent was killed by ${e.signal ?? 'a signal'}`;
    default:
      return `the agent exited with status ${String(e.code)}`;
  }
}
