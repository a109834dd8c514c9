// Starts a world's workload in the sandbox and supervises it to the end: the observation frame (its
// identity, namespaces and the exact environment handed to execve) is checked before anything of the
// workload runs, output is copied to a file up to a limit, wall time
// is bounded, and the whole tree is killed at the end (the workload is pid 1 of its own PID
// namespace, so its death takes every process of the world with it).
import { closeSync, createWriteStream, type WriteStream } from 'node:fs';
import { Socket } from 'node:net';
import * as native from '../../native/index.js';
import { Refusal } from '../../core/errors.js';
import type { SandboxExit, SandboxObservation, SandboxSpawnOptions } from '../../native/index.js';
import type { WorldCgroup } from './cgroup.js';

export type ExitReason = 'Completed' | 'WallTimeExceeded' | 'OutputLimitExceeded' | 'OOMKilled' | 'Signaled';

/** What startWorkload spawns: the addon's spawn options (less hostname and the fds it fills in), plus supervision. */
export interface WorkloadSpec extends Pick<SandboxSpawnOptions, 'rootfs' | 'argv' | 'env' | 'cwd' | 'uid' | 'gid' | 'uidMap' | 'gidMap' | 'newNetwork'> {
  cgroup: WorldCgroup;
  outputFile: string;
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

export interface RunningWorkload {
  pid: number;
  observation: SandboxObservation;
  /** Resolves when the workload and every process of its world have ended. */
  done: Promise<WorkloadEnd>;
  /** Kills the whole world now (idempotent). */
  kill(reason?: ExitReason): void;
}

/** Pipes one output fd into the shared file, counting bytes against the limit. */
function pump(fd: number, out: WriteStream, counter: { bytes: number }, limit: number, overflow: () => void): Promise<void> {
  return new Promise((resolve) => {
    const sock = new Socket({ fd, readable: true, writable: false });
    sock.on('data', (chunk: Buffer) => {
      const room = limit - counter.bytes;
      if (room > 0) out.write(chunk.subarray(0, room));
      counter.bytes += chunk.length;
      if (counter.bytes > limit) overflow();
    });
    sock.on('close', () => resolve());
    sock.on('error', () => resolve());
  });
}

export async function startWorkload(spec: WorkloadSpec, agentNs: Record<native.NsName, string>, hooks: StartHooks = {}): Promise<RunningWorkload> {
  let exited!: (e: SandboxExit) => void;
  const exit = new Promise<SandboxExit>((r) => (exited = r));
  const handle = native.spawnSandbox(
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
    },
    (e) => exited(e),
  );
  const channel = new native.SandboxChannel(handle);
  let killedFor: ExitReason | undefined;
  const kill = (reason?: ExitReason): void => {
    if (reason && !killedFor) killedFor = reason;
    try {
      process.kill(handle.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    spec.cgroup.killAll();
  };
  let observation: SandboxObservation;
  try {
    observation = await channel.observe();
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
    closeQuietly(handle.pidfd);
    for (const fd of [handle.stdout, handle.stderr]) if (fd !== undefined) closeQuietly(fd);
    throw err;
  }

  const out = createWriteStream(spec.outputFile, { mode: 0o600 });
  const counter = { bytes: 0 };
  const overflow = (): void => kill('OutputLimitExceeded');
  const pumps = [handle.stdout, handle.stderr].filter((fd): fd is number => fd !== undefined).map((fd) => pump(fd, out, counter, spec.outputLimitBytes, overflow));
  channel.go();
  const timer = setTimeout(() => kill('WallTimeExceeded'), spec.wallTimeMs);
  timer.unref();
  // An execve failure shows as exit status 127 (Completed, code 127); its record is not needed here.
  const startedOk = channel.started().catch(() => undefined);

  const done = (async (): Promise<WorkloadEnd> => {
    const e = await exit;
    clearTimeout(timer);
    // pid 1 of the world's PID namespace is gone, so the kernel has killed the rest; make sure the cgroup is empty too.
    spec.cgroup.killAll();
    await Promise.all(pumps);
    await new Promise<void>((r) => out.end(r));
    closeQuietly(handle.pidfd);
    await startedOk;
    await hooks.onEnd?.().catch(() => undefined);
    let reason: ExitReason;
    if (killedFor) reason = killedFor;
    else if (spec.cgroup.oomKilled()) reason = 'OOMKilled';
    else if (e.signal) reason = 'Signaled';
    else reason = 'Completed';
    return { code: e.code, signal: e.signal, reason, outputBytes: counter.bytes };
  })();
  // Whoever awaits `done` sees its failure; until someone does, a rejection must not count as unhandled
  // (Node ends the process for that, and with it every World on the node).
  done.catch(() => undefined);
  return { pid: handle.pid, observation, done, kill };
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* ignore */
  }
}
