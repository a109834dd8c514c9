// Releasing a Root (its object deleted with spec.onDelete Release): PRIME goes back to the host path as a
// plain directory with its owners and modes (as copy-tree.ts keeps them), and the store keeps the root's
// row (state Released), its generations and the receipts as history.
//
// Order, each step durable before the next:
//  1. beginRelease: the row is marked Releasing, queued with collapse commits (store-serial.ts), so no commit
//     is in flight and every later one, every fork and every check finds ROOT_RELEASING (routing.ts);
//  2. an intent row (release-intent.ts);
//  3. PRIME is copied beside the host path and the copy walked: it must have the digest PRIME walked to;
//  4. one renameat2(RENAME_EXCHANGE) swaps the copy and the host link: the host path is the plain directory,
//     the copy's name holds the old link, which is removed;
//  5. live/<root key> is removed and, in one transaction, the row marked Released and the intent deleted.
// A crash at any step is settled at start by recoverReleases (release-recovery.ts).
import { randomUUID } from 'node:crypto';
import { closeSync, constants as fsc, openSync } from 'node:fs';
import { rm, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { RENAME_EXCHANGE, fsyncFd, renameat2 } from '../../native/index.js';
import { copyTree } from './copy-tree.js';
import { fsyncDirectory, pathKind } from './durable-fs.js';
import { hostRoutesToStore, verifiedManifest } from './finish-adoption.js';
import { currentViewId, dropView, freezeView, isViewMounted, viewPaths, viewsOfRoot } from './owner-view.js';
import type { Store } from './open-store.js';
import { RELEASE_INTENT_KIND, releaseIntentFor, type ReleaseHooks, type ReleaseIntent } from './release-intent.js';
import { StoreError } from './store-errors.js';
import { liveLinkPath, payloadDir, viewLinkPath } from './store-layout.js';
import { unmountRootStacks } from './generation-stack.js';
import { serializedOnStore } from './store-serial.js';
import { deleteIntent, getGeneration, getRoot, insertIntent, listIntents, setRootState, type RootRecord } from './store-records.js';
import { collapseWalk } from './store-walk.js';

/**
 * Marks the root Releasing (idempotent), after every collapse commit queued before it. Returns the row, or
 * undefined when the store has no root of that name. A root Adopting or Broken in the store is not marked:
 * its host path may not route to PRIME, and releasing it is refused by releaseRoot.
 */
export function beginRelease(store: Store, name: string): Promise<RootRecord | undefined> {
  return serializedOnStore(store.dir, () => {
    const root = getRoot(store.db, name);
    if (root?.state === 'Ready') {
      setRootState(store.db, name, 'Releasing', 'ROOT_RELEASING', `root ${name} is being released to ${root.nodePath}`, store.now());
    }
    return Promise.resolve(getRoot(store.db, name));
  });
}

/** The pending release intent of a root, if a crash left one. */
export function pendingRelease(store: Store, name: string): { id: string; data: ReleaseIntent } | undefined {
  return listIntents<ReleaseIntent>(store.db, RELEASE_INTENT_KIND).find((i) => i.data.name === name);
}

export async function releaseRoot(store: Store, name: string, hooks: ReleaseHooks = {}): Promise<RootRecord> {
  const root = await beginRelease(store, name);
  if (!root) throw new StoreError('ROOT_NOT_FOUND', `no root named ${name} in the store at ${store.dir}`);
  if (root.state === 'Released') return root;
  if (root.state !== 'Releasing') throw new StoreError('ROOT_RELEASE_BLOCKED', `root ${name} is ${root.state} in the store (${root.reason ?? 'no reason'}); only a Ready root is released`);
  if (pendingRelease(store, name)) throw new StoreError('ROOT_RELEASE_BLOCKED', `root ${name} has an interrupted release; the node-agent settles it at start`);
  const gen = getGeneration(store.db, root.rootKey, root.generation);
  if (!gen) throw new StoreError('LIVE_MAPPING_BROKEN', `root ${name}: generation ${root.generation} is not recorded`);
  if (!(await hostRoutesToStore(root.nodePath, store.layout, root.rootKey))) {
    throw new StoreError('ROOT_RELEASE_BLOCKED', `${root.nodePath} is not the link to ${viewLinkPath(store.layout, root.rootKey)}; nothing was released`);
  }
  // What the host path shows: the owner's view (PRIME and any owner edit not yet published), frozen read-only
  // so nothing more is written to it; PRIME itself for a store without one. A foreign write is included.
  const viewId = currentViewId(store.layout, root.rootKey);
  const viewed = viewId !== undefined && isViewMounted(store.layout, viewId);
  if (viewed && !freezeView(store.layout, viewId)) {
    throw new StoreError('ROOT_RELEASE_BLOCKED', `the owner of root ${name} has a file in ${root.nodePath} open for writing; nothing was released (it is tried again)`);
  }
  const payload = viewed ? viewPaths(store.layout, viewId).merged : payloadDir(store.layout, gen.id);
  // The store's walk: a generation shares unchanged files with older ones by hard link (store-walk.ts).
  const walk = await collapseWalk(payload, store.dir);
  const first = walk.problems[0];
  if (first) throw new StoreError('ROOT_RELEASE_BLOCKED', `PRIME of ${name} does not walk cleanly (${first.code} at ${first.path}); nothing was released`);
  const id = randomUUID();
  const intent = releaseIntentFor(id, { name, hostPath: root.nodePath, rootKey: root.rootKey, generationId: gen.id, generation: root.generation, digest: walk.digest });
  insertIntent(store.db, id, RELEASE_INTENT_KIND, intent, store.now());
  await hooks.afterStep?.('intent-recorded');

  await rm(intent.copy, { recursive: true, force: true });
  await copyTree(payload, intent.copy, walk.manifest);
  await fsyncDirectory(dirname(intent.copy));
  if (!(await verifiedManifest(intent.copy, intent.digest))) {
    await rm(intent.copy, { recursive: true, force: true });
    deleteIntent(store.db, id);
    throw new StoreError('ROOT_RELEASE_BLOCKED', `the copy of PRIME of ${name} did not verify (digest ${intent.digest}); it was removed and nothing was released`);
  }
  await hooks.afterStep?.('copied');

  exchangeWithHostLink(intent);
  await hooks.afterStep?.('exchanged');
  return finishRelease(store, id, intent, hooks);
}

/** Swaps the copy and the host path's link in one renameat2: the host path becomes the plain directory. */
export function exchangeWithHostLink(i: ReleaseIntent): void {
  const parent = dirname(i.hostPath);
  const fd = openSync(parent, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    renameat2(fd, basename(i.copy), fd, basename(i.hostPath), RENAME_EXCHANGE);
    fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/** After the exchange (idempotent): drop the old link, live/<root key> and the views, then mark the row Released. */
export async function finishRelease(store: Store, id: string, i: ReleaseIntent, hooks: ReleaseHooks = {}): Promise<RootRecord> {
  const liveLink = liveLinkPath(store.layout, i.rootKey);
  const viewLink = viewLinkPath(store.layout, i.rootKey);
  if ((await pathKind(i.copy)) === 'symlink') await unlink(i.copy);
  else if ((await pathKind(i.copy)) !== 'missing') await rm(i.copy, { recursive: true, force: true });
  await fsyncDirectory(dirname(i.hostPath));
  await serializedOnStore(store.dir, async () => {
    if ((await pathKind(liveLink)) === 'symlink') await unlink(liveLink);
    if ((await pathKind(viewLink)) === 'symlink') await unlink(viewLink);
    await fsyncDirectory(store.layout.live);
  });
  for (const v of viewsOfRoot(store.layout, i.rootKey)) dropView(store.layout, v, { keepUpper: false }); // released as the copy
  unmountRootStacks(store, i.rootKey); // the history stays in the store as layers, read by nobody
  store.db.transaction(() => {
    setRootState(store.db, i.name, 'Released', 'ROOT_RELEASED', `generation ${i.generation} (${i.digest}) was released to ${i.hostPath} as a plain directory; its history stays in the store`, store.now());
    deleteIntent(store.db, id);
  })();
  await hooks.afterStep?.('released');
  return getRoot(store.db, i.name)!;
}
