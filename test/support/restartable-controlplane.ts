// kill -9 and restart of one half of a test control plane (scripts/controlplane/harness.ts): etcd or
// kube-apiserver, started again with exactly the argv it ran with (read from /proc before the first kill),
// so etcd comes back on the same data directory and ports and kube-apiserver on the same certificates and
// port. Restarted processes run in their own process group under `setpriv --pdeathsig SIGKILL` (they die
// with the test process) and append to the log the harness gave them; stopAll() ends them.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tail } from '../../scripts/controlplane/processes.js';

const restarted = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of restarted) killGroup(c.pid, 'SIGKILL');
});

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** Gone or a zombie (dead, not reaped yet). */
function dead(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return true;
  }
}

export interface RestartableProcess {
  readonly name: string;
  /** The running process's id (its process group's id too). */
  readonly pid: number;
  readonly restarts: number;
  /** SIGKILL to its process group; resolves once it is dead. */
  kill(): Promise<void>;
  /** Starts it again with its original argv; resolves once `healthy` says so (rejects after `timeoutMs`). */
  start(timeoutMs?: number): Promise<void>;
  /** Ends a restarted process (the harness's stop() ends the original one). */
  stop(): Promise<void>;
}

/**
 * A handle on the control-plane process `pid` (a process-group leader started by the harness), which
 * logs to `log`, healthy when `healthy()` resolves true.
 */
export function restartable(name: string, pid: number, log: string, healthy: () => Promise<boolean>): RestartableProcess {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  if (argv.length === 0) throw new Error(`${name}: /proc/${pid}/cmdline is empty (not running?)`);
  let current = pid;
  let child: ChildProcess | undefined;
  let restarts = 0;
  return {
    name,
    get pid() {
      return current;
    },
    get restarts() {
      return restarts;
    },
    async kill() {
      killGroup(current, 'SIGKILL');
      while (!dead(current)) await sleep(10);
    },
    async start(timeoutMs = 90_000) {
      const fd = openSync(log, 'a');
      try {
        child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', ...argv], { detached: true, stdio: ['ignore', fd, fd] });
      } finally {
        closeSync(fd);
      }
      if (child.pid === undefined) throw new Error(`${name}: could not start ${argv[0]!}`);
      child.once('error', () => undefined);
      restarted.add(child);
      current = child.pid;
      restarts++;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (dead(current)) throw new Error(`${name} exited right after its restart; the end of ${log}:\n${tail(log, 15)}`);
        if (await healthy().catch(() => false)) return;
        if (Date.now() > deadline) throw new Error(`${name} not healthy ${timeoutMs} ms after its restart; the end of ${log}:\n${tail(log, 15)}`);
        await sleep(200);
      }
    },
    async stop() {
      if (!child?.pid) return;
      killGroup(child.pid, 'SIGKILL');
      while (!dead(child.pid)) await sleep(10);
      restarted.delete(child);
    },
  };
}
