// Settling collapses a crash interrupted, from the intent row and what is on disk alone. Fail-closed:
// PRIME ends exactly the base or exactly the new generation, never a mix.
//
// The rule: the single renameat2 decides. live/<rootKey> names the new generation -> the exchange
// happened; roll forward (record the rows) only when that generation's marker and its walk both give
// the intent's digest, else point live/ back at the base. live/<rootKey> names the base -> it never
// happened; remove the prepared link, the unrecorded generation and the staging directory. Anything
// else (the link missing or naming a third target) is left alone with its intent, reported as blocked.
import { lstat, readlink, rm } from 'node:fs/promises';
import { fsyncPath, pathKind, replaceSymlink } from '../store/durable-fs.js';
import { readMarker } from '../store/generation-marker.js';
import type { Store } from '../store/open-store.js';
import { errnoCode } from '../store/store-errors.js';
import { generationDir, liveLinkPath, liveLinkTarget, payloadDir } from '../store/store-layout.js';
import { deleteIntent, getGeneration, getRoot, insertGeneration, listIntents, upsertRoot } from '../store/store-records.js';
import { COLLAPSE_INTENT_KIND, nextLinkPath, type CollapseIntent } from './collapse-intent.js';
import { collapseWalk } from './collapse-walk.js';

export interface CollapseRecoveryOutcome {
  intentId: string;
  rootName: string;
  outcome: 'committed' | 'rolled-back' | 'blocked';
  message: string;
}

export async function recoverCollapses(store: Store): Promise<CollapseRecoveryOutcome[]> {
  const outcomes: CollapseRecoveryOutcome[] = [];
  for (const intent of listIntents<CollapseIntent>(store.db, COLLAPSE_INTENT_KIND)) {
    outcomes.push(await recoverCollapseIntent(store, intent.id, intent.data));
  }
  return outcomes;
}

async function readLinkOrNull(path: string): Promise<string | null> {
  try {
    return await readlink(path);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'EINVAL') return null;
    throw e;
  }
}

export async function recoverCollapseIntent(store: Store, id: string, i: CollapseIntent): Promise<CollapseRecoveryOutcome> {
  const result = (outcome: CollapseRecoveryOutcome['outcome'], message: string): CollapseRecoveryOutcome => ({ intentId: id, rootName: i.rootName, outcome, message });
  const liveLink = liveLinkPath(store.layout, i.rootKey);
  const current = await readLinkOrNull(liveLink);
  const baseTarget = liveLinkTarget(i.baseGenerationId);
  const newTarget = i.generationId ? liveLinkTarget(i.generationId) : undefined;

  if (newTarget !== undefined && current === newTarget && i.generationId && i.generation !== undefined && i.digest) {
    const marker = await readMarker(store.layout, i.generationId);
    const walk = (await pathKind(payloadDir(store.layout, i.generationId))) === 'dir' ? await collapseWalk(payloadDir(store.layout, i.generationId), store.dir) : undefined;
    const root = getRoot(store.db, i.rootName);
    if (
      root &&
      marker?.rootKey === i.rootKey &&
      marker.generation === i.generation &&
      marker.digest === i.digest &&
      walk &&
      walk.problems.length === 0 &&
      walk.digest === i.digest
    ) {
      await cleanup(store, i, { keepGeneration: true });
      const payload = await lstat(payloadDir(store.layout, i.generationId), { bigint: true });
      const now = store.now();
      const { generationId, generation, digest } = i;
      store.db.transaction(() => {
        insertGeneration(store.db, { id: generationId, rootKey: i.rootKey, number: generation, digest, payloadDev: String(payload.dev), payloadIno: String(payload.ino) }, walk.manifest, now);
        upsertRoot(store.db, { ...root, state: 'Ready', generation, digest, reason: null, message: null }, now);
        deleteIntent(store.db, id);
      })();
      return result('committed', `the exchange had happened; recorded generation ${generation}`);
    }
    // Published but not trustworthy: back to the base, which is exactly what the store still records.
    await replaceSymlink(liveLink, baseTarget);
    await cleanup(store, i, { keepGeneration: false });
    deleteIntent(store.db, id);
    return result('rolled-back', `generation ${i.generation} was published but its marker or content does not match; live/ points at the base again`);
  }
  if (current === baseTarget) {
    await cleanup(store, i, { keepGeneration: false });
    deleteIntent(store.db, id);
    return result('rolled-back', 'the exchange had not happened; removed what was staged');
  }
  return result('blocked', `${liveLink} points to ${current ?? 'nothing'}, neither the base nor the staged generation`);
}

/** Remove the prepared link, the staging directory and (unless kept, and only if never recorded) the new generation. */
async function cleanup(store: Store, i: CollapseIntent, o: { keepGeneration: boolean }): Promise<void> {
  await rm(nextLinkPath(store.layout, i.rootKey), { force: true });
  await fsyncPath(store.layout.live);
  await rm(i.staging, { recursive: true, force: true });
  await fsyncPath(store.layout.staging);
  if (!o.keepGeneration && i.generationId && i.generation !== undefined && getGeneration(store.db, i.rootKey, i.generation)?.id !== i.generationId) {
    await rm(generationDir(store.layout, i.generationId), { recursive: true, force: true });
    await fsyncPath(store.layout.generations);
  }
}
