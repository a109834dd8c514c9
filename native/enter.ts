// Entering a running sandbox (native/src/sandbox_enter.c): one more process in the namespaces and cgroups
// of a sandbox's pid 1, as its workload's uid/gid with no capabilities, no_new_privs and parent-death
// SIGKILL, with pipes or a fresh pseudo-terminal for its stdio. What `kubectl worldline exec` runs on.
import { Socket } from 'node:net';
import { binding } from './binding.js';
import { parseRecord, recordLength, SandboxSetupError } from './observation.js';
import { cgroupProcsPath, envEntry } from './sandbox.js';
import type { SandboxExit } from './types.js';
import * as v from './validate.js';

export interface EnterOptions {
  /** A pidfd of the sandbox's pid 1 (the caller keeps it). */
  target: number;
  argv: string[];
  env: string[];
  /** Inside the sandbox. */
  cwd: string;
  /** The workload's ids inside the sandbox's user namespace. */
  uid: number;
  gid: number;
  /** cgroup.procs files of the sandbox's cgroups (host paths), joined before its namespaces. */
  cgroupProcs: string[];
  /** A pseudo-terminal (its master in `pty`) instead of three pipes. */
  tty: boolean;
}

export interface EnterHandle {
  /** The intermediate's pid (in the caller's pid namespace); it ends as the command does. */
  pid: number;
  pidfd: number;
  /** Read end of the setup pipe: one error record, or EOF once the command executes (see enterOutcome). */
  errors: number;
  /** With tty: the pseudo-terminal's master (read: the command's output; write: its input). */
  pty?: number;
  stdin?: number;
  stdout?: number;
  stderr?: number;
}

export interface NativeEnterBinding {
  enterSandbox(opts: EnterOptions, onExit: (r: SandboxExit) => void): EnterHandle;
  setWindowSize(fd: number, rows: number, cols: number): void;
  pidfdKill(pidfd: number): void;
}

const enterBinding = binding as unknown as NativeEnterBinding;

/** Starts the command (see the file comment). onExit runs once, on the JS thread, when it has ended. */
export function enterSandbox(opts: EnterOptions, onExit: (r: SandboxExit) => void): EnterHandle {
  v.object('opts', opts);
  const argv = v.stringArray('opts.argv', opts.argv);
  if (argv.length === 0 || argv[0] === '') throw v.valueError('opts.argv', 'needs a program');
  if (typeof onExit !== 'function') throw new TypeError('The "onExit" argument must be a function');
  return enterBinding.enterSandbox(
    {
      target: v.fd('opts.target', opts.target),
      argv,
      env: v.stringArray('opts.env', opts.env, envEntry),
      cwd: v.absolutePath('opts.cwd', opts.cwd),
      uid: v.integer('opts.uid', opts.uid, 0, 0xfffffffe),
      gid: v.integer('opts.gid', opts.gid, 0, 0xfffffffe),
      cgroupProcs: v.stringArray('opts.cgroupProcs', opts.cgroupProcs, cgroupProcsPath),
      tty: v.bool('opts.tty', opts.tty),
    },
    onExit,
  );
}

/**
 * Resolves once the command executes (its setup pipe closed with nothing written); rejects with the
 * SandboxSetupError of the step that failed. Takes ownership of `errorsFd`.
 */
export function enterOutcome(errorsFd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new Socket({ fd: errorsFd, readable: true, writable: false });
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length > 4096) socket.destroy(new SandboxSetupError('setup (record too long)', 0, 'EPROTO'));
    });
    socket.on('error', reject);
    socket.on('end', () => {
      socket.destroy();
      if (buf.length === 0) return resolve();
      try {
        if (recordLength(buf) !== buf.length) throw new SandboxSetupError('setup (truncated record)', 0, 'EPROTO');
        const r = parseRecord(buf);
        reject(r.kind === 'error' ? new SandboxSetupError(r.stage, r.errno, r.errnoCode) : new SandboxSetupError('setup (unexpected frame)', 0, 'EPROTO'));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/** Sets a pseudo-terminal's window size (the command sees SIGWINCH). */
export function setWindowSize(fd: number, rows: number, cols: number): void {
  enterBinding.setWindowSize(v.fd('fd', fd), v.integer('rows', rows, 0, 0xffff), v.integer('cols', cols, 0, 0xffff));
}

/** SIGKILL through a pidfd (never a recycled pid); a process already gone is not an error. */
export function pidfdKill(pidfd: number): void {
  enterBinding.pidfdKill(v.fd('pidfd', pidfd));
}
