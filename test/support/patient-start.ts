// Starts the real controller or node-agent (dist/<component>/main.js) as a child process and waits for
// it to serve, with a start timeout fit for a loaded host: the fault campaign restarts them dozens of times
// on two shared cores under `nice`, where a node-agent has been seen to print nothing for 30 s (the limit
// controller-process.ts's startComponent keeps for ordinary tests). Its JSON log lines are kept for a
// failure's explanation; the child is killed when the test process exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

const DIST = resolve(import.meta.dirname, '..', '..');
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export interface PatientProcess {
  readonly pid: number;
  readonly logs: Record<string, unknown>[];
  /** Resolves when it has exited, by itself or killed. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether kill() was called (an exit without it is the process's own). */
  readonly killed: boolean;
  /** Sends `signal` (if it still runs) and resolves once it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `component` with `args`; resolves once it has logged each message of `ready` (in any order),
 * rejects — after killing it — when it exits first or `timeoutMs` passes.
 */
export async function startPatiently(component: 'controller' | 'node-agent', args: string[], ready: string[], timeoutMs = 180_000): Promise<PatientProcess> {
  const child = spawn(process.execPath, [resolve(DIST, component, 'main.js'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  const exited = once(child, 'exit');
  const logs: Record<string, unknown>[] = [];
  const missing = new Set(ready);
  let onReady: (() => void) | undefined;
  createInterface({ input: child.stderr }).on('line', (line) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      rec = { msg: line, unparsed: true };
    }
    logs.push(rec);
    missing.delete(String(rec['msg']));
    if (missing.size === 0) onReady?.();
  });
  let killed = false;
  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    killed = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      await exited;
    }
    running.delete(child);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((res) => {
        onReady = res;
        if (missing.size === 0) res();
      }),
      exited.then(() => {
        throw new Error(`${component} exited before it served:\n${logs.map((l) => JSON.stringify(l)).join('\n')}`);
      }),
      new Promise<never>((_res, rej) => {
        timer = setTimeout(() => rej(new Error(`${component}: not ready (${[...missing].join(', ')}) within ${timeoutMs} ms; last lines:\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    await kill('SIGKILL');
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return {
    pid: child.pid ?? -1,
    logs,
    exited: exited.then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null })),
    get killed() {
      return killed;
    },
    kill,
  };
}
