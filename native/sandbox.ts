// The sandboxed spawn. spawnSandbox validates everything, then the addon clones the child into new
// user/mount/pid/ipc/uts/cgroup (+net) namespaces, writes its maps and cgroup.procs, and the child
// prepares itself (pivot_root into rootfs, fresh /proc, no nested user namespaces, no groups, no
// capabilities, no_new_privs, parent-death SIGKILL) and reports an observation frame. It execs the
// workload only after the caller wrote 'G' to `ack`. SandboxChannel drives that protocol.
//
// Without a supervisor the child's parent is the Node main thread (the thread that called spawnSandbox):
// with PR_SET_PDEATHSIG(SIGKILL) it dies with the caller. With one (spawnSupervisedSandbox) its parent is
// a per-world shim (native/src/shim/) that has left the caller's session and cgroups and cloned the child
// from its own small address space, so the child never holds a copy of the caller's memory: the world
// outlives the caller, and dies only with its shim. Call either from the main thread only.
import { closeSync, existsSync, writeSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Socket } from 'node:net';
import { binding } from './binding.js';
import { parseObservation, parseRecord, recordLength, SandboxSetupError } from './observation.js';
import type { SandboxExit, SandboxHandle, SandboxObservation, SandboxSpawnOptions, SupervisorOptions } from './types.js';
import * as v from './validate.js';

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$/;

export function envEntry(name: string, value: unknown): string {
  const s = v.string(name, value);
  if (s.indexOf('=') <= 0) throw v.valueError(name, `"${s}" is not KEY=VALUE`);
  return s;
}

export function cgroupProcsPath(name: string, value: unknown): string {
  const s = v.absolutePath(name, value);
  if (!s.endsWith('/cgroup.procs')) throw v.valueError(name, `"${s}" is not a cgroup.procs file`);
  return s;
}

export const MAX_PROBE_PATHS = 16;

/** A path the frame reports on: absolute, one line, short enough for the frame's paths section. */
function probePath(name: string, value: unknown): string {
  const s = v.absolutePath(name, value);
  if (s.includes('\n') || s.length > 200) throw v.valueError(name, `"${s.slice(0, 40)}…" is not a probe path (one line, at most 200 bytes)`);
  return s;
}

/** Validates the options into a fresh object holding only known fields. */
export function validateSandboxOptions(opts: SandboxSpawnOptions): SandboxSpawnOptions {
  v.object('opts', opts);
  const uidMap = v.idMaps('opts.uidMap', opts.uidMap);
  const gidMap = v.idMaps('opts.gidMap', opts.gidMap);
  const rootfs = v.absolutePath('opts.rootfs', opts.rootfs);
  if (rootfs === '/') throw v.valueError('opts.rootfs', 'must not be the host root');
  const argv = v.stringArray('opts.argv', opts.argv);
  if (argv.length === 0 || argv[0] === '') throw v.valueError('opts.argv', 'needs a program');
  const hostname = v.string('opts.hostname', opts.hostname);
  if (!HOSTNAME.test(hostname)) throw v.valueError('opts.hostname', `"${hostname}" is not a valid hostname`);
  const out: SandboxSpawnOptions = {
    rootfs,
    argv,
    env: v.stringArray('opts.env', opts.env, envEntry),
    cwd: v.absolutePath('opts.cwd', opts.cwd),
    uid: v.mappedId('opts.uid', opts.uid, uidMap),
    gid: v.mappedId('opts.gid', opts.gid, gidMap),
    uidMap,
    gidMap,
    hostname,
    newNetwork: v.bool('opts.newNetwork', opts.newNetwork),
    cgroupProcs: v.stringArray('opts.cgroupProcs', opts.cgroupProcs, cgroupProcsPath),
  };
  if (opts.stdoutFd !== undefined) out.stdoutFd = v.fd('opts.stdoutFd', opts.stdoutFd);
  if (opts.stderrFd !== undefined) out.stderrFd = v.fd('opts.stderrFd', opts.stderrFd);
  if (opts.userns !== undefined) out.userns = v.fd('opts.userns', opts.userns);
  if (opts.mountTemplate !== undefined) out.mountTemplate = v.fd('opts.mountTemplate', opts.mountTemplate);
  if (opts.probePaths !== undefined) {
    const probes = v.stringArray('opts.probePaths', opts.probePaths, probePath);
    if (probes.length > MAX_PROBE_PATHS) throw v.valueError('opts.probePaths', `at most ${MAX_PROBE_PATHS} paths`);
    out.probePaths = probes;
  }
  return out;
}

/**
 * Starts a sandboxed child (see the file comment). onExit runs once, on the JS thread, when the child
 * has exited and been reaped by a dedicated waiter thread. The caller owns every fd in the handle.
 */
export function spawnSandbox(opts: SandboxSpawnOptions, onExit: (r: SandboxExit) => void): SandboxHandle {
  const checked = validateSandboxOptions(opts);
  if (typeof onExit !== 'function') throw new TypeError('The "onExit" argument must be a function');
  if (checked.userns !== undefined) throw v.valueError('opts.userns', 'joining a user namespace takes a supervised spawn');
  if (checked.mountTemplate !== undefined) throw v.valueError('opts.mountTemplate', 'a mount template takes a supervised spawn');
  return binding.spawnSandbox(checked, onExit);
}

/** Where the shim is built (native/build.sh), from the source tree and from dist/. */
export function shimPath(): string {
  const candidates = [new URL('./build/Release/worldline_shim', import.meta.url), new URL('../../native/build/Release/worldline_shim', import.meta.url)].map((u) => fileURLToPath(u));
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error(`worldline shim not built (run native/build.sh); looked in: ${candidates.join(', ')}`);
  return found;
}

/**
 * As spawnSandbox, under a per-world supervisor (see the file comment): the handle has no stdout/stderr
 * (the shim copies them into its output log) and onExit runs when the shim has ended, after it wrote the
 * workload's exit record.
 */
export function spawnSupervisedSandbox(opts: SandboxSpawnOptions, onExit: (r: SandboxExit) => void, supervisor: SupervisorOptions): SandboxHandle {
  const checked = validateSandboxOptions(opts);
  if (typeof onExit !== 'function') throw new TypeError('The "onExit" argument must be a function');
  if (opts.stdoutFd !== undefined || opts.stderrFd !== undefined) throw v.valueError('opts.stdoutFd', 'a supervised sandbox writes its output through its supervisor');
  const sup: SupervisorOptions = {
    path: v.absolutePath('supervisor.path', supervisor.path),
    argv: v.stringArray('supervisor.argv', supervisor.argv),
    cgroupProcs: v.stringArray('supervisor.cgroupProcs', supervisor.cgroupProcs, cgroupProcsPath),
  };
  return binding.spawnSandbox(checked, onExit, sup);
}

/** A pidfd of a live process (ESRCH when gone); the caller closes it. */
export function pidfdOpen(pid: number): number {
  return binding.pidfdOpen(v.fd('pid', pid));
}

/**
 * SIGTERM or SIGKILL to exactly the process behind `pidfd` (pidfd_send_signal): never to a process that
 * got its pid number later. false when that process has ended.
 */
export function pidfdSendSignal(pidfd: number, sig: 'SIGTERM' | 'SIGKILL'): boolean {
  return binding.pidfdSendSignal(v.fd('pidfd', pidfd), osConstants.signals[sig]);
}

/** Calls onExit once the process behind `pidfd` has ended (it need not be our child); the caller keeps the fd. */
export function watchPidfd(pidfd: number, onExit: (r: SandboxExit) => void): void {
  binding.watchPidfd(v.fd('pidfd', pidfd), onExit);
}

/** Reads the observation pipe of a SandboxHandle record by record, and answers on its ack pipe. */
export class SandboxChannel {
  private readonly socket: Socket;
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | null = null;
  private ackOpen = true;

  constructor(private readonly handle: SandboxHandle) {
    this.socket = new Socket({ fd: handle.observation, readable: true, writable: false });
    this.socket.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      this.wake?.();
    });
    const end = (): void => {
      this.ended = true;
      this.wake?.();
    };
    this.socket.on('end', end);
    this.socket.on('close', end);
    this.socket.on('error', end);
  }

  /** The next complete record (observation frame or error record), or null at EOF. */
  async nextRecord(timeoutMs = 10_000): Promise<Buffer | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const len = recordLength(this.buf);
      if (len !== null) {
        const record = this.buf.subarray(0, len);
        this.buf = this.buf.subarray(len);
        return record;
      }
      if (this.ended) {
        if (this.buf.length > 0) throw new SandboxSetupError('frame (truncated)', 0, 'EPROTO');
        return null;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new SandboxSetupError('frame (timeout)', 0, 'ETIMEDOUT');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** The child's observation; throws SandboxSetupError if setup failed or it exited first. */
  async observe(timeoutMs = 10_000): Promise<SandboxObservation> {
    const record = await this.nextRecord(timeoutMs);
    if (record === null) throw new SandboxSetupError('observe (child exited before reporting)', 0, 'EPIPE');
    return parseObservation(record);
  }

  /** Lets the workload exec. */
  go(): void {
    this.closeAck('G');
  }

  /** Refuses the workload: the child exits 125 without running it. */
  abort(): void {
    this.closeAck(null);
  }

  /** After go(): resolves once the workload replaced the child (EOF), throws if execve failed. */
  async started(timeoutMs = 10_000): Promise<void> {
    const record = await this.nextRecord(timeoutMs);
    if (record === null) return;
    const parsed = parseRecord(record);
    if (parsed.kind === 'error') throw new SandboxSetupError(parsed.stage, parsed.errno, parsed.errnoCode);
    throw new SandboxSetupError('frame (unexpected second observation)', 0, 'EPROTO');
  }

  /** Closes the observation pipe (and the ack pipe if still open). */
  close(): void {
    if (this.ackOpen) this.closeAck(null);
    this.socket.destroy();
  }

  private closeAck(byte: string | null): void {
    if (!this.ackOpen) return;
    this.ackOpen = false;
    try {
      if (byte !== null) writeSync(this.handle.ack, byte);
    } finally {
      closeSync(this.handle.ack);
    }
  }
}
