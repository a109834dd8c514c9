// The control plane's child processes: argv-only spawning (never a shell), process groups, the
// emergency cleanup that kills them when the test process ends, and orderly termination.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { basename } from 'node:path';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

// small process helpers (argv arrays only, never a shell)

export function run(file: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<KubectlResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolveRun({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

export function execOk(file: string, args: string[]): Promise<void> {
  return new Promise((resolveExec, reject) => {
    execFile(file, args, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolveExec();
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export function tail(file: string, lines = 40): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export interface Live {
  pids: number[];
  dir: string;
  removeDir: boolean;
}
export const live = new Set<Live>();
let handlersInstalled = false;

/** True when `pid` is gone or a zombie (dead, not yet reaped). */
function deadOrZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return true;
  }
}

function emergencyCleanup(): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const l of live) {
    for (const pid of l.pids) killGroup(pid, 'SIGKILL');
    // Synchronous context (exit/signal): wait briefly for the kernel to finish the kills before removing files.
    for (let i = 0; i < 200 && !l.pids.every(deadOrZombie); i++) Atomics.wait(pause, 0, 0, 10);
    if (l.removeDir) {
      try {
        rmSync(l.dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        /* best effort */
      }
    }
  }
  live.clear();
}

export function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', emergencyCleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      emergencyCleanup();
      // Behave as if unhandled unless somebody else also listens: re-raise with the default action.
      if (process.listenerCount(sig) <= 1) {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      }
    };
    process.on(sig, onSignal);
  }
}

// ---------------------------------------------------------------------------------------------------
// start / stop

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  exited: Promise<void>;
  exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null;
  log: string;
}

export function launch(bin: string, args: string[], log: string, keep: boolean): Proc {
  const fd = openSync(log, 'a');
  try {
    const [file, argv] = keep ? [bin, args] : ['setpriv', ['--pdeathsig', 'SIGKILL', '--', bin, ...args]];
    const child = spawn(file, argv, { detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new Error(`failed to spawn ${bin}`);
    const proc: Proc = {
      name: basename(bin),
      pid: child.pid,
      child,
      exitInfo: null,
      log,
      exited: new Promise<void>((ok) => {
        child.once('exit', (code, signal) => {
          proc.exitInfo = { code, signal };
          ok();
        });
      }),
    };
    child.once('error', () => undefined);
    if (keep) child.unref();
    return proc;
  } finally {
    closeSync(fd);
  }
}

/** Stops processes one after the other (callers pass kube-apiserver before etcd): SIGTERM, then SIGKILL after `graceMs`. */
export async function terminate(procs: Proc[], graceMs: number): Promise<void> {
  for (const p of procs) {
    if (p.exitInfo === null && graceMs > 0) {
      killGroup(p.pid, 'SIGTERM');
      await Promise.race([p.exited, sleep(graceMs)]);
    }
    killGroup(p.pid, 'SIGKILL');
    await p.exited;
  }
  // The group leaders are reaped; make sure nothing else in their groups lingers.
  for (let i = 0; i < 100 && procs.some((p) => groupAlive(p.pid)); i++) await sleep(20);
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
