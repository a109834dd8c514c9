// Benchmark: fork latency of a World over a Root of N files — startWorldRun until the workload
// (/bin/true) has started with its observation verified — next to `cp -a` of the same root and
// `git worktree add` of the same tree committed to git. One round = a few forks (cheap and noisy)
// and one of each copy; the caller interleaves rounds of every size, so all sizes see the same
// conditions. buildRunSpec (routing check, before the World is Admitted) is timed apart. Each size has
// Roots at several stack depths (deep-stack.ts): a round forks each in turn, the copies are of the first.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { median, settle, timeSync } from './stats.js';
import { expectDepth, type StackedRoot } from './deep-stack.js';
import { git, runArgv } from './tree-fixtures.js';
import type { WorldEnv } from './world-env.js';

export const FORKS_PER_ROUND = 3;

export interface ForkTarget {
  files: number;
  /** Adopted Roots of `files` files, one per stack depth; the copies are of the first (a fresh adoption, depth 1). */
  stacks: readonly StackedRoot[];
  /** A git repository with the same tree committed. */
  repo: string;
}

export interface ForkSamples {
  /** Per stack, in ForkTarget.stacks' order: buildRunSpec (routing check and the spec, before fork). */
  admitMs: number[][];
  /** Per stack: startWorldRun → 'running'. */
  forkMs: number[][];
  cpMs: number[];
  worktreeMs: number[];
}

export interface ForkResult {
  files: number;
  rounds: number;
  /** Per stack. */
  stacks: { depth: number; forks: number; admitMs: number; forkMs: number }[];
  cpMs: number;
  worktreeMs: number;
}

export const noForkSamples = (stacks: number): ForkSamples => ({ admitMs: Array.from({ length: stacks }, () => []), forkMs: Array.from({ length: stacks }, () => []), cpMs: [], worktreeMs: [] });

export async function forkRound(env: WorldEnv, t: ForkTarget, s: ForkSamples): Promise<void> {
  const round = s.cpMs.length;
  let payload = '';
  for (let j = 0; j < FORKS_PER_ROUND; j++) {
    for (const [k, stack] of t.stacks.entries()) {
      settle();
      const t0 = performance.now();
      const spec = await env.spec(stack.root, `fork-${stack.root}-${round}-${j}`, ['/bin/true']);
      s.admitMs[k]!.push(performance.now() - t0);
      expectDepth(spec, stack);
      if (k === 0) payload = spec.roots[0]!.payload;
      let started = NaN;
      const t1 = performance.now();
      await env.run(spec, (e, at) => {
        if (e.type === 'running') started = at;
      });
      s.forkMs[k]!.push(started - t1);
    }
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

export function forkResult(t: ForkTarget, s: ForkSamples): ForkResult {
  const stacks = t.stacks.map((stack, k) => ({ depth: stack.depth, forks: s.forkMs[k]!.length, admitMs: median(s.admitMs[k]!), forkMs: median(s.forkMs[k]!) }));
  return { files: t.files, rounds: s.cpMs.length, stacks, cpMs: median(s.cpMs), worktreeMs: median(s.worktreeMs) };
}
