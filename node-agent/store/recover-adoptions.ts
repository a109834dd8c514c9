// Settling adoptions a crash interrupted, from what is on disk and the intent row alone.
//
// The rule, in order:
//  - Copy mode (the original waits at the detached path): finish only if the host path already routes
//    to live/ and the generation's payload verifies; otherwise remove the copy and put the original back.
//    Until the host link exists, the original is the truth.
//  - Move mode: the tree is in exactly one of hostPath, staging, or the generation payload (renames are
//    atomic). Still at hostPath: nothing moved, drop the intent. In the store and its walk gives the
//    intent's digest: finish (marker, live link, host link, rows). In the store but changed: move it
//    back to hostPath.
//  - When the host path is occupied by something else and the tree cannot go back, nothing is moved and
//    the intent stays, reported as blocked, for an operator.
import { readlink, rename, rm, unlink } from 'node:fs/promises';
import { ADOPT_INTENT_KIND, adoptPaths, type AdoptIntent } from './adoption-intent.js';
import { pathKind } from './durable-fs.js';
import { finishAdoption, hostRoutesToStore, verifiedManifest } from './finish-adoption.js';
import type { Store } from './open-store.js';
import { currentViewId, dropView, viewIdOf } from './owner-view.js';
import { liveLinkTarget, viewLinkPath } from './store-layout.js';
import { deleteIntent, listIntents } from './store-records.js';

export interface RecoveryOutcome {
  intentId: string;
  name: string;
  outcome: 'completed' | 'rolled-back' | 'blocked';
  message: string;
}

export async function recoverAdoptions(store: Store): Promise<RecoveryOutcome[]> {
  const outcomes: RecoveryOutcome[] = [];
  for (const intent of listIntents<AdoptIntent>(store.db, ADOPT_INTENT_KIND)) {
    outcomes.push(await recoverIntent(store, intent.id, intent.data));
  }
  return outcomes;
}

export async function recoverIntent(store: Store, id: string, i: AdoptIntent): Promise<RecoveryOutcome> {
  const p = adoptPaths(store.layout, i);
  const result = (outcome: RecoveryOutcome['outcome'], message: string): RecoveryOutcome => ({ intentId: id, name: i.name, outcome, message });
  const routed = await hostRoutesToStore(i.hostPath, store.layout, i.rootKey);

  if ((await pathKind(i.detached)) !== 'missing') {
    const manifest = routed ? await verifiedManifest(p.payload, i.digest) : undefined;
    if (manifest) {
      await finishAdoption(store, id, i, manifest);
      return result('completed', 'the copy was linked in before the crash; finished it and removed the original');
    }
    if (!(routed || (await pathKind(i.hostPath)) === 'missing')) return result('blocked', `${i.hostPath} is occupied; the original is kept at ${i.detached}`);
    await undoStoreSide(store, i);
    if (routed) await unlink(i.hostPath);
    await rename(i.detached, i.hostPath);
    deleteIntent(store.db, id);
    return result('rolled-back', 'removed the partial copy and put the original back');
  }

  const location = (await pathKind(p.payload)) === 'dir' ? p.payload : (await pathKind(i.staging)) === 'dir' ? i.staging : undefined;
  if (!location) {
    if ((await pathKind(i.hostPath)) !== 'dir') return result('blocked', `the tree is neither at ${i.hostPath} nor in the store`);
    deleteIntent(store.db, id);
    return result('rolled-back', 'nothing had moved yet');
  }
  const manifest = await verifiedManifest(location, i.digest);
  if (manifest) {
    await finishAdoption(store, id, i, manifest);
    return result('completed', 'the tree was in the store unchanged; finished the adoption');
  }
  if (!(routed || (await pathKind(i.hostPath)) === 'missing')) return result('blocked', `${i.hostPath} is occupied; the changed tree stays at ${location}`);
  if (routed) await unlink(i.hostPath);
  await rename(location, i.hostPath);
  await undoStoreSide(store, i);
  deleteIntent(store.db, id);
  return result('rolled-back', 'the tree changed during adoption; moved it back to the host path');
}

/** Remove what the adoption created in the store: staging copy, generation directory, live link to it. */
async function undoStoreSide(store: Store, i: AdoptIntent): Promise<void> {
  const p = adoptPaths(store.layout, i);
  await rm(i.staging, { recursive: true, force: true });
  await rm(p.generationDir, { recursive: true, force: true });
  if ((await pathKind(p.liveLink)) === 'symlink' && (await readlink(p.liveLink)) === liveLinkTarget(i.generationId)) await unlink(p.liveLink);
  const viewId = viewIdOf(i.generationId);
  if (currentViewId(store.layout, i.rootKey) === viewId) await unlink(viewLinkPath(store.layout, i.rootKey));
  dropView(store.layout, viewId, { keepUpper: false });
}
