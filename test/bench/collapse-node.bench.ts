// Benchmark: the node-level collapse path, no Kubernetes. On a scratch node store (world-env.ts), a World
// over a Root of N files makes the same 10-file change as the stack benchmark and is captured (untimed);
// then, timed apart, the two things the node-agent's prepare step computes before it decides: the
// re-hash of PRIME (rehashPrime: a walk, or the PRIME watcher's word when it saw nothing since the last
// one; WORLDLINE_PRIME_WATCHER=off walks every time) and the next manifest the candidate's delta makes of
// its base, with its digest (testedManifest, as measure-collapse.ts computes it; kept for the staging
// and the boundary); and collapseRoot — intent, stage the next generation (and walk it and the base), walk
// PRIME and the staged payload again at the commit boundary, exchange, database — which is what moves
// PRIME. The rest of the collapse decision (run by the agent at prepare and, through collapseRoot's
// `authorize`, at the commit boundary on the walks already made) is database reads and is left out.
// Next to it the same `cp -a` + `sha256sum` of the 10 changed files. Then the Root's owner rewrites the
// same 10 paths through the host path (their view, store/owner-view.ts) and publishOwnerEdits makes them
// PRIME's next generation, timed (the background sync adds its look interval, 200 ms with the watcher).
// With --compaction, afterwards: ordinary collapses of the same change (deep-stack.ts) take each Root's
// stack to MAX_STACK_DEPTH, and the next collapse, which compacts it into a full generation (unchanged
// files linked, changed ones copied, the result walked), is timed apart, once per size.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishOwnerEdits } from '../../node-agent/collapses/owner-edits.js';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import type { CollapseStep } from '../../node-agent/collapses/collapse-intent.js';
import { readStoredDelta } from '../../node-agent/collapses/stage-generation.js';
import { compactPrime } from '../../node-agent/collapses/background-compaction.js';
import { COMPACT_AT_DEPTH, MAX_STACK_DEPTH } from '../../node-agent/store/generation-stack.js';
import { rehashPrime } from '../../node-agent/store/rehash-prime.js';
import { getGeneration, getGenerationManifest } from '../../node-agent/store/store-records.js';
import { testedManifest } from '../../node-agent/collapses/tested-manifest.js';
import { copyAndHash, tenFileChange, type CollapseTarget } from './collapse.bench.js';
import { captureChange, deepenStack, stackOf } from './deep-stack.js';
import { median, percentile, settle } from './stats.js';
import type { WorldEnv } from './world-env.js';

export interface NodeCollapseSamples {
  /** rehashPrime (the prepare step's re-hash); the first at a size is a walk (nothing measured yet). */
  walkMs: number[];
  /** How many of them the PRIME watcher vouched for. */
  vouched: number;
  /** testedManifest: the next manifest of the candidate's delta and its digest (the prepare step's, kept for collapseRoot). */
  testedMs: number[];
  /** collapseRoot: stage + commit. */
  collapseMs: number[];
  /** publishOwnerEdits of a 10-path edit made through the host path. */
  ownerMs: number[];
  cpMs: number[];
  sha256sumMs: number[];
}

export const noNodeCollapseSamples = (): NodeCollapseSamples => ({ walkMs: [], vouched: 0, testedMs: [], collapseMs: [], ownerMs: [], cpMs: [], sha256sumMs: [] });

export async function nodeCollapseRound(env: WorldEnv, t: CollapseTarget, s: NodeCollapseSamples): Promise<void> {
  const rep = s.collapseMs.length;
  const { candidate, r } = await captureChange(env, t, rep, `collapse-${t.files}-${rep}`);

  settle();
  const t0 = performance.now();
  const { digest, source } = await rehashPrime(env.store, t.root);
  if (source.by === 'watcher') s.vouched++;
  const t1 = performance.now();
  if (digest !== r.baseDigest) throw new Error(`PRIME of ${t.root} does not walk clean to its base digest`);
  const delta = await readStoredDelta(candidate.dir, r.rootKey);
  const baseGen = getGeneration(env.store.db, r.rootKey, r.baseGeneration);
  const tt = performance.now();
  const tested = baseGen && testedManifest(env.store.db, baseGen.id, delta);
  const t1b = performance.now();
  if (!tested?.digest) throw new Error(`the candidate's delta of ${t.root} makes no valid next manifest`);
  s.testedMs.push(t1b - tt);
  const result = await collapseRoot(env.store, { rootName: t.root, candidateDir: candidate.dir, base: { generation: r.baseGeneration, digest: r.baseDigest } });
  const t2 = performance.now();
  if (result.toGeneration !== r.baseGeneration + 1) throw new Error(`collapse of ${t.root} went to generation ${result.toGeneration}`);
  s.walkMs.push(t1 - t0);
  s.collapseMs.push(t2 - t1b);

  const c = tenFileChange(t.files, rep);
  for (const p of [...c.modified, ...c.added]) writeFileSync(join(t.hostPath, p), `edited by the owner, round ${rep}\n`);
  settle();
  const t3 = performance.now();
  const owner = await publishOwnerEdits(env.store, t.root);
  s.ownerMs.push(performance.now() - t3);
  if (owner.generation !== result.toGeneration + 1 || owner.modified + owner.added !== 10) throw new Error(`the owner's edit of ${t.root} was not published as one 10-path generation: ${JSON.stringify(owner)}`);

  const b = copyAndHash(t.hostPath, [...c.modified, ...c.added], join(env.dir, 'copies'));
  s.cpMs.push(b.cpMs);
  s.sha256sumMs.push(b.sha256sumMs);
}

export interface NodeCollapseResult {
  files: number;
  runs: number;
  /** The first re-hash (a full walk: the Root was just adopted, nothing was measured). */
  firstRehashMs: number;
  /** The median of the later ones (vouched for when the watcher saw nothing). */
  walkMs: number;
  vouched: number;
  /** The median testedManifest at prepare (the next manifest and its digest). */
  testedMs: number;
  collapseMs: number;
  collapseP90Ms: number;
  /** The median of the prepare step's two (re-hash + tested manifest) plus collapseRoot, collapse by collapse. */
  prepareAndCollapseMs: number;
  ownerMs: number;
  cpMs: number;
  sha256sumMs: number;
}

export function nodeCollapseResult(files: number, s: NodeCollapseSamples): NodeCollapseResult {
  return {
    files,
    runs: s.collapseMs.length,
    firstRehashMs: s.walkMs[0] ?? NaN,
    walkMs: s.walkMs.length > 1 ? median(s.walkMs.slice(1)) : NaN,
    vouched: s.vouched,
    testedMs: median(s.testedMs),
    collapseMs: median(s.collapseMs),
    collapseP90Ms: percentile(s.collapseMs, 90),
    prepareAndCollapseMs: median(s.collapseMs.map((c, i) => c + s.walkMs[i]! + s.testedMs[i]!).slice(1)),
    ownerMs: median(s.ownerMs),
    cpMs: median(s.cpMs),
    sha256sumMs: median(s.sha256sumMs),
  };
}

export interface CompactionResult {
  files: number;
  /** The ordinary collapses (deep-stack.ts) that took the stack to MAX_STACK_DEPTH, and their median collapseRoot. */
  ordinary: number;
  ordinaryMs: number;
  /** collapseRoot of the compacting collapse, and its parts: to the payload built, to it walked, to the end. */
  compactionMs: number;
  buildMs: number;
  walkMs: number;
  commitMs: number;
  /** The new full generation's files: linked from the stack (unchanged) and copied from the candidate (the delta's). */
  linked: number;
  copied: number;
}

/** Takes the Root's stack to MAX_STACK_DEPTH with ordinary collapses, then times the collapse that compacts it. */
export async function nodeCompaction(env: WorldEnv, t: CollapseTarget): Promise<CompactionResult> {
  const ordinaryMs = await deepenStack(env, t, MAX_STACK_DEPTH);
  const { generation } = await stackOf(env.store, t.root);
  const { candidate, r } = await captureChange(env, t, generation + 1, `compaction-${t.files}`);
  const changed = new Set((await readStoredDelta(candidate.dir, r.rootKey)).upsert.map((e) => e.path));
  const at = new Map<CollapseStep, number>();
  settle();
  const t0 = performance.now();
  const result = await collapseRoot(env.store, { rootName: t.root, candidateDir: candidate.dir, base: { generation: r.baseGeneration, digest: r.baseDigest } }, {
    afterStep: (step) => void at.set(step, performance.now()),
  });
  const t1 = performance.now();
  const after = await stackOf(env.store, t.root);
  if (after.generation !== generation + 1 || after.depth !== 1) throw new Error(`the collapse onto ${MAX_STACK_DEPTH} layers of ${t.root} made a stack of ${after.depth}, not a full generation`);
  // What buildPayload did: every file of the manifest linked, but the delta's, which are copied.
  let linked = 0;
  let copied = 0;
  for (const e of getGenerationManifest(env.store.db, result.generationId)!.entries) {
    if (e.type === 'file' && changed.has(e.path)) copied++;
    else if (e.type === 'file') linked++;
  }
  const staged = at.get('after-stage')!;
  const verified = at.get('after-verify')!;
  return { files: t.files, ordinary: ordinaryMs.length, ordinaryMs: median(ordinaryMs), compactionMs: t1 - t0, buildMs: staged - t0, walkMs: verified - staged, commitMs: t1 - verified, linked, copied };
}

export interface BackgroundCompactionResult {
  files: number;
  /** The stack compacted (COMPACT_AT_DEPTH, or deeper when the rounds left it so) and the ordinary collapses' median. */
  depth: number;
  ordinaryMs: number;
  /** compactPrime: the whole of it, and its parts (build, sealed walk, PRIME re-measured), off any collapse's path. */
  totalMs: number;
  buildMs: number;
  walkMs: number;
  remeasureMs: number;
  linked: number;
  /** collapseRoot of the next collapse, stacked over the compaction, and the depth it made. */
  nextMs: number;
  nextDepth: number;
}

/** Takes the Root's stack to COMPACT_AT_DEPTH, compacts it as the agent does in the background, then times the collapse over it. */
export async function nodeBackgroundCompaction(env: WorldEnv, t: CollapseTarget): Promise<BackgroundCompactionResult> {
  const ordinaryMs = await deepenStack(env, t, Math.max(COMPACT_AT_DEPTH, (await stackOf(env.store, t.root)).depth));
  const { generation, depth } = await stackOf(env.store, t.root);
  settle();
  const t0 = performance.now();
  const o = await compactPrime(env.store, t.root);
  const totalMs = performance.now() - t0;
  if (o.outcome !== 'compacted') throw new Error(`the background compaction of ${t.root} at depth ${depth} did not compact: ${JSON.stringify(o)}`);
  const { candidate, r } = await captureChange(env, t, generation + 1, `bg-compaction-${t.files}`);
  settle();
  const t1 = performance.now();
  await collapseRoot(env.store, { rootName: t.root, candidateDir: candidate.dir, base: { generation: r.baseGeneration, digest: r.baseDigest } });
  const nextMs = performance.now() - t1;
  const after = await stackOf(env.store, t.root);
  if (after.depth !== 2) throw new Error(`the collapse over the compaction of ${t.root} made a stack of ${after.depth}, not 2`);
  return { files: t.files, depth, ordinaryMs: ordinaryMs.length > 0 ? median(ordinaryMs) : NaN, totalMs, buildMs: o.ms.build, walkMs: o.ms.walk, remeasureMs: o.ms.remeasure, linked: o.linked, nextMs, nextDepth: after.depth };
}
