// Committing staged generations: the one step that changes PRIME. Serialized per store; at that
// boundary every Root's live PRIME is walked again and must still be the base its candidate was captured
// from, every staged payload is walked again and must still be what was staged, the caller's decision
// runs on those re-hashes, and then one renameat2(RENAME_EXCHANGE) swaps the whole live mapping
// (exchange-live.ts) — all the Roots of the collapse at once. The database follows in one transaction.
import { lstatSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { lstat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirectory, fsyncPaths } from '../store/durable-fs.js';
import { placeMarker } from '../store/generation-marker.js';
import type { Store } from '../store/open-store.js';
import { checkRouting, type Routing } from '../store/routing.js';
import { isStoreError } from '../store/store-errors.js';
import { serializedOnStore } from '../store/store-serial.js';
import { commitUnsynced, walPathOf } from '../store/unsynced-commit.js';
import { generationDir, liveLinkTarget, payloadDir, viewLinkName, viewLinkTarget } from '../store/store-layout.js';
import { dropView, ensureView, freezeView, thawView, viewIdOf, viewWatchKey } from '../store/owner-view.js';
import { unpublishedEdits } from '../store/view-measure.js';
import { deleteIntent, generationDigest, getGeneration, getRoot, insertGeneration, upsertRoot, type RootRecord } from '../store/store-records.js';
import { retirePayload, retireReplaced, sealPrimeReads } from '../store/payload-holds.js';
import { CollapseError } from './collapse-errors.js';
import { nextLinkPath, type CollapseHooks } from './collapse-intent.js';
import { cleanDigests } from '../store/store-walk.js';
import type { MeasureStart, PrimeSource } from '../store/prime-measures.js';
import { buildNextMapping, exchangeNextMapping, removeNextMapping } from './exchange-live.js';
import { identityDir, layerDir, mountPayload, removeGeneration, sealFull, stackDirs } from '../store/generation-stack.js';
import { layerMismatch } from './stage-layer.js';
import type { StagedGeneration } from './stage-generation.js';

/** The base a candidate was captured from: the generation number and PRIME's digest then. */
export interface ExpectedBase {
  generation: number;
  digest: string;
}

/** The boundary's re-hashes per Root name (undefined: the walk found a problem). */
export interface BoundaryHashes {
  prime: Map<string, string | undefined>;
  /** How each PRIME re-hash was obtained: walked here, or a recorded walk the watcher vouches for. */
  primeSources: Map<string, PrimeSource>;
  staged: Map<string, string | undefined>;
}

export interface CommitOptions {
  hooks?: CollapseHooks;
  /** The collapse intent to delete in the same transaction as the new rows. */
  intentId?: string;
  /**
   * The decision at the commit boundary: called with the boundary's re-hashes of live PRIME and of the
   * staged payloads, immediately before the exchange; it throws to refuse (PRIME is then untouched).
   */
  authorize?: (hashes: BoundaryHashes) => Promise<void> | void;
}

export interface CommitResult {
  root: RootRecord;
  fromGeneration: number;
  toGeneration: number;
  generationId: string;
  digest: string;
}

export interface CommitItem {
  rootName: string;
  staged: StagedGeneration;
  expectedBase: ExpectedBase;
  /**
   * The owner's own edits being published (owner-edits.ts): the owner's view stays as it is (it shows them
   * already). Any other collapse replaces the view, in the same exchange, with one of the new generation.
   */
  keepView?: boolean;
}

export function commitGeneration(store: Store, rootName: string, staged: StagedGeneration, expectedBase: ExpectedBase, options: CommitOptions = {}): Promise<CommitResult> {
  return commitGenerations(store, [{ rootName, staged, expectedBase }], options).then((r) => r[0]!);
}

/** Commits every item in one exchange, or none. */
export function commitGenerations(store: Store, items: readonly CommitItem[], options: CommitOptions = {}): Promise<CommitResult[]> {
  return serializedOnStore(store.dir, () => commitSerialized(store, items, options));
}

async function commitSerialized(store: Store, items: readonly CommitItem[], options: CommitOptions): Promise<CommitResult[]> {
  const step = async (s: Parameters<NonNullable<CollapseHooks['afterStep']>>[0]): Promise<void> => options.hooks?.afterStep?.(s);
  if (items.length === 0) throw new CollapseError('CANDIDATE_INVALID', 'a commit needs at least one root');
  const roots = new Map<string, RootRecord>();
  for (const { rootName, staged, expectedBase } of items) {
    const root = getRoot(store.db, rootName);
    if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
    if (staged.rootKey !== root.rootKey || staged.baseGeneration !== expectedBase.generation || staged.baseDigest !== expectedBase.digest) {
      throw new CollapseError('CANDIDATE_INVALID', `the staged generation was not built on generation ${expectedBase.generation} of ${rootName}`);
    }
    if (root.generation !== expectedBase.generation || root.digest !== expectedBase.digest) {
      throw new CollapseError('PRIME_MOVED', `root ${rootName} is at generation ${root.generation}, not the candidate's base ${expectedBase.generation}`);
    }
    roots.set(rootName, root);
  }

  let exchanged = false;
  // What the commit replaced, unmounted once it is recorded (retireAfterCommit).
  const retire: (() => void)[] = [];
  // The new generations' measurements, begun (their layers watched) before the boundary checks them.
  const starts = new Map<string, MeasureStart>();
  // Owners' views frozen for this exchange, and the views made of the new generations.
  const frozen: string[] = [];
  const made = new Map<string, string>();
  // The batch of fsyncs below, awaited before the exchange (and before undoing a refusal).
  let durable: Promise<void> | undefined;
  try {
    // Everything the exchange will make PRIME depend on is written first and made durable by one batch of
    // fsyncs (the filesystem's journal commits them at once): each generation's own layer (its files and
    // directories, written unsynced by the staging), its directory with its marker, staging/ and
    // generations/, live.next/, and the database's WAL (the intent). Until the exchange nothing refers to
    // any of it: a crash before the batch completes is rolled back like any crash before the exchange,
    // whatever part reached the disk (and what a lost intent leaves is swept: sweepCollapseLeftovers).
    // The batch runs on the thread pool while the boundary measures (reads of the page cache, mounts, the
    // watcher's drains: no fsync of their own to queue behind it), and the exchange waits for it.
    const published: string[] = [];
    const links = new Map<string, string>();
    for (const { staged, keepView } of items) {
      // Into generations/<id> (a leftover of the same id, never recorded since the root is still at its base, goes first).
      const genDir = generationDir(store.layout, staged.generationId);
      // A full payload or a stacked generation's own layer moves in from staging.
      const own = staged.layer ? layerDir(store.layout, staged.generationId) : payloadDir(store.layout, staged.generationId);
      // Metadata steps on the store's filesystem, made synchronously (each is a few µs of the kernel's; on
      // the thread pool each would cost a round trip of the event loop).
      if (lstatSync(staged.payloadPath, { throwIfNoEntry: false })?.isDirectory() === true) {
        if (lstatSync(genDir, { throwIfNoEntry: false }) !== undefined) await removeGeneration(store.layout, staged.generationId);
        mkdirSync(genDir, { mode: 0o700 });
        renameSync(staged.payloadPath, own);
        rmSync(staged.stagingDir, { recursive: true, force: true });
        for (const rel of staged.unsynced ?? []) published.push(rel === '' ? own : join(own, rel));
      }
      published.push(placeMarker(store.layout, staged.generationId, { rootKey: staged.rootKey, generation: staged.generation, digest: staged.digest, ...(staged.layers ? { layers: staged.layers } : {}) }), genDir);
      links.set(staged.rootKey, liveLinkTarget(staged.generationId));
      // The owner's view of the new generation, made at the boundary below (unless the owner's own view stays).
      if (keepView !== true) links.set(viewLinkName(staged.rootKey), viewLinkTarget(viewIdOf(staged.generationId)));
    }
    const nextMapping = buildNextMapping(store.layout, links);
    // The WAL too: the collapse's intent was committed unsynced (collapse-root.ts), and recovery needs it
    // from the exchange on.
    durable = fsyncPaths([...published, store.layout.staging, store.layout.generations, nextMapping, walPathOf(store.layout.database)]);
    durable.catch(() => undefined); // its failure is met where it is awaited
    for (const { staged } of items) {
      await step('after-layer-publish');
      mountPayload(store.layout, staged.generationId, staged.layers ? { layers: staged.layers } : undefined); // a stack, or a compaction's seal
      // The full tree at the bottom of a stack is sealed while PRIME reads it (payload-holds.ts): a return to
      // a checkpoint may stack over one that no longer was.
      if (staged.layers) sealFull(store.layout, staged.layers[staged.layers.length - 1]!);
    }
    await step('after-marker-sync');

    // The commit boundary: every measurement immediately before the exchange — live PRIME and the staged
    // payload of each Root. PRIME is walked (one pass that reads each shared inode once) unless the watcher
    // vouches that nothing changed under its layers since a recorded walk.
    const routes: Routing[] = [];
    for (const { rootName, staged } of items) {
      try {
        routes.push(await checkRouting(store, rootName));
      } catch (e) {
        if (isStoreError(e, 'LIVE_MAPPING_BROKEN')) throw new CollapseError('LIVE_MAPPING_BROKEN', e.message, { cause: e });
        throw e;
      }
      // The new generation's layers are watched, and their state taken, before anything checks them.
      starts.set(rootName, store.primeMeasures.begin(staged.layers ? stackDirs(store.layout, staged.layers) : [payloadDir(store.layout, staged.generationId)]));
    }
    // The owners' views the exchange replaces: frozen read-only first (nothing more is written through them),
    // then required to hold nothing PRIME does not. An owner's edit not yet published came before this
    // boundary: it is published as its own generation, and this candidate's base is then not PRIME.
    for (const [n, item] of items.entries()) {
      if (item.keepView === true) continue;
      const viewId = routes[n]!.viewId;
      if (!freezeView(store.layout, viewId)) {
        throw new CollapseError('PRIME_MOVED', `the owner of root ${item.rootName} has a file of it open for writing: their edits come first; the candidate's base would not be PRIME`);
      }
      frozen.push(viewId);
      const pending = await unpublishedEdits(store, roots.get(item.rootName)!, viewId);
      if (pending !== undefined) throw new CollapseError('PRIME_MOVED', `${pending}; they are published first, so PRIME moves past the candidate's base`);
      made.set(item.rootName, ensureView(store, item.staged.generationId, item.staged.manifest.root)); // viewIdOf(generationId), as live.next/ links it
    }
    const primes = await store.primeMeasures.rehash(routes, store.dir);
    // A stacked generation over its base's stack (PRIME's, re-hashed here) with its own layer on top has
    // the staged digest when PRIME has the base digest and the layer is still exactly what was staged
    // (checked again, O(change)). Every other staged payload is walked, and so is one whose derivation
    // fails, so a refusal says what the staged bytes are.
    // Over a compaction in place of part of the base's stack, the compaction must also still be what its
    // walk measured, which only the watcher can say without walking it.
    const overMeasured = (l: NonNullable<StagedGeneration['layer']>): boolean =>
      l.overBase || (l.overCompaction !== undefined && isVouched(store.primeMeasures.vouchCompaction(l.overCompaction), generationDigest(store.db, l.overCompaction)));
    const derived = (i: CommitItem, primeDigest: string | undefined): boolean =>
      i.staged.layer !== undefined && overMeasured(i.staged.layer) && primeDigest === i.expectedBase.digest && layerMismatch(layerDir(store.layout, i.staged.generationId), i.staged.layer.items, i.staged.layer.root) === undefined;
    const stagedPath = (i: CommitItem): string => payloadDir(store.layout, i.staged.generationId);
    const primeDigests = primes.map((p) => p.digest);
    const walked = items.filter((i, n) => !derived(i, primeDigests[n]));
    const walkedDigests = walked.length > 0 ? await cleanDigests(walked.map(stagedPath), store.dir) : [];
    const hashes: BoundaryHashes = { prime: new Map(), primeSources: new Map(), staged: new Map() };
    items.forEach((i, n) => {
      hashes.prime.set(i.rootName, primeDigests[n]);
      hashes.primeSources.set(i.rootName, primes[n]!.source);
      const w = walked.indexOf(i);
      hashes.staged.set(i.rootName, w >= 0 ? walkedDigests[w] : i.staged.digest);
    });
    await options.authorize?.(hashes);
    for (const { rootName, staged, expectedBase } of items) {
      if (hashes.prime.get(rootName) !== expectedBase.digest) {
        throw new CollapseError('FOREIGN_WRITE', `PRIME of ${rootName} was written since the candidate was captured (it no longer has digest ${expectedBase.digest})`);
      }
      if (hashes.staged.get(rootName) !== staged.digest) {
        throw new CollapseError('STAGED_UNTESTED', `the staged payload of ${rootName} changed after it was verified`);
      }
    }

    await durable;
    await step('before-exchange');
    exchangeNextMapping(store.layout);
    exchanged = true;
    // The replaced views stay frozen, unwatched now, unmounted after the commit (lazily: a process still
    // inside one keeps reading it).
    for (const v of frozen) {
      store.primeMeasures.watcher?.unwatch(viewWatchKey(v));
      retire.push(() => dropView(store.layout, v, { keepUpper: true }));
    }
    frozen.length = 0;
    // What the boundary measured of each new generation is PRIME's measurement now.
    for (const { rootName, staged } of items) store.primeMeasures.record(staged.rootKey, staged.generationId, starts.get(rootName)!, hashes.staged.get(rootName));
    starts.clear();
    await step('after-exchange');
    // The old mapping, now live.next/, goes. Not synced: the exchange itself was (exchangeNextMapping), and
    // a live.next/ a crash leaves is removed by recovery and by the next exchange, whatever it holds.
    removeNextMapping(store.layout);
  } catch (e) {
    for (const s of starts.values()) store.primeMeasures.abandon(s);
    await durable?.catch(() => undefined);
    if (!exchanged) {
      for (const v of frozen) {
        try {
          thawView(store.layout, v);
        } catch {
          // reconcileViews at the next start makes the current view writable again
        }
      }
      for (const v of made.values()) dropView(store.layout, v, { keepUpper: false });
      await undoBeforeExchange(store, items.map((i) => i.staged)).catch(() => undefined);
    }
    throw e;
  }

  const now = store.now();
  const payloads = new Map<string, bigint[]>();
  for (const { staged } of items) {
    const st = await lstat(identityDir(store.layout, staged.generationId, staged.layers !== undefined), { bigint: true });
    payloads.set(staged.generationId, [st.dev, st.ino]);
  }
  // Not fsynced (commitUnsynced): from the exchange on, the intent (durable before the batch above) and
  // live/ are the durable record of this commit, and recovery after a power loss that took these rows
  // turns them into the same rows (recover-collapses.ts: every new generation's marker and walk checked
  // first). The store's next synced commit makes them durable with it.
  commitUnsynced(store.db, () => {
    for (const { rootName, staged } of items) {
      const root = roots.get(rootName)!;
      const [dev, ino] = payloads.get(staged.generationId)!;
      insertGeneration(store.db, { id: staged.generationId, rootKey: root.rootKey, number: staged.generation, digest: staged.digest, payloadDev: String(dev), payloadIno: String(ino) }, staged.manifest, now, staged.delta && { from: staged.baseGeneration, delta: staged.delta });
      upsertRoot(store.db, { ...root, state: 'Ready', generation: staged.generation, digest: staged.digest, reason: null, message: null }, now);
    }
    if (options.intentId) deleteIntent(store.db, options.intentId);
  });
  await step('after-db');
  // What the new PRIME reads sealed (a reader's release may have unsealed its bottom since it was sealed
  // above, while PRIME was still the old one); the generations PRIME moved past, and the full trees under
  // them, unmounted unless PRIME still reads them or a reader holds them.
  for (const { rootName, expectedBase } of items) {
    const { rootKey } = roots.get(rootName)!;
    const replaced = getGeneration(store.db, rootKey, expectedBase.generation);
    try {
      sealPrimeReads(store, rootKey);
    } catch {
      // left as it is: the sweep after the next start's recovery settles it (settlePayloads)
    }
    if (replaced) retire.push(() => retireReplaced(store, replaced.id));
  }
  retireAfterCommit(store, retire);
  return items.map(({ rootName, staged, expectedBase }) => ({
    root: getRoot(store.db, rootName)!,
    fromGeneration: expectedBase.generation,
    toGeneration: staged.generation,
    generationId: staged.generationId,
    digest: staged.digest,
  }));
}

/**
 * Unmounts what a commit replaced (the owner's frozen view, the payloads PRIME no longer reads), as the next
 * step in the store's serial order rather than before the commit returns: each unmount is ~1 ms of the
 * kernel's, and nothing of the commit's outcome waits on it. A later step on the store runs after it. One
 * that fails, or an agent stopped before it ran, is settled at the next start (reconcileViews,
 * settlePayloads).
 */
function retireAfterCommit(store: Store, retire: readonly (() => void)[]): void {
  if (retire.length === 0) return;
  void serializedOnStore(store.dir, async () => {
    await new Promise((resolve) => setImmediate(resolve)); // after the caller has taken the commit's result
    for (const f of retire) {
      try {
        f();
      } catch {
        // settled at the next start
      }
    }
  });
}

/** A compaction's vouched walk digest, equal to its generation's recorded one (both present). */
const isVouched = (walked: string | null, recorded: string | undefined): boolean => walked !== null && recorded !== undefined && walked === recorded;

/** A refusal before the exchange: PRIME was never touched; remove what the commit prepared. */
async function undoBeforeExchange(store: Store, staged: readonly StagedGeneration[]): Promise<void> {
  removeNextMapping(store.layout);
  for (const s of staged) {
    await rm(nextLinkPath(store.layout, s.rootKey), { force: true });
    await removeGeneration(store.layout, s.generationId);
    if (s.layers) retirePayload(store, s.layers[s.layers.length - 1]!); // sealed for this commit, unless PRIME reads it
    await rm(s.stagingDir, { recursive: true, force: true });
  }
  await fsyncDirectory(store.dir);
  await fsyncDirectory(store.layout.generations);
}
