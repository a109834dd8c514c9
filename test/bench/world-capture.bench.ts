// Benchmark: capture of a 10-file change in a World over a Root of N files — from the workload's
// exit to the stored candidate ('exited' → 'captured') — next to `sha256sum` of exactly the 10
// changed files. While the upper layer still exists, the capture step's parts (opening the base
// generation's index, captureLayer, storeCandidate into a scratch directory) are also timed on it directly.
// The caller runs it over Roots at several stack depths (deep-stack.ts), each checked to mount its depth.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { baseIndexOf } from '../../node-agent/store/base-index.js';
import { captureLayer } from '../../node-agent/store/capture-layer.js';
import { storeCandidate } from '../../node-agent/store/candidates.js';
import { layerPaths } from '../../node-agent/sandbox/run-paths.js';
import { expectDepth, type StackedRoot } from './deep-stack.js';
import { median, settle, timeSync } from './stats.js';
import { changedFiles, runArgv } from './tree-fixtures.js';
import type { WorldEnv } from './world-env.js';

export interface CaptureSamples {
  /** 'exited' → 'captured': unmount the world's view, open the base index, captureLayer, storeCandidate. */
  captureMs: number[];
  /** Opening the base generation's index (r.manifest() through baseIndexOf, reading its root attributes). */
  baseIndexMs: number[];
  /** captureLayer on the upper layer alone. */
  layerMs: number[];
  /** storeCandidate alone. */
  storeMs: number[];
  /** `sha256sum` of the 10 changed files (one process). */
  sha256sumMs: number[];
  /** The same 10 files read and hashed in this process. */
  hashInProcessMs: number[];
}

export type CaptureResult = { files: number; runs: number } & { [K in keyof CaptureSamples]: number };

export const noCaptureSamples = (): CaptureSamples => ({ captureMs: [], baseIndexMs: [], layerMs: [], storeMs: [], sha256sumMs: [], hashInProcessMs: [] });

const SCRIPT = 'for f in "$@"; do echo x >> "$f"; done';

/** One world over the adopted Root `stack.root` (of `files` files, a stack of `stack.depth`) that appends to 10 of its files. */
export async function captureRound(env: WorldEnv, stack: StackedRoot, files: number, s: CaptureSamples): Promise<void> {
  const changed = changedFiles(files);
  const scratch = join(env.dir, 'capture-scratch');
  const spec = await env.spec(stack.root, `capture-${stack.root}-${s.captureMs.length}`, ['/bin/sh', '-c', SCRIPT, 'sh', ...changed]);
  expectDepth(spec, stack);
  const r = spec.roots[0]!;
  const upper = layerPaths(spec.paths, r.rootKey).upper;
  let exited = NaN;
  settle();
  await env.run(spec, async (e, at) => {
    if (e.type === 'exited') exited = at;
    if (e.type !== 'captured') return;
    s.captureMs.push(at - exited);
    const c = e.candidate;
    if (c.modified !== changed.length || c.added !== 0 || c.deleted !== 0) {
      throw new Error(`capture saw +${c.added} ~${c.modified} -${c.deleted}, expected ~${changed.length}`);
    }
    // The upper layer is still there until teardown: time the capture step's parts on it directly.
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { mode: 0o700 });
    const t0 = performance.now();
    const base = baseIndexOf(r.manifest());
    void base.root;
    const t1 = performance.now();
    const capture = await captureLayer(upper, base, spec.idBase, spec.idCount);
    const t2 = performance.now();
    await storeCandidate(scratch, [{ root: r.name, rootKey: r.rootKey, baseGeneration: r.generation, baseDigest: r.digest, capture, upperDir: upper }]);
    s.storeMs.push(performance.now() - t2);
    s.layerMs.push(t2 - t1);
    s.baseIndexMs.push(t1 - t0);
    const abs = changed.map((p) => join(upper, p));
    s.sha256sumMs.push(timeSync(() => runArgv(['sha256sum', '--', ...abs])));
    s.hashInProcessMs.push(timeSync(() => {
      for (const f of abs) createHash('sha256').update(readFileSync(f)).digest('hex');
    }));
  });
  rmSync(scratch, { recursive: true, force: true });
}

export function captureResult(files: number, s: CaptureSamples): CaptureResult {
  return {
    files,
    runs: s.captureMs.length,
    captureMs: median(s.captureMs),
    baseIndexMs: median(s.baseIndexMs),
    layerMs: median(s.layerMs),
    storeMs: median(s.storeMs),
    sha256sumMs: median(s.sha256sumMs),
    hashInProcessMs: median(s.hashInProcessMs),
  };
}
