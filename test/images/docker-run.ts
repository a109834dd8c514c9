// Runs worldline's processes from the image in real containers for the image tests: `docker run` with an
// argv (never a shell string), the process's JSON log lines read from the container's stderr, and the
// container removed at stop(). Also a one-shot run that returns exit code and output.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** docker with these arguments; never rejects on a non-zero exit (the code is in the result). */
export async function docker(args: string[], timeoutMs = 120_000): Promise<RunResult> {
  try {
    const { stdout, stderr } = await exec('docker', args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: unknown; stdout?: string; stderr?: string; killed?: boolean };
    if (typeof err.code !== 'number') throw new Error(`docker ${args.join(' ')}: ${String((e as Error).message)}`, { cause: e });
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

export interface Container {
  readonly name: string;
  readonly logs: Record<string, unknown>[];
  waitForLog(what: string, pred: (rec: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** docker stop (SIGTERM, then SIGKILL after `graceSeconds`); resolves with the process's exit code. */
  stop(graceSeconds?: number): Promise<number>;
  /** Removes the container whatever its state (for cleanup). */
  remove(): Promise<void>;
}

let seq = 0;

/** Starts `docker run --name <unique> <runArgs> <image> <command>` in the foreground, reading its stderr. */
export function runContainer(runArgs: string[], image: string, command: string[]): Container {
  const name = `worldline-image-test-${process.pid}-${++seq}`;
  const child = spawn('docker', ['run', '--rm', '--name', name, ...runArgs, image, ...command], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<{ pred: (r: Record<string, unknown>) => boolean; resolve: (r: Record<string, unknown>) => void }>();
  createInterface({ input: child.stderr }).on('line', (line) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      rec = { msg: line, unparsed: true };
    }
    logs.push(rec);
    for (const w of [...waiters]) {
      if (w.pred(rec)) {
        waiters.delete(w);
        w.resolve(rec);
      }
    }
  });
  const last = (): string => logs.slice(-15).map((l) => JSON.stringify(l)).join('\n');
  return {
    name,
    logs,
    waitForLog(what, pred, timeoutMs = 60_000) {
      const found = logs.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = { pred, resolve: (r: Record<string, unknown>) => { clearTimeout(timer); resolve(r); } };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`container ${name}: no log line "${what}" within ${timeoutMs} ms; last lines:\n${last()}`));
        }, timeoutMs);
        waiters.add(w);
        void exited.then(([code]) => {
          if (!waiters.has(w)) return;
          waiters.delete(w);
          clearTimeout(timer);
          reject(new Error(`container ${name} exited (${String(code)}) before "${what}"; last lines:\n${last()}`));
        });
      });
    },
    async stop(graceSeconds = 20) {
      if (child.exitCode === null && child.signalCode === null) {
        const r = await docker(['stop', '--time', String(graceSeconds), name]);
        if (r.code !== 0 && !/No such container/.test(r.stderr)) throw new Error(`docker stop ${name}: ${r.stderr}`);
      }
      const [code] = await exited;
      return code ?? -1;
    },
    async remove() {
      await docker(['rm', '--force', name]);
      if (child.exitCode === null && child.signalCode === null) await exited;
    },
  };
}
