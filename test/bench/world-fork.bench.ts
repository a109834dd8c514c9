// Benchmark: fork latency of a World over a Root of N files — startWorldRun until the workload
// (/bin/true) has started with its observation verified — next to `cp -a` of the same root and
// `git worktree add` of the same tree committed to git, repetitions interleaved in one run.
// buildRunSpec (routing check and base manifest, before the World is Admitted) is timed apart.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { median, timeSync } from './stats.js';
import { git, runArgv } from './tree-fixtures.js';
import type { WorldEnv } from './world-env.js';

export interface ForkSamples {
  /** buildRunSpec: routing check + base manifest read (admission, before fork). */
  admitMs: number[];
  /** startWorldRun → 'running'. */
  forkMs: number[];
  cpMs: number[];
  worktreeMs: number[];
}

export interface ForkResult {
  files: number;
  reps: number;
  admitMs: number;
  forkMs: number;
  cpMs: number;
  worktreeMs: number;
}

/** `root` is an adopted Root of `files` files; `repo` a git repo with the same tree committed. */
export async function benchFork(env: WorldEnv, root: string, repo: string, files: number, reps: number): Promise<ForkResult> {
  const s: ForkSamples = { admitMs: [], forkMs: [], cpMs: [], worktreeMs: [] };
  for (let i = 0; i < reps; i++) {
    const uid = `fork-${files}-${i}`;
    const t0 = performance.now();
    const spec = await env.spec(root, uid, ['/bin/true']);
    s.admitMs.push(performance.now() - t0);
    let started = NaN;
    const t1 = performance.now();
    await env.run(spec, (e, at) => {
      if (e.type === 'running') started = at;
    });
    s.forkMs.push(started - t1);

    mkdirSync(join(env.dir, 'cp'), { recursive: true });
    const copy = join(env.dir, 'cp', uid);
    s.cpMs.push(timeSync(() => runArgv(['cp', '-a', spec.roots[0]!.payload, copy])));
    rmSync(join(env.dir, 'cp'), { recursive: true, force: true });

    mkdirSync(join(env.dir, 'worktrees'), { recursive: true });
    const wt = join(env.dir, 'worktrees', uid);
    s.worktreeMs.push(timeSync(() => git(repo, 'worktree', 'add', '--quiet', '--detach', wt, 'HEAD')));
    rmSync(join(env.dir, 'worktrees'), { recursive: true, force: true });
    git(repo, 'worktree', 'prune');
  }
  return { files, reps, admitMs: median(s.admitMs), forkMs: median(s.forkMs), cpMs: median(s.cpMs), worktreeMs: median(s.worktreeMs) };
}
