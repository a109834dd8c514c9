// A generation's payload as a stack of immutable layers (docs/architecture.md, "Generations as layers").
//
// A full generation (an adopted Root, a compaction) keeps its whole tree in generations/<id>/payload,
// sealed by a read-only bind mount of the directory onto itself once it is published (sealFull). A
// layered generation keeps only what it changes against its parent in generations/<id>/layer (the changed
// files, a whiteout per removed path, and every directory on the way with its new owner and mode), and its
// payload directory is the mount point of a read-only overlay of its stack: its marker's `layers`, topmost
// first, each a layered generation's layer/ down to one full generation's payload/ at the bottom. A stack
// of one layer (a return to a full checkpoint) is a read-only bind mount of it.
//
// The layers never change after they are published: a Collapse adds a layer, never edits one, and no path
// outside the 0700 store reaches one writable (the host link ends on a read-only mount), so every
// generation and every World forked from one keeps the bytes it was published with. The store itself
// reaches beneath the seals through a detached clone of its own mount (withBeneath), to hard-link a
// compaction's unchanged files: link(2) never crosses mounts.
import { accessSync, constants, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Database } from 'better-sqlite3';
import * as native from '../../native/index.js';
import { readMarker, type GenerationMarker } from './generation-marker.js';
import { isMountPoint, mountPoints } from './mount-table.js';
import { StoreError } from './store-errors.js';
import type { Store } from './open-store.js';
import { generationDir, payloadDir, type StoreLayout } from './store-layout.js';
import { listGenerationIds } from './store-records.js';
import { getCompaction, listCompactions } from './compaction-records.js';

/** At most this many layers under a payload: the next collapse compacts into a full generation instead. */
export const MAX_STACK_DEPTH = 32;

/** PRIME's stack depth (counted after any compaction already published) at which the agent compacts it in the background (default of --compact-at-depth). */
export const COMPACT_AT_DEPTH = 16;

/** Overlay options that keep the layers as they are: no redirects, no metadata-only copies, no index (stacks, and owner views over them). */
export const STACK_OVERLAY_OPTIONS = ['redirect_dir=off', 'metacopy=off', 'index=off', 'xino=off'];

export const layerDir = (l: StoreLayout, genId: string): string => join(l.generations, genId, 'layer');

/** The generation ids of a generation's stack, topmost first: its marker's layers, or itself alone. */
export function stackIds(marker: Pick<GenerationMarker, 'layers'> | undefined, genId: string): string[] {
  return marker?.layers ?? [genId];
}

/**
 * A stacked generation's compaction (background-compaction.ts in collapses/): a full tree of its content in
 * generations/<id>.full/payload, laid out and sealed like a full generation's, with a marker naming the
 * generation it holds. A generation id ends in 16 hex digits (core/root-key.ts), so none ends this way.
 */
export const compactionIdFor = (genId: string): string => `${genId}.full`;
export const isCompactionId = (id: string): boolean => id.endsWith('.full');

/**
 * The shallowest stack with the content of `ids` (a generation's stack, topmost first): the layers above
 * the topmost generation of it that has a published compaction, over that compaction. `compacted` names
 * that generation (undefined: no part of the stack is compacted, `ids` is returned as it is).
 */
export function effectiveStack(db: Database, ids: readonly string[]): { ids: string[]; compacted?: string } {
  for (const [i, id] of ids.entries()) {
    // The bottom is a full generation already; a compaction is one too, and nothing beneath it is compacted further.
    if (i === ids.length - 1 || isCompactionId(id)) break;
    if (getCompaction(db, id)) return { ids: [...ids.slice(0, i), compactionIdFor(id)], compacted: id };
  }
  return { ids: [...ids] };
}

/** The directories of a stack of generation ids: layer/ of each but the last, payload/ of the last (a full one). */
export function stackDirs(l: StoreLayout, ids: readonly string[]): string[] {
  return ids.map((id, i) => (i === ids.length - 1 ? payloadDir(l, id) : layerDir(l, id)));
}

/**
 * The directory whose device and inode identify a generation (generations.payload_dev/ino): a full
 * generation's payload, a stacked one's own layer (its payload is a mount, whose device changes each time
 * it is mounted).
 */
export function identityDir(l: StoreLayout, genId: string, stacked: boolean): string {
  return stacked ? layerDir(l, genId) : payloadDir(l, genId);
}

/** The layer directories of a recorded generation's payload directory (the payload alone when it is full). */
export function payloadLayers(l: StoreLayout, genId: string): string[] {
  const marker = readMarker(l, genId);
  return isStacked(marker) ? stackDirs(l, stackIds(marker, genId)) : [payloadDir(l, genId)];
}

/** True when a generation's payload is a mount of its stack (not a full tree of its own). */
export const isStacked = (marker: Pick<GenerationMarker, 'layers'> | undefined): boolean => marker?.layers !== undefined;

/** Mounts a stacked generation's payload read-only from its layers; nothing when it is mounted already. */
export function mountStack(l: StoreLayout, genId: string, ids: readonly string[], mounted?: ReadonlySet<string>): void {
  const target = payloadDir(l, genId);
  if (mounted ? mounted.has(target) : isMountPoint(target)) return;
  mkdirSync(target, { recursive: true, mode: 0o700 }); // present already after a restart of the node
  const dirs = stackDirs(l, ids);
  for (const d of dirs) {
    if (!lstatSync(d).isDirectory()) throw new StoreError('LIVE_MAPPING_BROKEN', `layer ${d} of generation ${genId} is not a directory`);
  }
  if (dirs.length === 1) native.bindMount(dirs[0]!, target, { readonly: true, recursive: false, nosuid: true, nodev: true });
  else native.mountOverlay(target, { lower: dirs, extra: STACK_OVERLAY_OPTIONS, readonly: true, nosuid: true, nodev: true });
}

/**
 * Seals a full generation's payload: a read-only bind mount of the directory onto itself (same device and
 * inode, so its recorded identity holds); nothing when it is mounted already. A write through the host
 * link then fails with EROFS instead of changing every generation stacked on it and every World's lower.
 */
export function sealFull(l: StoreLayout, genId: string, mounted?: ReadonlySet<string>): void {
  const target = payloadDir(l, genId);
  if (mounted ? mounted.has(target) : isMountPoint(target)) return;
  if (!lstatSync(target).isDirectory()) throw new StoreError('LIVE_MAPPING_BROKEN', `the payload of generation ${genId} is not a directory`);
  native.bindMount(target, target, { readonly: true, recursive: false, nosuid: true, nodev: true });
}

/** Mounts a published generation's payload read-only: its stack (mountStack), or its own tree (sealFull). */
export function mountPayload(l: StoreLayout, genId: string, marker: Pick<GenerationMarker, 'layers'> | undefined, mounted?: ReadonlySet<string>): void {
  if (isStacked(marker)) mountStack(l, genId, stackIds(marker, genId), mounted);
  else sealFull(l, genId, mounted);
}

/** True when the directory is on a read-only mount (access(2) says EROFS for a write), as every payload must be. */
export function isReadOnlyMount(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EROFS';
  }
}

/**
 * Runs `fn` with a mapping from paths inside the store to the same paths beneath every mount the store
 * holds (a detached, non-recursive clone of the store's mount, closed afterwards): the sealed trees as
 * writable directories of the store's filesystem, on one mount, so link(2) between them and staging works.
 */
export async function withBeneath<T>(storeDir: string, fn: (beneath: (path: string) => string) => Promise<T>): Promise<T> {
  const fd = native.openDetachedTree(storeDir);
  try {
    return await fn((path) => {
      const rel = relative(storeDir, path);
      if (rel.startsWith('..') || rel.startsWith('/')) throw new Error(`${path} is not inside the store at ${storeDir}`);
      return join(`/proc/self/fd/${fd}`, rel);
    });
  } finally {
    native.closeFd(fd);
  }
}

/** Unmounts a generation's payload if it is mounted (before its directory is removed). */
function unmountPayload(l: StoreLayout, genId: string): void {
  const target = payloadDir(l, genId);
  if (!isMountPoint(target)) return;
  native.umount2(target, native.MNT_DETACH);
}

/** Removes a generation's directory, unmounting its stacked payload first (a mounted one is read-only). */
export async function removeGeneration(l: StoreLayout, genId: string): Promise<void> {
  unmountPayload(l, genId);
  await rm(generationDir(l, genId), { recursive: true, force: true });
}

/**
 * Removes what a compaction interrupted by a crash or a stop left: a generations/<id>.full directory with
 * no row in compactions (never published, so nothing stacks over it) and its staging directory. Called at
 * open, before anything can start a compaction. Returns the compaction ids removed.
 */
export async function sweepCompactionLeftovers(store: Pick<Store, 'db' | 'layout'>): Promise<string[]> {
  const removed: string[] = [];
  for (const name of readdirSync(store.layout.generations)) {
    if (!isCompactionId(name) || getCompaction(store.db, name.slice(0, -'.full'.length))) continue;
    await removeGeneration(store.layout, name);
    removed.push(name);
  }
  for (const name of readdirSync(store.layout.staging)) {
    if (name.startsWith('compact-')) await rm(join(store.layout.staging, name), { recursive: true, force: true });
  }
  return removed;
}

/** Unmounts every payload of a Root (once it is released: nothing reads its history through them). */
export function unmountRootStacks(store: Pick<Store, 'db' | 'layout'>, rootKey: string): void {
  const mounted = new Set(mountPoints());
  const ids = [...listGenerationIds(store.db, rootKey), ...listCompactions(store.db, rootKey).map((c) => compactionIdFor(c.generationId))];
  for (const id of ids) {
    const target = payloadDir(store.layout, id);
    if (mounted.has(target)) native.umount2(target, native.MNT_DETACH);
  }
}
