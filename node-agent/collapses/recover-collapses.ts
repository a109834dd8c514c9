// Settling collapses a crash interrupted, from the intent row and what is on disk alone. Fail-closed:
// PRIME ends exactly the base or exactly the new generations, never a mix.
//
// The rule: the single renameat2 decides. An intent names one or more Roots, all swapped by one
// exchange of live/ (exchange-live.ts), so their live/<rootKey> links agree: all name the new
// generations -> the exchange happened; roll forward (record the rows) only when every new generation's
// marker and walk give the intent's digest, else point every link back at its base. All name the bases
// -> it never happened; remove what was staged. Anything else (a link missing, a third target, a mix)
// is left alone with its intent, reported as blocked — except links that name the newer generation the
// store records for their Root: another collapse committed first, so this exchange never happened and what
// it staged is removed. A leftover live.next/ is removed either way: live/ is what counts.
import { readdirSync } from 'node:fs';
import { lstat, readlink, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirectory, pathKind, replaceSymlink } from '../store/durable-fs.js';
import { readMarker } from '../store/generation-marker.js';
import type { Store } from '../store/open-store.js';
import { errnoCode } from '../store/store-errors.js';
import { liveLinkPath, liveLinkTarget, payloadDir } from '../store/store-layout.js';
import { settlePayloads } from '../store/payload-holds.js';
import { identityDir, isCompactionId, isReadOnlyMount, isStacked, mountPayload, removeGeneration } from '../store/generation-stack.js';
import { allGenerationIds, deleteIntent, getGeneration, getRoot, insertGeneration, listIntents, upsertRoot } from '../store/store-records.js';
import { ADOPT_INTENT_KIND } from '../store/adoption-intent.js';
import { RELEASE_INTENT_KIND } from '../store/release-intent.js';
import { asSetIntent, COLLAPSE_INTENT_KIND, nextLinkPath, type CollapseIntent, type CollapseSetIntent } from './collapse-intent.js';
import { collapseWalk, type CollapseWalk } from '../store/store-walk.js';
import { removeNextMapping } from './exchange-live.js';
import { currentViewId, dropView, ensureView, linkView, reconcileViews, thawView, viewIdOf, viewPaths } from '../store/owner-view.js';

export interface CollapseRecoveryOutcome {
  intentId: string;
  /** The Roots of the intent, comma-separated. */
  rootName: string;
  outcome: 'committed' | 'rolled-back' | 'blocked';
  message: string;
}

export async function recoverCollapses(store: Store): Promise<CollapseRecoveryOutcome[]> {
  const outcomes: CollapseRecoveryOutcome[] = [];
  for (const intent of listIntents<CollapseSetIntent | CollapseIntent>(store.db, COLLAPSE_INTENT_KIND)) {
    outcomes.push(await recoverCollapseIntent(store, intent.id, intent.data));
  }
  removeNextMapping(store.layout);
  await sweepCollapseLeftovers(store);
  reconcileViews(store, { relink: true }); // each Root's view, now that PRIME is settled
  settlePayloads(store); // and what PRIME reads mounted, what it moved past (and nothing holds yet) not
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

/** A Root's new generation, checked: its marker and its walk both give the intent's digest. */
async function verifiedNew(store: Store, i: CollapseIntent): Promise<CollapseWalk | undefined> {
  if (!i.generationId || i.generation === undefined || !i.digest) return undefined;
  const marker = readMarker(store.layout, i.generationId);
  if (marker?.rootKey !== i.rootKey || marker.generation !== i.generation || marker.digest !== i.digest) return undefined;
  const payload = payloadDir(store.layout, i.generationId);
  try {
    mountPayload(store.layout, i.generationId, marker); // after a restart of the node it is not mounted
  } catch {
    return undefined;
  }
  if ((await pathKind(payload)) !== 'dir') return undefined;
  const walk = await collapseWalk(payload, store.dir);
  return walk.problems.length === 0 && walk.digest === i.digest ? walk : undefined;
}

export async function recoverCollapseIntent(store: Store, id: string, data: CollapseSetIntent | CollapseIntent): Promise<CollapseRecoveryOutcome> {
  const set = asSetIntent(data);
  const names = set.roots.map((r) => r.rootName).join(',');
  const result = (outcome: CollapseRecoveryOutcome['outcome'], message: string): CollapseRecoveryOutcome => ({ intentId: id, rootName: names, outcome, message });
  const states: ('new' | 'base' | 'moved' | 'other')[] = [];
  for (const i of set.roots) {
    const current = await readLinkOrNull(liveLinkPath(store.layout, i.rootKey));
    states.push(i.generationId && current === liveLinkTarget(i.generationId) ? 'new' : current === liveLinkTarget(i.baseGenerationId) ? 'base' : movedOn(store, i, current) ? 'moved' : 'other');
  }

  if (set.roots.length > 0 && states.every((s) => s === 'new')) {
    const walks: CollapseWalk[] = [];
    for (const i of set.roots) {
      const w = await verifiedNew(store, i);
      if (w) walks.push(w);
    }
    const roots = set.roots.map((i) => getRoot(store.db, i.rootName));
    if (walks.length === set.roots.length && roots.every((r) => r !== undefined)) {
      await cleanup(store, set, { keepGenerations: true });
      const now = store.now();
      const payloads: { dev: bigint; ino: bigint }[] = [];
      for (const i of set.roots) payloads.push(await lstat(identityDir(store.layout, i.generationId!, isStacked(readMarker(store.layout, i.generationId!))), { bigint: true }));
      store.db.transaction(() => {
        set.roots.forEach((i, n) => {
          insertGeneration(store.db, { id: i.generationId!, rootKey: i.rootKey, number: i.generation!, digest: i.digest!, payloadDev: String(payloads[n]!.dev), payloadIno: String(payloads[n]!.ino) }, walks[n]!.manifest, now);
          upsertRoot(store.db, { ...roots[n]!, state: 'Ready', generation: i.generation!, digest: i.digest!, reason: null, message: null }, now);
        });
        deleteIntent(store.db, id);
      })();
      return result('committed', `the exchange had happened; recorded generation(s) ${set.roots.map((i) => `${i.rootName}@${i.generation ?? '?'}`).join(', ')}`);
    }
    // Published but not trustworthy: back to the bases, which is exactly what the store still records.
    for (const i of set.roots) {
      await replaceSymlink(liveLinkPath(store.layout, i.rootKey), liveLinkTarget(i.baseGenerationId));
      // The owner's view goes back with PRIME: a view of the base (the one frozen for the exchange when it is that), writable.
      const back = ensureView(store, i.baseGenerationId);
      if (isReadOnlyMount(viewPaths(store.layout, back).merged)) thawView(store.layout, back);
      linkView(store.layout, i.rootKey, back);
    }
    await cleanup(store, set, { keepGenerations: false });
    deleteIntent(store.db, id);
    return result('rolled-back', 'the new generations were published but a marker or content does not match; live/ points at the bases again');
  }
  if (set.roots.length > 0 && states.every((s) => s === 'base')) {
    await cleanup(store, set, { keepGenerations: false });
    deleteIntent(store.db, id);
    return result('rolled-back', 'the exchange had not happened; removed what was staged');
  }
  if (set.roots.length > 0 && states.includes('moved') && states.every((s) => s === 'base' || s === 'moved')) {
    // Another collapse committed a Root of this one first (two at the commit boundary together): this
    // exchange, which would have moved every Root at once, never happened. Nothing of the other is touched.
    await cleanup(store, set, { keepGenerations: false });
    deleteIntent(store.db, id);
    return result('rolled-back', 'another collapse committed first; this exchange had not happened; removed what was staged');
  }
  return result('blocked', `live/ links of ${names} are ${states.join(', ')}: neither all the bases nor all the staged generations`);
}

/** The Root's live link is the newer generation the store records for it (another collapse's), not this intent's. */
function movedOn(store: Store, i: CollapseIntent, current: string | null): boolean {
  const root = getRoot(store.db, i.rootName);
  if (!root || current === null || root.rootKey !== i.rootKey || root.generation <= i.baseGeneration) return false;
  const recorded = getGeneration(store.db, i.rootKey, root.generation);
  return recorded !== undefined && recorded.id !== i.generationId && current === liveLinkTarget(recorded.id);
}

/** Remove prepared links, staging directories and (unless kept, and only if never recorded) the new generations. */
async function cleanup(store: Store, set: CollapseSetIntent, o: { keepGenerations: boolean }): Promise<void> {
  for (const i of set.roots) {
    await rm(nextLinkPath(store.layout, i.rootKey), { force: true }); // single-link layout of older agents
    await rm(i.staging, { recursive: true, force: true });
    if (!o.keepGenerations && i.generationId && i.generation !== undefined && getGeneration(store.db, i.rootKey, i.generation)?.id !== i.generationId) {
      if (currentViewId(store.layout, i.rootKey) !== viewIdOf(i.generationId)) dropView(store.layout, viewIdOf(i.generationId), { keepUpper: false });
      await removeGeneration(store.layout, i.generationId);
    }
  }
  removeNextMapping(store.layout);
  await fsyncDirectory(store.layout.live);
  await fsyncDirectory(store.layout.staging);
  await fsyncDirectory(store.layout.generations);
  await fsyncDirectory(store.dir);
}

/**
 * What a collapse whose intent never reached the disk left: a power loss before the commit's batch of
 * fsyncs (which syncs the intent with the new generations, commit-generation.ts) can keep its staging
 * directory or its generation's directory and lose the intent that names them. Nothing refers to them:
 * the exchange waits for that batch. Removed here, after every intent is settled: a staging/collapse-*
 * directory and a generations/<id> (not a compaction: sweepCompactionLeftovers) the store never recorded
 * and no remaining intent names (a blocked one keeps what it names). Its view, if made, is removed with
 * the other views no Root links (reconcileViews). Returns what was removed, relative to the store.
 */
export async function sweepCollapseLeftovers(store: Store): Promise<string[]> {
  const named = new Set<string>();
  for (const kind of [COLLAPSE_INTENT_KIND, ADOPT_INTENT_KIND, RELEASE_INTENT_KIND]) {
    for (const intent of listIntents<unknown>(store.db, kind)) collectStrings(intent.data, named);
  }
  const recorded = new Set(allGenerationIds(store.db));
  const removed: string[] = [];
  for (const name of readdirSync(store.layout.staging)) {
    const path = join(store.layout.staging, name);
    if (!name.startsWith('collapse-') || named.has(path)) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(`staging/${name}`);
  }
  for (const id of readdirSync(store.layout.generations)) {
    if (isCompactionId(id) || !GENERATION_ID.test(id) || recorded.has(id) || named.has(id)) continue;
    await removeGeneration(store.layout, id);
    removed.push(`generations/${id}`);
  }
  if (removed.length > 0) {
    await fsyncDirectory(store.layout.staging);
    await fsyncDirectory(store.layout.generations);
  }
  return removed;
}

/** A generation id as generationIdFor makes them (root key, number, digest prefix). */
const GENERATION_ID = /_g[0-9]+_[0-9a-f]{16}$/;

/** Every string anywhere in an intent's data (the paths and ids it names). */
function collectStrings(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') into.add(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, into);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) collectStrings(v, into);
}
