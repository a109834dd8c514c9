// How long a generation's payload stays mounted (docs/architecture.md, "Generations as layers").
//
// A stacked payload is an overlay of its layers, mounted to be read as one tree; a full one is a directory
// of the store sealed by a read-only bind mount of itself. Kept for every generation, those mounts would
// grow the node's mount table for as long as the node lives: every sandbox's new mount namespace starts as
// a copy of that table, and every read of it parses all of it. So a payload stays mounted only while PRIME
// reads it or a reader holds it:
// - PRIME's own payload (its stack, or its seal);
// - the seals of the full generations under PRIME's stack: the bottom its marker names, and a published
//   compaction the next collapse stacks over (effectiveStack). Routing, every World's lowers and the
//   owner's view read them;
// - any payload a reader holds (holdPayload). A reader of a generation holds it for as long as it reads,
//   whichever generation it is: PRIME may move on meanwhile.
// Anything else is unmounted (retirePayload). An older full tree without its seal reads the same, and
// nothing outside the 0700 store reaches it; a hold seals it again.
//
// Holds are counted in this process only: the agent is the one process that mounts in the store (its
// lock), and a restart starts with none (settlePayloads, after recovery, mounts and unmounts to match).
import * as native from '../../native/index.js';
import { readMarker } from './generation-marker.js';
import { compactionIdFor, effectiveStack, isStacked, mountPayload, sealFull } from './generation-stack.js';
import { isMountPoint, mountPoints } from './mount-table.js';
import type { Store } from './open-store.js';
import { StoreError } from './store-errors.js';
import { payloadDir } from './store-layout.js';
import { isPrimeGeneration, listGenerationIds, listRoots, primeGenerationId } from './store-records.js';
import { listCompactions } from './compaction-records.js';

type StoreRef = Pick<Store, 'db' | 'layout'>;

/** Readers holding each payload, by its path (which names the store, so two stores never share a count). */
const holds = new Map<string, number>();

/**
 * Mounts a generation's payload if it is not mounted, and keeps it mounted until the returned release is
 * called. The release acts once (later calls do nothing) and never throws, so it can run in a `finally`.
 * A payload that cannot be mounted throws what mounting threw (an errno, which the caller's retry treats
 * as transient) and holds nothing: no reader may find an empty directory in its place.
 */
export function holdPayload(store: StoreRef, genId: string): { path: string; release: () => void } {
  const path = payloadDir(store.layout, genId);
  holds.set(path, (holds.get(path) ?? 0) + 1);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    const left = (holds.get(path) ?? 1) - 1;
    if (left > 0) holds.set(path, left);
    else {
      holds.delete(path);
      try {
        retirePayload(store, genId);
      } catch {
        // left mounted (the store closed meanwhile, an unmount failed): settlePayloads at the next start
      }
    }
  };
  try {
    mountPayload(store.layout, genId, readMarker(store.layout, genId));
  } catch (e) {
    release();
    throw e;
  }
  return { path, release };
}

/** Runs `fn` with a generation's payload held mounted (holdPayload), released when it settles. */
export async function withPayload<T>(store: StoreRef, genId: string, fn: (path: string) => T | Promise<T>): Promise<T> {
  const held = holdPayload(store, genId);
  try {
    return await fn(held.path);
  } finally {
    held.release();
  }
}

/**
 * The full generations (and compactions) whose seals PRIME of `rootKey` reads: PRIME itself when it is
 * full, else the bottom of its stack and the bottom of its effective stack (a published compaction).
 */
export function primeSeals(store: StoreRef, rootKey: string): Set<string> {
  const prime = primeGenerationId(store.db, rootKey);
  if (prime === undefined) return new Set();
  const layers = readMarker(store.layout, prime)?.layers;
  if (layers === undefined) return new Set([prime]);
  return new Set([layers[layers.length - 1]!, effectiveStack(store.db, layers).ids.at(-1)!]);
}

/** Seals each full tree PRIME of `rootKey` reads that is not sealed (primeSeals); throws what sealing threw. */
export function sealPrimeReads(store: StoreRef, rootKey: string): void {
  for (const id of primeSeals(store, rootKey)) sealFull(store.layout, id);
}

/**
 * Unmounts a payload that neither PRIME reads nor a reader holds (a collapse moved PRIME past it, its last
 * reader is done); true when it was unmounted. Lazily: a process inside it keeps what it reads. A payload
 * whose marker cannot be read is kept: what it is cannot be told.
 */
export function retirePayload(store: StoreRef, genId: string, mounted?: ReadonlySet<string>): boolean {
  const path = payloadDir(store.layout, genId);
  if (holds.has(path) || !(mounted ? mounted.has(path) : isMountPoint(path)) || isPrimeGeneration(store.db, genId)) return false;
  const marker = readMarker(store.layout, genId);
  if (marker === undefined || (!isStacked(marker) && primeSeals(store, marker.rootKey).has(genId))) return false;
  native.umount2(path, native.MNT_DETACH);
  return true;
}

/**
 * What a commit leaves that PRIME may no longer read: the generation it replaced, and the full trees under
 * that generation's stack. Each is unmounted unless PRIME still reads it or a reader holds it.
 */
export function retireReplaced(store: StoreRef, replacedId: string): void {
  const layers = readMarker(store.layout, replacedId)?.layers;
  const under = layers === undefined ? [] : [layers[layers.length - 1]!, effectiveStack(store.db, layers).ids.at(-1)!];
  for (const id of new Set([replacedId, ...under])) retirePayload(store, id);
}

/**
 * At start, once recovery has settled PRIME: each Root's PRIME and the seals it reads mounted (a recovered
 * commit may stack over a tree the open did not seal), everything else unmounted. Returns how many were
 * unmounted. A seal PRIME reads that cannot be made throws: no route may read an unsealed bottom.
 */
export function settlePayloads(store: StoreRef): number {
  for (const root of listRoots(store.db)) if (root.state !== 'Released') sealPrimeReads(store, root.rootKey);
  const mounted = new Set(mountPoints());
  let count = 0;
  const ids = [...listGenerationIds(store.db), ...listCompactions(store.db).map((c) => compactionIdFor(c.generationId))];
  for (const id of ids) if (retirePayload(store, id, mounted)) count++;
  return count;
}

/**
 * At open: mounts what PRIME reads and is not mounted (after a node restart, or the first open after an
 * upgrade): each Root's PRIME payload (its stack, or its seal) and the seals under it (primeSeals). A
 * payload that cannot be mounted refuses to open the store by name: no reader may find an empty or
 * writable payload. Returns how many were mounted.
 */
export function remountPayloads(store: StoreRef): number {
  const mounted = new Set(mountPoints());
  let count = 0;
  for (const root of listRoots(store.db)) {
    const prime = root.state === 'Released' ? undefined : primeGenerationId(store.db, root.rootKey);
    if (prime === undefined) continue;
    for (const id of new Set([prime, ...primeSeals(store, root.rootKey)])) {
      if (mounted.has(payloadDir(store.layout, id))) continue;
      try {
        mountPayload(store.layout, id, readMarker(store.layout, id), mounted);
      } catch (e) {
        throw new StoreError('LIVE_MAPPING_BROKEN', `the payload of generation ${id} cannot be mounted: ${String(e)}`, { cause: e });
      }
      count++;
    }
  }
  return count;
}
