// Running the tools an end-to-end test drives (bash scripts, docker, kind, helm, kubectl) as argv arrays,
// with their output captured and a failure reported with everything it printed.
import { execFile } from 'node:child_process';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default 10 minutes; image and cluster builds pass more. */
  timeoutMs?: number;
}

/** Runs `cmd args`; never throws for a non-zero exit (see `must`). */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      [...args],
      { env: opts.env ?? process.env, cwd: opts.cwd, timeout: opts.timeoutMs ?? 600_000, maxBuffer: 256 * 1024 * 1024, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        const note = err && typeof err.code !== 'number' ? `\n(${err.message})` : '';
        resolve({ code, stdout, stderr: stderr + note });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Runs `cmd args` and returns its stdout; a non-zero exit throws with the command and its stderr. */
export async function must(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}:\n${r.stderr.slice(-4000)}\n${r.stdout.slice(-2000)}`);
  return r.stdout;
}

/** The last non-empty line a build script printed on stdout: by convention, the path or name it built. */
export function lastLine(stdout: string): string {
  const lines = stdout.split('\n').map((l) => l.trim()).filter(Boolean);
  const last = lines.at(-1);
  if (!last) throw new Error('the script printed nothing on stdout');
  return last;
}
