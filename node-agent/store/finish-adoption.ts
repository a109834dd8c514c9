// The second half of an adoption, shared by adoptRoot and crash recovery. Every step is idempotent, so
// running it again after a crash at any point converges on the same end state: the payload under
// generations/<id>/payload with its marker, live/<root key> pointing at it, the host path a link to
// live/<root key>, the root and generation rows written and the intent gone.
import { lstat, mkdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { manifestDigest, type Manifest } from '../../core/manifest.js';
import { adoptPaths, type AdoptHooks, type AdoptIntent } from './adoption-intent.js';
import { fsyncDirectory, pathKind, replaceSymlink } from './durable-fs.js';
import { writeMarker } from './generation-marker.js';
import { sealFull } from './generation-stack.js';
import type { Store } from './open-store.js';
import { errnoCode } from './store-errors.js';
import { currentViewId, ensureView, linkView } from './owner-view.js';
import { liveLinkPath, liveLinkTarget, viewLinkPath, type StoreLayout } from './store-layout.js';
import { serializedOnStore } from './store-serial.js';
import { deleteIntent, getRoot, insertGeneration, upsertRoot, type RootRecord } from './store-records.js';
import { walkTree } from './walk-tree.js';

/** The tree at `path` walks without problems and has the intent's digest: its manifest, else undefined. */
export async function verifiedManifest(path: string, digest: string): Promise<Manifest | undefined> {
  const walk = await walkTree(path);
  if (walk.problems.length > 0 || manifestDigest(walk.manifest) !== digest) return undefined;
  return walk.manifest;
}

/**
 * True when hostPath is a symlink whose target is exactly the store's link for the Root: live/<root key>_view
 * (the owner's view, owner-view.ts), or live/<root key> as agents before views linked it.
 */
export async function hostRoutesToStore(hostPath: string, layout: StoreLayout, rootKey: string): Promise<boolean> {
  if ((await pathKind(hostPath)) !== 'symlink') return false;
  const target = await readlink(hostPath);
  return target === viewLinkPath(layout, rootKey) || target === liveLinkPath(layout, rootKey);
}

export async function finishAdoption(store: Store, id: string, intent: AdoptIntent, manifest: Manifest, hooks: AdoptHooks = {}): Promise<RootRecord> {
  const p = adoptPaths(store.layout, intent);
  if ((await pathKind(intent.staging)) === 'dir') {
    await mkdir(p.generationDir, { mode: 0o700 }).catch((e: unknown) => {
      if (errnoCode(e) !== 'EEXIST') throw e;
    });
    await rename(intent.staging, p.payload);
    await fsyncDirectory(store.layout.staging);
  }
  await writeMarker(store.layout, intent.generationId, { rootKey: intent.rootKey, generation: intent.generation, digest: intent.digest });
  await fsyncDirectory(p.generationDir);
  await fsyncDirectory(store.layout.generations);
  await hooks.afterStep?.('promoted');

  // Queued with collapse commits, which rebuild live/ as a whole (collapse/exchange-live.ts). The owner's
  // view of the adopted tree is mounted and linked before the host path links to it.
  await serializedOnStore(store.dir, async () => {
    await replaceSymlink(p.liveLink, liveLinkTarget(intent.generationId));
    const viewId = ensureView(store, intent.generationId, manifest.root);
    if (currentViewId(store.layout, intent.rootKey) !== viewId) linkView(store.layout, intent.rootKey, viewId);
    await fsyncDirectory(store.layout.live);
  });
  await hooks.afterStep?.('live-published');

  let state: RootRecord['state'] = 'Ready';
  let reason: string | null = null;
  let message: string | null = null;
  if (!(await hostRoutesToStore(intent.hostPath, store.layout, intent.rootKey))) {
    if ((await pathKind(intent.hostPath)) === 'missing') {
      await symlink(viewLinkPath(store.layout, intent.rootKey), intent.hostPath);
      await fsyncDirectory(dirname(intent.hostPath));
    } else {
      // Something took the host path while the tree was in the store: keep PRIME safe, report it broken.
      state = 'Broken';
      reason = 'LIVE_MAPPING_BROKEN';
      message = `${intent.hostPath} was occupied while the root was being adopted; its content is PRIME in the store, but the path does not route to it`;
    }
  }
  await hooks.afterStep?.('host-linked');

  if ((await pathKind(intent.detached)) !== 'missing') await rm(intent.detached, { recursive: true, force: true });
  const payload = await lstat(p.payload, { bigint: true });
  const now = store.now();
  const record = { name: intent.name, nodePath: intent.hostPath, rootKey: intent.rootKey, state, generation: intent.generation, digest: intent.digest, reason, message, objectUid: intent.objectUid ?? null };
  store.db.transaction(() => {
    const generation = { id: intent.generationId, rootKey: intent.rootKey, number: intent.generation, digest: intent.digest };
    insertGeneration(store.db, { ...generation, payloadDev: String(payload.dev), payloadIno: String(payload.ino) }, manifest, now);
    upsertRoot(store.db, record, now);
    deleteIntent(store.db, id);
  })();
  // Recorded, so sealed now: from here the host link ends on a read-only mount (a crash before this line is
  // sealed by the next open, remountPayloads). Before the record, a recovery may still move the tree back.
  sealFull(store.layout, intent.generationId);
  return getRoot(store.db, intent.name)!;
}
