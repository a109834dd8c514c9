// One root's collapse from start to end: intent, stage, verify, commit. From the intent row on, a crash
// is settled by recoverCollapses (recover-collapses.ts); a refusal is settled the same way at once.
import { randomUUID } from 'node:crypto';
import type { Store } from '../store/open-store.js';
import { getGeneration, getRoot, insertIntent, updateIntent } from '../store/store-records.js';
import { CollapseError } from './collapse-errors.js';
import { COLLAPSE_INTENT_KIND, stagingDirFor, type CollapseHooks, type CollapseIntent } from './collapse-intent.js';
import { commitGeneration, type CommitOptions, type CommitResult, type ExpectedBase } from './commit-generation.js';
import { recoverCollapseIntent } from './recover-collapses.js';
import { stageGeneration } from './stage-generation.js';

export interface CollapseRootRequest {
  rootName: string;
  /** The candidate directory (candidates/<hex>) holding roots/<rootKey>.delta.json and the changed files. */
  candidateDir: string;
  /** The base the candidate was captured from. */
  base: ExpectedBase;
}

export async function collapseRoot(store: Store, req: CollapseRootRequest, hooks: CollapseHooks = {}, authorize?: CommitOptions['authorize']): Promise<CommitResult> {
  const root = getRoot(store.db, req.rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${req.rootName}`);
  if (root.generation !== req.base.generation || root.digest !== req.base.digest) {
    throw new CollapseError('PRIME_MOVED', `root ${req.rootName} is at generation ${root.generation}, not the candidate's base ${req.base.generation}`);
  }
  const base = getGeneration(store.db, root.rootKey, req.base.generation)!;
  const id = randomUUID();
  let intent: CollapseIntent = {
    rootName: req.rootName,
    rootKey: root.rootKey,
    baseGeneration: base.number,
    baseGenerationId: base.id,
    baseDigest: base.digest,
    staging: stagingDirFor(store.layout, id),
  };
  insertIntent(store.db, id, COLLAPSE_INTENT_KIND, intent, store.now());
  await hooks.afterStep?.('after-intent');
  try {
    const staged = await stageGeneration(store, req.rootName, req.candidateDir, req.base.generation, { stagingDir: intent.staging, hooks });
    intent = { ...intent, generation: staged.generation, generationId: staged.generationId, digest: staged.digest };
    updateIntent(store.db, id, intent); // before anything of it enters generations/
    return await commitGeneration(store, req.rootName, staged, req.base, { hooks, intentId: id, ...(authorize ? { authorize } : {}) });
  } catch (e) {
    // Settle now the way a restart would (it rolls back unless the exchange already happened).
    const outcome = await recoverCollapseIntent(store, id, intent).catch(() => undefined);
    const after = getRoot(store.db, req.rootName);
    if (outcome?.outcome === 'committed' && after && intent.generationId && intent.digest) {
      return { root: after, fromGeneration: req.base.generation, toGeneration: after.generation, generationId: intent.generationId, digest: intent.digest };
    }
    throw e;
  }
}
