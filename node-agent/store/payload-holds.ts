// How long a stacked generation's payload stays mounted (docs/architecture.md, "Generations as layers").
//
// A stacked payload is an overlay of its layers, mounted to be read as one tree. Kept mounted for every
// generation, the node's mount table would grow by one mount per collapse for as long as the node lives:
// every sandbox's new mount namespace starts as a copy of that table, and every read of it parses all of
// it. So a stacked payload is mounted while its generation is PRIME (the live link, routing and every fork
// go through it) or while a reader holds it, and unmounted when neither is true any more. A reader of a
// generation's payload holds it for as long as it reads, whichever generation it is: PRIME may move on
// while it reads. A full generation's payload is a directory of the store with a read-only seal; it reads
// the same without the seal being touched, and its seal stays.
//
// Holds are counted in this process only: the agent is the one process that mounts in the store (its
// lock), and a restart starts with none (retireIdlePayloads after recovery unmounts what nothing holds).
import * as native from '../../native/index.js';
import { readMarker } from './generation-marker.js';
import { isStacked, mountPayload } from './generation-stack.js';
import { isMountPoint, mountPoints } from './mount-table.js';
import type { Store } from './open-store.js';
import { payloadDir } from './store-layout.js';
import { isPrimeGeneration, listGenerationIds } from './store-records.js';

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
        // left mounted (the store closed meanwhile, an unmount failed): retireIdlePayloads at the next start
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
 * Unmounts a stacked generation's payload that is neither PRIME nor held (a collapse moved PRIME past it,
 * its last reader is done); true when it was unmounted. A full generation's seal stays. Lazily: a process
 * that is inside it keeps what it reads.
 */
export function retirePayload(store: StoreRef, genId: string, mounted?: ReadonlySet<string>): boolean {
  const path = payloadDir(store.layout, genId);
  if (holds.has(path) || !(mounted ? mounted.has(path) : isMountPoint(path)) || isPrimeGeneration(store.db, genId)) return false;
  if (!isStacked(readMarker(store.layout, genId))) return false;
  native.umount2(path, native.MNT_DETACH);
  return true;
}

/** Unmounts every stacked payload that is neither PRIME nor held (after recovery settled PRIME at start); returns how many. */
export function retireIdlePayloads(store: StoreRef): number {
  const mounted = new Set(mountPoints());
  let count = 0;
  for (const id of listGenerationIds(store.db)) if (retirePayload(store, id, mounted)) count++;
  return count;
}
