// Roots with deep stacks for the node-level benchmarks. A real World over the Root makes the 10-file change
// of collapse.bench.ts and is captured (captureChange); collapseRoot, as the node-agent commits, publishes
// it as the next layer; repeated until the Root's generation is a stack of the depth wanted (deepenStack).
// The depth is read from the generation's marker (stackOf): its layers, topmost first, down to the full
// generation at the bottom, which counts as one. The deepest stack a collapse publishes is MAX_STACK_DEPTH
// (node-agent/store/generation-stack.ts): at that depth the next collapse compacts into a full generation.
// (A return to a checkpoint that deep compacts it as well: stage-return.ts.)
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import type { Candidate } from '../../node-agent/store/candidates.js';
import { readMarker } from '../../node-agent/store/generation-marker.js';
import { MAX_STACK_DEPTH, stackIds } from '../../node-agent/store/generation-stack.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import type { WorldRunSpec } from '../../node-agent/worlds/run-world.js';
import { changeCommand, type CollapseTarget } from './collapse.bench.js';
import { settle } from './stats.js';
import type { WorldEnv } from './world-env.js';

/** An adopted Root and the depth of its current generation's stack (1: a full generation). */
export interface StackedRoot {
  root: string;
  depth: number;
}

/** A Root's current generation and the depth of its stack, as its marker lists the layers. */
export async function stackOf(store: Store, root: string): Promise<{ generation: number; depth: number }> {
  const route = await checkRouting(store, root);
  return { generation: route.root.generation, depth: stackIds(readMarker(store.layout, route.generationId), route.generationId).length };
}

/** Throws unless the run spec mounts exactly the layers of `s`: a number never silently measures a shallower stack. */
export function expectDepth(spec: WorldRunSpec, s: StackedRoot): void {
  const mounted = spec.roots[0]?.layers?.length ?? 1;
  if (mounted !== s.depth) throw new Error(`a World over ${s.root} mounts ${mounted} layers, expected ${s.depth}`);
}

/** A World (uid `worldUid`) makes the 10-file change of `rep` in the Root and is captured: the candidate and its Root's part. */
export async function captureChange(env: WorldEnv, t: CollapseTarget, rep: number, worldUid: string): Promise<{ candidate: Candidate; r: Candidate['roots'][number] }> {
  const spec = await env.spec(t.root, worldUid, changeCommand(t.files, rep));
  let candidate: Candidate | undefined;
  await env.run(spec, (e) => {
    if (e.type === 'captured') candidate = e.candidate;
  });
  const r = candidate?.roots[0];
  if (!candidate || !r || candidate.modified !== 5 || candidate.added !== 5 || candidate.deleted !== 0) {
    throw new Error(`the world did not capture the 10-file change: ${JSON.stringify(candidate)}`);
  }
  return { candidate, r };
}

/**
 * Collapses one captured change after another into the Root until its generation's stack is `depth` deep
 * (at most MAX_STACK_DEPTH), each change tagged by the generation it makes, so no two add the same path.
 * Returns each collapseRoot's time, ms; checks every step's depth on the new generation's marker.
 */
export async function deepenStack(env: WorldEnv, t: CollapseTarget, depth: number): Promise<number[]> {
  if (depth > MAX_STACK_DEPTH) throw new Error(`no stack is deeper than MAX_STACK_DEPTH (${MAX_STACK_DEPTH}): the collapse onto it compacts`);
  const collapseMs: number[] = [];
  for (let at = await stackOf(env.store, t.root); at.depth < depth; ) {
    const { candidate, r } = await captureChange(env, t, at.generation + 1, `stack-${t.root}-${at.generation + 1}`);
    settle();
    const t0 = performance.now();
    await collapseRoot(env.store, { rootName: t.root, candidateDir: candidate.dir, base: { generation: r.baseGeneration, digest: r.baseDigest } });
    collapseMs.push(performance.now() - t0);
    const next = await stackOf(env.store, t.root);
    if (next.generation !== at.generation + 1 || next.depth !== at.depth + 1) throw new Error(`a collapse onto ${t.root} at depth ${at.depth} made generation ${next.generation} with a stack of ${next.depth}`);
    at = next;
  }
  const reached = await stackOf(env.store, t.root);
  if (reached.depth !== depth) throw new Error(`${t.root} is a stack of ${reached.depth}, not ${depth}`);
  return collapseMs;
}
