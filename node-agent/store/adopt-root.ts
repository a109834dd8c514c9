// Adopting a host directory as a Root: its content becomes generation 1 in the store, live/<root key>
// points at it, and the host path becomes a link that routes through live/.
//
// Every refusal before the move leaves the host directory and the store as they were. From the intent
// row on, a crash is finished or undone by recoverAdoptions (recover-adoptions.ts), deterministically.
import { randomUUID } from 'node:crypto';
import { readlink, realpath, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { manifestDigest } from '../../core/manifest.js';
import { generationIdFor, isValidRootName, rootKeyFor } from '../../core/root-key.js';
import { ADOPT_INTENT_KIND, adoptIntentFor, type AdoptHooks, type AdoptIntent } from './adoption-intent.js';
import { copyTree } from './copy-tree.js';
import { fsyncDirectory, pathKind } from './durable-fs.js';
import { finishAdoption, verifiedManifest } from './finish-adoption.js';
import type { Store } from './open-store.js';
import { recoverIntent } from './recover-adoptions.js';
import { checkRouting } from './routing.js';
import { StoreError, errnoCode } from './store-errors.js';
import { liveLinkPath } from './store-layout.js';
import { deleteIntent, getRoot, getRootByPath, insertIntent, type RootRecord } from './store-records.js';
import { walkTree } from './walk-tree.js';

export interface AdoptRootRequest {
  name: string;
  hostPath: string;
  /** metadata.uid of the Root object this adoption is for, recorded with the root (see roots/root-binding.ts). */
  objectUid?: string;
}

export async function adoptRoot(store: Store, req: AdoptRootRequest, hooks: AdoptHooks = {}): Promise<RootRecord> {
  const { name, hostPath, objectUid } = req;
  if (!isValidRootName(name)) throw new StoreError('ROOT_NAME_INVALID', `${JSON.stringify(name)} is not a DNS-1123 subdomain`);
  if (!isAbsolute(hostPath) || resolve(hostPath) !== hostPath || hostPath === '/') {
    throw new StoreError('ROOT_PATH_INVALID', `${JSON.stringify(hostPath)} must be an absolute, normalized path other than /`);
  }
  const rootKey = rootKeyFor(name);
  const existing = getRoot(store.db, name);
  // A root released earlier (release-root.ts) is history: the directory is adopted afresh, numbered after it.
  const released = existing?.state === 'Released' ? existing : undefined;
  if (existing && !released) {
    if (existing.nodePath !== hostPath) throw new StoreError('ROOT_ALREADY_ADOPTED', `root ${name} is already adopted from ${existing.nodePath}`);
    await checkRouting(store, name); // idempotent: already adopted here, and still routed
    return existing;
  }
  const other = getRootByPath(store.db, hostPath);
  if (other && other.name !== released?.name) {
    const how = other.state === 'Released' ? `was released from root ${other.name}, whose history keeps the path; adopt it again under that name` : `is already adopted as root ${other.name}`;
    throw new StoreError('ROOT_ALREADY_ADOPTED', `${hostPath} ${how}`);
  }

  const kind = await pathKind(hostPath);
  if (kind === 'missing') throw new StoreError('ROOT_PATH_MISSING', `${hostPath} does not exist`);
  if (kind === 'symlink') {
    const target = await readlink(hostPath);
    const hint = target === liveLinkPath(store.layout, rootKey) ? ' (it names this root in the store, but the store has no record of it)' : '';
    throw new StoreError('ROOT_PATH_IS_LINK', `${hostPath} is a symlink to ${target}${hint}; adopt a real directory`);
  }
  if (kind !== 'dir') throw new StoreError('ROOT_PATH_NOT_DIRECTORY', `${hostPath} is not a directory`);
  const real = await realpath(hostPath);
  if (real === store.dir || store.dir.startsWith(`${real}/`) || real.startsWith(`${store.dir}/`)) {
    throw new StoreError('ROOT_PATH_UNSUPPORTED', `${hostPath} and the store ${store.dir} overlap`);
  }

  const walk = await walkTree(hostPath);
  if (walk.root.isMountPoint) throw new StoreError('ROOT_PATH_UNSUPPORTED', `${hostPath} is a mount point and cannot be moved into the store`);
  const first = walk.problems[0];
  if (first) {
    const more = walk.problems.length > 1 ? ` (and ${walk.problems.length - 1} more)` : '';
    throw new StoreError(first.code, `${hostPath}/${first.path}: ${first.message}${more}`);
  }
  const digest = manifestDigest(walk.manifest);
  const generation = released ? released.generation + 1 : 1;
  const id = randomUUID();
  const intent = adoptIntentFor(store.layout, id, { name, hostPath, rootKey, generationId: generationIdFor(rootKey, generation, digest), digest, generation, ...(objectUid ? { objectUid } : {}) });
  insertIntent(store.db, id, ADOPT_INTENT_KIND, intent, store.now());
  await hooks.afterStep?.('intent-recorded');

  try {
    await moveIntoStaging(intent, hooks);
    await hooks.afterStep?.('verified');
    const adopted = await finishAdoption(store, id, intent, walk.manifest, hooks);
    if (adopted.state !== 'Ready') throw new StoreError('LIVE_MAPPING_BROKEN', adopted.message ?? `root ${name} is ${adopted.state}`);
    return adopted;
  } catch (e) {
    if (e instanceof StoreError) throw e;
    // An unexpected failure mid-way: settle it now the way a restart would, then report the failure.
    const outcome = await recoverIntent(store, id, intent).catch(() => undefined);
    if (outcome?.outcome === 'completed') return getRoot(store.db, name)!;
    throw e;
  }

  /** Move the tree into staging (or copy it there across filesystems) and check it arrived unchanged. */
  async function moveIntoStaging(i: AdoptIntent, h: AdoptHooks): Promise<void> {
    try {
      await rename(i.hostPath, i.staging);
    } catch (e) {
      if (errnoCode(e) !== 'EXDEV') throw e;
      return copyIntoStaging(i, h);
    }
    await fsyncDirectory(dirname(i.hostPath));
    await fsyncDirectory(store.layout.staging);
    await h.afterStep?.('moved');
    if (!(await verifiedManifest(i.staging, i.digest))) {
      await rename(i.staging, i.hostPath);
      deleteIntent(store.db, id);
      throw new StoreError('ROOT_CHANGED_DURING_ADOPTION', `${i.hostPath} changed while it was being adopted; it was moved back unchanged`);
    }
  }

  async function copyIntoStaging(i: AdoptIntent, h: AdoptHooks): Promise<void> {
    await rename(i.hostPath, i.detached); // same directory: never EXDEV; nobody writes through hostPath now
    await fsyncDirectory(dirname(i.hostPath));
    await copyTree(i.detached, i.staging, walk.manifest);
    await h.afterStep?.('moved');
    if (!(await verifiedManifest(i.detached, i.digest)) || !(await verifiedManifest(i.staging, i.digest))) {
      await rm(i.staging, { recursive: true, force: true });
      await rename(i.detached, i.hostPath);
      deleteIntent(store.db, id);
      throw new StoreError('ROOT_CHANGED_DURING_ADOPTION', `${i.hostPath} changed while it was being copied into the store; the original was put back`);
    }
  }
}
