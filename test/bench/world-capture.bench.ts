// Benchmark: capture of a 10-file change in a World over a Root of N files — from the workload's
// exit to the stored candidate ('exited' → 'captured') — next to `sha256sum` of exactly the 10
// changed files. While the upper layer still exists, captureLayer and storeCandidate are also timed
// on it directly (into a scratch directory), to show what the capture step itself costs.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { captureLayer } from '../../node-agent/world/capture-layer.js';
import { storeCandidate } from '../../node-agent/world/candidate.js';
import { layerPaths } from '../../node-agent/world/world-paths.js';
import { median, timeSync } from './stats.js';
import { changedFiles, runArgv } from './tree-fixtures.js';
import type { WorldEnv } from './world-env.js';

export interface CaptureResult {
  files: number;
  reps: number;
  /** 'exited' → 'captured': unmount the world's view, captureLayer, storeCandidate. */
  captureMs: number;
  /** captureLayer on the upper layer alone. */
  layerMs: number;
  /** storeCandidate alone. */
  storeMs: number;
  /** `sha256sum` of the 10 changed files (one process). */
  sha256sumMs: number;
  /** The same 10 files read and hashed in this process. */
  hashInProcessMs: number;
}

const SCRIPT = 'for f in "$@"; do echo x >> "$f"; done';

export async function benchCapture(env: WorldEnv, root: string, files: number, reps: number): Promise<CaptureResult> {
  const changed = changedFiles(files);
  const s = { captureMs: [] as number[], layerMs: [] as number[], storeMs: [] as number[], sha256sumMs: [] as number[], hashInProcessMs: [] as number[] };
  const scratch = join(env.dir, 'capture-scratch');
  for (let i = 0; i < reps; i++) {
    const uid = `capture-${files}-${i}`;
    const spec = await env.spec(root, uid, ['/bin/sh', '-c', SCRIPT, 'sh', ...changed]);
    const r = spec.roots[0]!;
    const upper = layerPaths(spec.paths, r.rootKey).upper;
    let exited = NaN;
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
      const capture = await captureLayer(upper, r.manifest, spec.idBase, spec.idCount);
      const t1 = performance.now();
      await storeCandidate(scratch, [{ root: r.name, rootKey: r.rootKey, baseGeneration: r.generation, baseDigest: r.digest, base: r.manifest, capture, upperDir: upper }]);
      const t2 = performance.now();
      s.layerMs.push(t1 - t0);
      s.storeMs.push(t2 - t1);
      const abs = changed.map((p) => join(upper, p));
      s.sha256sumMs.push(timeSync(() => runArgv(['sha256sum', '--', ...abs])));
      s.hashInProcessMs.push(timeSync(() => {
        for (const f of abs) createHash('sha256').update(readFileSync(f)).digest('hex');
      }));
    });
    rmSync(scratch, { recursive: true, force: true });
  }
  const m = (xs: number[]): number => median(xs);
  return { files, reps, captureMs: m(s.captureMs), layerMs: m(s.layerMs), storeMs: m(s.storeMs), sha256sumMs: m(s.sha256sumMs), hashInProcessMs: m(s.hashInProcessMs) };
}
