// Starts a world's workload in the sandbox and supervises it to the end: the observation frame (its
// identity, namespaces and the exact environment handed to execve) is checked before anything of the
// workload runs, output is copied to a file up to a limit, wall time
// is bounded, and the whole tree is killed at the end (the workload is pid 1 of its own PID
// namespace, so its death takes every process of the world with it).
//
// The workload's parent is its own supervisor (native/src/shim/shim.c), not the agent: the shim copies
// the output up to the limit, enforces the wall time too, and writes the workload's real end to an exit
// record. The agent waits for the shim; a new agent re-attaches to a shim it did not start
// (attachWorkload), so a World outlives an agent restart.
import { closeSync, rmSync } from 'node:fs';
import * as native from '../../native/index.js';
import { Refusal } from '../../core/errors.js';
import type { SandboxExit, SandboxObservation, SandboxSpawnOptions } from '../../native/index.js';
import type { WorldCgroup } from './cgroup.js';
import { exitFileFor, openRecordedProcess, processStartTime, readSupervisorExit, type SupervisorRef } from './supervisor-record.js';
import { observationHooks } from './observation-hooks.js';
import { agentMountTemplate } from './mount-template.js';

export type ExitReason = 'Completed' | 'WallTimeExceeded' | 'OutputLimitExceeded' | 'OOMKilled' | 'Signaled';

/** What startWorkload spawns: the addon's spawn options (less hostname and the fds it fills in), plus supervision. */
export interface WorkloadSpec extends Pick<SandboxSpawnOptions, 'rootfs' | 'argv' | 'env' | 'cwd' | 'uid' | 'gid' | 'uidMap' | 'gidMap' | 'newNetwork' | 'userns' | 'probePaths'> {
  cgroup: WorldCgroup;
  outputFile: string;
  /** cgroup.procs files of the supervisors' own cgroup (supervisor-cgroup.ts). */
  supervisorCgroupProcs: string[];
  outputLimitBytes: number;
  wallTimeMs: number;
}

export interface WorkloadEnd {
  code: number | null;
  signal: string | null;
  reason: ExitReason;
  outputBytes: number;
}

/** The sandbox's observation frame does not show the sandbox that was asked for. */
export class ObservationRefused extends Refusal {
  declare readonly code: 'ISOLATION_OBSERVATION_INVALID';
  constructor(readonly problems: string[], readonly observation?: SandboxObservation) {
    super('ISOLATION_OBSERVATION_INVALID', `the sandbox's observation frame is wrong: ${problems.join('; ')}`);
    this.name = 'ObservationRefused';
  }
}

/** Steps the caller runs at fixed points of the start: refusing (throwing) stops the world before it runs. */
export interface StartHooks {
  /** After the frame checked out, before the workload may exec: attach the network, decide isolation. */
  beforeGo?: (ctx: { pid: number; pidfd: number; observation: SandboxObservation; problems: string[] }) => Promise<void>;
  /** When the world has ended (every path): release what beforeGo attached. */
  onEnd?: () => Promise<void>;
}

export class StartRefused extends Refusal {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'StartRefused';
  }
}

/** The world's supervisor ended without leaving the workload's exit record (killed, or the node lost it). */
export class SupervisorLost extends Refusal {
  constructor(message: string) {
    super('SUPERVISOR_LOST', message);
    this.name = 'SupervisorLost';
  }
}

export interface RunningWorkload {
  pid: number;
  observation: SandboxObservation;
  /** The world's supervisor: what a later agent needs to find it again. */
  supervisor: SupervisorRef;
  /** Resolves when the workload has replaced the sandbox's child (its execve returned), or could not (never rejects). */
  started: Promise<void>;
  /** Resolves when the workload and every process of its world have ended. */
  done: Promise<WorkloadEnd>;
  /** Kills the whole world now (idempotent). */
  kill(reason?: ExitReason): void;
}

export async function startWorkload(spec: WorkloadSpec, agentNs: Record<native.NsName, string>, hooks: StartHooks = {}): Promise<RunningWorkload> {
  let exited!: (e: SandboxExit) => void;
  const exit = new Promise<SandboxExit>((r) => (exited = r));
  const exitFile = exitFileFor(spec.outputFile);
  rmSync(exitFile, { force: true }); // a record left by an earlier run of the same name is not this run's
  const handle = native.spawnSupervisedSandbox(
    {
      rootfs: spec.rootfs,
      argv: spec.argv,
      env: spec.env,
      cwd: spec.cwd,
      uid: spec.uid,
      gid: spec.gid,
      uidMap: spec.uidMap,
      gidMap: spec.gidMap,
      hostname: 'world',
      newNetwork: spec.newNetwork,
      cgroupProcs: spec.cgroup.procsFiles(),
      ...(spec.userns !== undefined ? { userns: spec.userns } : {}),
      mountTemplate: agentMountTemplate(spec.rootfs),
      ...(spec.probePaths !== undefined ? { probePaths: spec.probePaths } : {}),
    },
    (e) => exited(e),
    { path: native.shimPath(), argv: ['worldline-shim', spec.outputFile, String(spec.outputLimitBytes), String(spec.wallTimeMs), exitFile], cgroupProcs: spec.supervisorCgroupProcs },
  );
  const supervisorPid = handle.supervisorPid ?? 0;
  const supervisorStart = processStartTime(supervisorPid) ?? '';
  const channel = new native.SandboxChannel(handle);
  let killedFor: ExitReason | undefined;
  // Through the pidfd while it is open (never by pid number: once the world's pid 1 is reaped, an
  // unrelated process may hold that number); after the world has ended, only its cgroup is left to empty.
  let pidfdLive = true;
  const kill = (reason?: ExitReason): void => {
    if (reason && !killedFor) killedFor = reason;
    try {
      if (pidfdLive) native.pidfdSendSignal(handle.pidfd, 'SIGKILL');
    } catch {
      /* the cgroup kill below still runs */
    }
    spec.cgroup.killAll();
  };
  let observation: SandboxObservation;
  try {
    observation = observationHooks().received(await channel.observe());
    const problems = native.observationProblems(observation, { uid: spec.uid, gid: spec.gid, uidMap: spec.uidMap, gidMap: spec.gidMap, agentNs, newNetwork: spec.newNetwork, env: spec.env });
    if (problems.length > 0) {
      channel.abort();
      throw new ObservationRefused(problems, observation);
    }
    if (hooks.beforeGo) {
      try {
        await hooks.beforeGo({ pid: handle.pid, pidfd: handle.pidfd, observation, problems });
      } catch (err) {
        channel.abort();
        throw err;
      }
    }
  } catch (err) {
    kill();
    await exit;
    await hooks.onEnd?.().catch(() => undefined);
    pidfdLive = false;
    closeQuietly(handle.pidfd);
    throw err;
  }

  channel.go();
  const startedAt = new Date().toISOString();
  const timer = setTimeout(() => kill('WallTimeExceeded'), spec.wallTimeMs);
  timer.unref();
  // An execve failure shows as exit status 127 (Completed, code 127); its record is not needed here.
  const startedOk = channel.started().catch(() => undefined);

  const done = (async (): Promise<WorkloadEnd> => {
    const shim = await exit;
    clearTimeout(timer);
    // pid 1 of the world's PID namespace is gone, so the kernel has killed the rest; make sure the cgroup is empty too.
    spec.cgroup.killAll();
    pidfdLive = false;
    closeQuietly(handle.pidfd);
    await startedOk;
    await hooks.onEnd?.().catch(() => undefined);
    return endFromRecord(exitFile, spec.cgroup, killedFor, `the world's supervisor (pid ${supervisorPid}) ended (${shim.signal ?? `status ${String(shim.code)}`}) without writing the workload's exit record`);
  })();
  // Whoever awaits `done` sees its failure; until someone does, a rejection must not count as unhandled
  // (Node ends the process for that, and with it every World on the node).
  done.catch(() => undefined);
  return { pid: handle.pid, observation, supervisor: { pid: supervisorPid, startTime: supervisorStart, startedAt }, started: startedOk, done, kill };
}

/** The workload's end from the shim's exit record: a kill the agent asked for, then OOM, name the reason. */
function endFromRecord(exitFile: string, cgroup: WorldCgroup, killedFor: ExitReason | undefined, lost: string): WorkloadEnd {
  const rec = readSupervisorExit(exitFile);
  if (!rec) throw new SupervisorLost(lost);
  let reason: ExitReason = rec.reason;
  if (killedFor) reason = killedFor;
  else if ((rec.reason === 'Completed' || rec.reason === 'Signaled') && cgroup.oomKilled()) reason = 'OOMKilled';
  return { code: rec.code, signal: rec.signal, reason, outputBytes: rec.outputBytes };
}

/** A world a previous agent started, found again through its supervisor (see supervisor-record.ts). */
export interface AttachedWorkload {
  /** false: the supervisor was gone already (its exit record, if any, says how the workload ended). */
  alive: boolean;
  done: Promise<WorkloadEnd>;
  kill(reason?: ExitReason): void;
}

/**
 * Re-attaches to a world's supervisor: waits for it to end (pidfd poll), with the wall time re-armed from
 * when the workload started, and reads the workload's end from its exit record. A supervisor gone with no
 * record ends the world SUPERVISOR_LOST (done rejects with SupervisorLost).
 */
export function attachWorkload(a: { supervisor: SupervisorRef; cgroup: WorldCgroup; outputFile: string; wallTimeMs: number; onEnd?: () => Promise<void> }): AttachedWorkload {
  const pidfd = openRecordedProcess(a.supervisor);
  let killedFor: ExitReason | undefined;
  const kill = (reason?: ExitReason): void => {
    if (reason && !killedFor) killedFor = reason;
    a.cgroup.killAll();
  };
  const gone = pidfd === undefined ? Promise.resolve() : new Promise<void>((resolve) => native.watchPidfd(pidfd, () => resolve()));
  const left = Date.parse(a.supervisor.startedAt) + a.wallTimeMs - Date.now();
  const timer = setTimeout(() => kill('WallTimeExceeded'), Math.max(0, left));
  timer.unref();
  const done = (async (): Promise<WorkloadEnd> => {
    await gone;
    clearTimeout(timer);
    if (pidfd !== undefined) closeQuietly(pidfd);
    a.cgroup.killAll();
    await a.onEnd?.().catch(() => undefined);
    return endFromRecord(exitFileFor(a.outputFile), a.cgroup, killedFor, `the world's supervisor (pid ${a.supervisor.pid}) is gone and left no exit record; the workload ended with it`);
  })();
  done.catch(() => undefined);
  return { alive: pidfd !== undefined, done, kill };
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* ignore */
  }
}
