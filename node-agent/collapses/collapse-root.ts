// A collapse from start to end, for one Root or several: plan each Root's next generation, write the
// intent (made durable by the commit's batch of fsyncs, before the exchange), stage each Root (from a
// candidate, or from a checkpoint for a return), verify, commit all in one exchange. From the intent row
// on, a crash is settled by recoverCollapses (recover-collapses.ts); a refusal is settled the same way at
// once.
import { randomUUID } from 'node:crypto';
import type { Store } from '../store/open-store.js';
import { getGeneration, getRoot, insertIntent } from '../store/store-records.js';
import { commitUnsynced } from '../store/unsynced-commit.js';
import { CollapseError } from './collapse-errors.js';
import { COLLAPSE_INTENT_KIND, stagingDirFor, type CollapseHooks, type CollapseSetIntent } from './collapse-intent.js';
import { commitGenerations, type CommitItem, type CommitOptions, type CommitResult, type ExpectedBase } from './commit-generation.js';
import { recoverCollapseIntent } from './recover-collapses.js';
import { planGeneration, stageGeneration, type GenerationPlan } from './stage-generation.js';
import { planReturn, stageReturn, type ReturnPlan } from './stage-return.js';
import { compactorOf } from './background-compaction.js';

export interface CollapseRootRequest {
  rootName: string;
  /** The candidate directory (candidates/<hex>) holding roots/<rootKey>.delta.json and the changed files. */
  candidateDir: string;
  /** The base the candidate was captured from (for a return: PRIME as the return starts from it). */
  base: ExpectedBase;
  /** A return to a checkpoint: the generation whose content becomes PRIME again (candidateDir is then unused). */
  returnTo?: number;
  /** The owner's own edits (owner-edits.ts): the owner's view stays (commit-generation.ts CommitItem.keepView). */
  keepView?: boolean;
}

export async function collapseRoot(store: Store, req: CollapseRootRequest, hooks: CollapseHooks = {}, authorize?: CommitOptions['authorize']): Promise<CommitResult> {
  return (await collapseRoots(store, [req], hooks, authorize))[0]!;
}

/** Collapses every request's Root in one exchange, or none. */
export async function collapseRoots(store: Store, reqs: readonly CollapseRootRequest[], hooks: CollapseHooks = {}, authorize?: CommitOptions['authorize']): Promise<CommitResult[]> {
  if (reqs.length === 0) throw new CollapseError('CANDIDATE_INVALID', 'a collapse needs at least one root');
  if (new Set(reqs.map((r) => r.rootName)).size !== reqs.length) throw new CollapseError('CANDIDATE_INVALID', 'a root is named twice in one collapse');
  const id = randomUUID();
  // Each Root's next generation planned first (nothing written): the intent names the generations it
  // may publish before anything is staged, so one durable write of it covers the whole collapse.
  const plans: (GenerationPlan | ReturnPlan)[] = [];
  const intent: CollapseSetIntent = { roots: [] };
  for (const [n, req] of reqs.entries()) {
    const root = getRoot(store.db, req.rootName);
    if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${req.rootName}`);
    if (root.generation !== req.base.generation || root.digest !== req.base.digest) {
      throw new CollapseError('PRIME_MOVED', `root ${req.rootName} is at generation ${root.generation}, not the candidate's base ${req.base.generation}`);
    }
    const base = getGeneration(store.db, root.rootKey, req.base.generation)!;
    const plan = req.returnTo !== undefined ? planReturn(store, req.rootName, req.base.generation, req.returnTo) : await planGeneration(store, req.rootName, req.candidateDir, req.base.generation);
    plans.push(plan);
    intent.roots.push({
      rootName: req.rootName,
      rootKey: root.rootKey,
      baseGeneration: base.number,
      baseGenerationId: base.id,
      baseDigest: base.digest,
      staging: stagingDirFor(store.layout, reqs.length === 1 ? id : `${id}-${n}`),
      generation: plan.generation,
      generationId: plan.generationId,
      digest: plan.digest,
    });
  }
  // Written, not fsynced here: the commit's batch of fsyncs syncs the WAL with the new generations, before the
  // exchange (commit-generation.ts). A power loss before that batch may lose the intent and leave what was
  // staged; nothing refers to it, and the sweep after recovery removes it (sweepCollapseLeftovers).
  commitUnsynced(store.db, () => insertIntent(store.db, id, COLLAPSE_INTENT_KIND, intent, store.now()));
  await hooks.afterStep?.('after-intent');
  try {
    const items: CommitItem[] = [];
    for (const [n, req] of reqs.entries()) {
      const options = { stagingDir: intent.roots[n]!.staging, hooks };
      const plan = plans[n]!;
      const staged = 'checkpoint' in plan ? await stageReturn(store, req.rootName, req.base.generation, req.returnTo!, { ...options, plan }) : await stageGeneration(store, req.rootName, req.candidateDir, req.base.generation, { ...options, plan });
      items.push({ rootName: req.rootName, staged, expectedBase: req.base, ...(req.keepView === true ? { keepView: true } : {}) });
    }
    const committed = await commitGenerations(store, items, { hooks, intentId: id, ...(authorize ? { authorize } : {}) });
    const compactor = compactorOf(store);
    for (const req of reqs) compactor?.request(req.rootName); // compacts when PRIME's stack is deep enough
    return committed;
  } catch (e) {
    // Settle now the way a restart would (it rolls back unless the exchange already happened).
    const outcome = await recoverCollapseIntent(store, id, intent).catch(() => undefined);
    if (outcome?.outcome === 'committed') {
      return intent.roots.map((r) => {
        const after = getRoot(store.db, r.rootName)!;
        return { root: after, fromGeneration: r.baseGeneration, toGeneration: after.generation, generationId: r.generationId!, digest: r.digest! };
      });
    }
    throw e;
  }
}
