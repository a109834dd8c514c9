// Benchmark: fork latency of a World over a Root of N files — startWorldRun until the workload
// (/bin/true) has started with its observation verified — next to `cp -a` of the same root and
// `git worktree add` of the same tree committed to git. One round = a few forks (cheap and noisy)
// and one of each copy; the caller interleaves rounds of every size, so all sizes see the same
// conditions. buildRunSpec (routing check, before the World is Admitted) is timed apart.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { median, settle, timeSync } from './stats.js';
import { git, runArgv } from './tree-fixtures.js';
import type { WorldEnv } from './world-env.js';

export const FORKS_PER_ROUND = 3;

export interface ForkTarget {
  files: number;
  /** An adopted Root of `files` files. */
  root: string;
  /** A git repository with the same tree committed. */
  repo: string;
}

export interface ForkSamples {
  /** buildRunSpec: routing check and the spec (admission, before fork). */
  admitMs: number[];
  /** startWorldRun → 'running'. */
  forkMs: number[];
  cpMs: number[];
  worktreeMs: number[];
}

export interface ForkResult {
  files: number;
  rounds: number;
  forks: number;
  admitMs: number;
  forkMs: number;
  cpMs: number;
  worktreeMs: number;
}

export const noForkSamples = (): ForkSamples => ({ admitMs: [], forkMs: [], cpMs: [], worktreeMs: [] });

export async function forkRound(env: WorldEnv, t: ForkTarget, s: ForkSamples): Promise<void> {
  const round = s.cpMs.length;
  let payload = '';
  for (let j = 0; j < FORKS_PER_ROUND; j++) {
    settle();
    const t0 = performance.now();
    const spec = await env.spec(t.root, `fork-${t.files}-${round}-${j}`, ['/bin/true']);
    s.admitMs.push(performance.now() - t0);
    payload = spec.roots[0]!.payload;
    let started = NaN;
    const t1 = performance.now();
    await env.run(spec, (e, at) => {
      if (e.type === 'running') started = at;
    });
    s.forkMs.push(started - t1);
  }

  const copies = join(env.dir, 'cp');
  mkdirSync(copies, { recursive: true });
  settle();
  s.cpMs.push(timeSync(() => runArgv(['cp', '-a', payload, join(copies, String(round))])));
  rmSync(copies, { recursive: true, force: true });

  const worktrees = join(env.dir, 'worktrees');
  mkdirSync(worktrees, { recursive: true });
  settle();
  s.worktreeMs.push(timeSync(() => git(t.repo, 'worktree', 'add', '--quiet', '--detach', join(worktrees, String(round)), 'HEAD')));
  rmSync(worktrees, { recursive: true, force: true });
  git(t.repo, 'worktree', 'prune');
}

export function forkResult(files: number, s: ForkSamples): ForkResult {
  return { files, rounds: s.cpMs.length, forks: s.forkMs.length, admitMs: median(s.admitMs), forkMs: median(s.forkMs), cpMs: median(s.cpMs), worktreeMs: median(s.worktreeMs) };
}
