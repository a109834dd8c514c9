// Committing a staged generation: the one step that changes PRIME. Serialized per store; at that boundary
// PRIME is walked again and must still be the base the candidate was captured from, the staged payload is
// walked again and must still be what was staged, and then one renameat2(RENAME_EXCHANGE) swaps a
// prepared link (live/.next-<rootKey>) with live/<rootKey>. The database follows in one transaction.
import { closeSync, constants as fsc, openSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import { RENAME_EXCHANGE, fsyncFd, renameat2 } from '../../native/index.js';
import { fsyncPath, pathKind } from '../store/durable-fs.js';
import { writeMarker } from '../store/generation-marker.js';
import type { Store } from '../store/open-store.js';
import { checkRouting } from '../store/routing.js';
import { isStoreError } from '../store/store-errors.js';
import { generationDir, liveLinkTarget, payloadDir } from '../store/store-layout.js';
import { deleteIntent, getRoot, insertGeneration, upsertRoot, type RootRecord } from '../store/store-records.js';
import { CollapseError } from './collapse-errors.js';
import { nextLinkName, nextLinkPath, type CollapseHooks } from './collapse-intent.js';
import { cleanDigest } from './collapse-walk.js';
import type { StagedGeneration } from './stage-generation.js';

/** The base a candidate was captured from: the generation number and PRIME's digest then. */
export interface ExpectedBase {
  generation: number;
  digest: string;
}

export interface CommitOptions {
  hooks?: CollapseHooks;
  /** The collapse intent to delete in the same transaction as the new rows. */
  intentId?: string;
  /**
   * The decision at the commit boundary: called with the boundary's re-hashes of live PRIME and of the
   * staged payload (undefined: the walk found a problem), immediately before the exchange; it throws to
   * refuse (PRIME is then left untouched).
   */
  authorize?: (hashes: { prime: string | undefined; staged: string | undefined }) => Promise<void> | void;
}

export interface CommitResult {
  root: RootRecord;
  fromGeneration: number;
  toGeneration: number;
  generationId: string;
  digest: string;
}

const chains = new Map<string, Promise<unknown>>();

/** Run `fn` after every earlier serialized call on the same store has settled. */
function serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const next = (chains.get(key) ?? Promise.resolve()).then(fn, fn);
  const settled = next.catch(() => undefined);
  chains.set(key, settled);
  void settled.then(() => {
    if (chains.get(key) === settled) chains.delete(key);
  });
  return next;
}

export function commitGeneration(store: Store, rootName: string, staged: StagedGeneration, expectedBase: ExpectedBase, options: CommitOptions = {}): Promise<CommitResult> {
  return serialized(store.dir, () => commitSerialized(store, rootName, staged, expectedBase, options));
}

async function commitSerialized(store: Store, rootName: string, staged: StagedGeneration, expectedBase: ExpectedBase, options: CommitOptions): Promise<CommitResult> {
  const step = async (s: Parameters<NonNullable<CollapseHooks['afterStep']>>[0]): Promise<void> => options.hooks?.afterStep?.(s);
  const root = getRoot(store.db, rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
  if (staged.rootKey !== root.rootKey || staged.baseGeneration !== expectedBase.generation || staged.baseDigest !== expectedBase.digest) {
    throw new CollapseError('CANDIDATE_INVALID', `the staged generation was not built on generation ${expectedBase.generation} of ${rootName}`);
  }
  if (root.generation !== expectedBase.generation || root.digest !== expectedBase.digest) {
    throw new CollapseError('PRIME_MOVED', `root ${rootName} is at generation ${root.generation}, not the candidate's base ${expectedBase.generation}`);
  }

  const genDir = generationDir(store.layout, staged.generationId);
  const newPayload = payloadDir(store.layout, staged.generationId);
  const liveFd = openSync(store.layout.live, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  let exchanged = false;
  try {
    // Into generations/<id> (a leftover of the same id, never recorded since the root is still at its base, goes first).
    if ((await pathKind(staged.payloadPath)) === 'dir') {
      await rm(genDir, { recursive: true, force: true });
      await mkdir(genDir, { mode: 0o700 });
      await rename(staged.payloadPath, newPayload);
      await rm(staged.stagingDir, { recursive: true, force: true });
      await fsyncPath(store.layout.staging);
    }
    await writeMarker(store.layout, staged.generationId, { rootKey: root.rootKey, generation: staged.generation, digest: staged.digest });
    await fsyncPath(genDir);
    await fsyncPath(store.layout.generations);
    await step('after-marker-sync');

    // The commit boundary: both walks immediately before the exchange.
    let primePath: string;
    try {
      primePath = (await checkRouting(store, rootName)).payloadPath;
    } catch (e) {
      if (isStoreError(e, 'LIVE_MAPPING_BROKEN')) throw new CollapseError('LIVE_MAPPING_BROKEN', e.message, { cause: e });
      throw e;
    }
    const primeNow = await cleanDigest(primePath, store.dir);
    const stagedNow = await cleanDigest(newPayload, store.dir);
    await options.authorize?.({ prime: primeNow, staged: stagedNow });
    if (primeNow !== expectedBase.digest) {
      throw new CollapseError('FOREIGN_WRITE', `PRIME of ${rootName} was written since the candidate was captured (it no longer has digest ${expectedBase.digest})`);
    }
    if (stagedNow !== staged.digest) {
      throw new CollapseError('STAGED_UNTESTED', `the staged payload of ${rootName} changed after it was verified`);
    }

    const next = nextLinkPath(store.layout, root.rootKey);
    await rm(next, { force: true });
    symlinkSync(liveLinkTarget(staged.generationId), next);
    fsyncFd(liveFd);
    await step('before-exchange');
    renameat2(liveFd, nextLinkName(root.rootKey), liveFd, root.rootKey, RENAME_EXCHANGE);
    exchanged = true;
    await step('after-exchange');
    if (readlinkSync(next) === liveLinkTarget(staged.baseGenerationId)) unlinkSync(next);
    fsyncFd(liveFd);
  } catch (e) {
    if (!exchanged) await undoBeforeExchange(store, staged).catch(() => undefined);
    throw e;
  } finally {
    closeSync(liveFd);
  }

  const payload = await lstat(newPayload, { bigint: true });
  const now = store.now();
  store.db.transaction(() => {
    insertGeneration(
      store.db,
      { id: staged.generationId, rootKey: root.rootKey, number: staged.generation, digest: staged.digest, payloadDev: String(payload.dev), payloadIno: String(payload.ino) },
      staged.manifest,
      now,
    );
    upsertRoot(store.db, { ...root, state: 'Ready', generation: staged.generation, digest: staged.digest, reason: null, message: null }, now);
    if (options.intentId) deleteIntent(store.db, options.intentId);
  })();
  await step('after-db');
  return { root: getRoot(store.db, rootName)!, fromGeneration: expectedBase.generation, toGeneration: staged.generation, generationId: staged.generationId, digest: staged.digest };
}

/** A refusal before the exchange: PRIME was never touched; remove what the commit prepared. */
async function undoBeforeExchange(store: Store, staged: StagedGeneration): Promise<void> {
  await rm(nextLinkPath(store.layout, staged.rootKey), { force: true });
  await rm(generationDir(store.layout, staged.generationId), { recursive: true, force: true });
  await rm(staged.stagingDir, { recursive: true, force: true });
  await fsyncPath(store.layout.live);
  await fsyncPath(store.layout.generations);
}

