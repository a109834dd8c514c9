// The owner's view of a Root: what its host path shows, and where its owner edits it in place.
//
// A view is a writable overlay mounted at views/<viewId>/merged: its lower layers are one generation's
// stack (read-only, shared with PRIME and every World), its upper layer private/upper is where the owner's
// writes land (private/ is 0700: the upper is reached only through the mount). The host path links to
// live/<rootKey>_view, which links to the current view's merged directory; views/, live/ and the store
// directory are traversable (0711, nothing listable), and views/<viewId> is root's with the Root's group,
// 0710: the owner (through their group) reaches their view by its path, and its root directory's own owner
// and mode decide the rest, as they did before adoption. Users outside the group are kept out.
//
// A view's base stays fixed for its life. The owner's edits are published as new generations over PRIME
// (owner-edits.ts) while the view stays: its upper keeps everything the owner wrote since the base, so the
// view shows the newest owner generation. A collapse by anyone else replaces the view (commit-generation.ts):
// the old view is frozen read-only first (mount_setattr through MS_REMOUNT|MS_BIND), then checked to hold
// nothing unpublished, and the new view's link goes in the same exchange as PRIME's. A process still inside
// the old view (a shell's working directory) reads the generation it was in and gets EROFS for a write: an
// owner edit on a replaced generation is refused where it is made, never silently taken or lost.
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { RootAttributes } from '../../core/manifest.js';
import { parseGenerationId } from '../../core/root-key.js';
import * as native from '../../native/index.js';
import { STACK_OVERLAY_OPTIONS, isReadOnlyMount, payloadLayers } from './generation-stack.js';
import { isMountPoint, mountPoints } from './mount-table.js';
import type { Store } from './open-store.js';
import { StoreError, errnoCode } from './store-errors.js';
import { liveLinkPath, payloadDir, viewDir, viewLinkName, viewLinkPath, viewLinkTarget, type StoreLayout } from './store-layout.js';
import { getGeneration, getGenerationManifest, listRoots, type RootRecord } from './store-records.js';

const VIEW_DIR_MODE = 0o710;

export interface ViewPaths {
  dir: string;
  merged: string;
  upper: string;
  work: string;
}

/** What a view's name says: the Root it is of and the generation whose stack is its lower layers. */
export interface ViewRecord {
  rootKey: string;
  baseGenerationId: string;
}

export function viewPaths(l: StoreLayout, viewId: string): ViewPaths {
  const dir = viewDir(l, viewId);
  return { dir, merged: join(dir, 'merged'), upper: join(dir, 'private', 'upper'), work: join(dir, 'private', 'work') };
}

/** A view is named by its base generation: each generation has at most one. */
export const viewIdOf = (baseGenerationId: string): string => baseGenerationId;

/** The watcher key of a view's upper layer (prime-watcher.ts). */
export const viewWatchKey = (viewId: string): string => `view:${viewId}`;

/** A view's Root and base, read from its name (a generation id); undefined for a name that is none. */
export function viewRecordOf(viewId: string): ViewRecord | undefined {
  const g = parseGenerationId(viewId);
  return g ? { rootKey: g.rootKey, baseGenerationId: viewId } : undefined;
}

/** The view the Root's view link names now (undefined: no link, or not one of a view). */
export function currentViewId(l: StoreLayout, rootKey: string): string | undefined {
  let target: string;
  try {
    target = readlinkSync(viewLinkPath(l, rootKey));
  } catch (e) {
    if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'EINVAL') return undefined;
    throw e;
  }
  const m = /^\.\.\/views\/([^/]+)\/merged$/.exec(target);
  return m ? m[1] : undefined;
}

export function isViewMounted(l: StoreLayout, viewId: string, mounted?: ReadonlySet<string>): boolean {
  const merged = viewPaths(l, viewId).merged;
  return mounted ? mounted.has(merged) : isMountPoint(merged);
}

/**
 * Makes (or completes) the view of a recorded generation and mounts it; idempotent. The upper layer's root
 * directory carries the generation's root owner and mode: overlayfs shows a merged directory with its
 * upper's attributes, so the view's top is the Root's top as adopted (or as last published).
 */
export function ensureView(store: Pick<Store, 'db' | 'layout'>, baseGenerationId: string, rootAttributes?: RootAttributes): string {
  const l = store.layout;
  const viewId = viewIdOf(baseGenerationId);
  const p = viewPaths(l, viewId);
  if (!existsSync(p.dir)) { // made in a temporary directory and renamed: present means complete
    const top = lstatSync(payloadDir(l, baseGenerationId));
    const root = rootAttributes ?? getGenerationManifest(store.db, baseGenerationId)?.root ?? { mode: top.mode & 0o7777, uid: top.uid, gid: top.gid };
    const tmp = `${p.dir}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(join(tmp, 'private'), { recursive: true, mode: 0o700 });
    // Passable by the Root's group only (root owns it, so nobody else can change that): a user outside the
    // group, who the original directory's parents may have kept out, is kept out of the view here.
    chownSync(tmp, 0, root.gid);
    chmodSync(tmp, VIEW_DIR_MODE);
    chmodSync(join(tmp, 'private'), 0o700);
    mkdirSync(join(tmp, 'merged'), { mode: 0o700 });
    mkdirSync(join(tmp, 'private', 'upper'), { mode: 0o700 });
    mkdirSync(join(tmp, 'private', 'work'), { mode: 0o700 });
    chownSync(join(tmp, 'private', 'upper'), root.uid, root.gid);
    chmodSync(join(tmp, 'private', 'upper'), root.mode);
    renameSync(tmp, p.dir);
  }
  mountView(store, viewId);
  return viewId;
}

/** Mounts a made view (writable) when it is not mounted: after a restart of the node the upper is still there. */
export function mountView(store: Pick<Store, 'db' | 'layout'>, viewId: string, mounted?: ReadonlySet<string>): void {
  const l = store.layout;
  const p = viewPaths(l, viewId);
  if (isViewMounted(l, viewId, mounted)) return;
  const record = viewRecordOf(viewId);
  if (!record || !existsSync(p.dir)) throw new StoreError('LIVE_MAPPING_BROKEN', `there is no view ${viewId}`);
  // The lowers are the base's stack (payloadLayers): its layer directories, never a stacked payload's overlay
  // (overlays nest two deep at most); for a full generation, its sealed payload.
  const lower = payloadLayers(l, record.baseGenerationId);
  native.mountOverlay(p.merged, { lower, upper: p.upper, work: p.work, extra: STACK_OVERLAY_OPTIONS, nosuid: true, nodev: true });
}

/**
 * Freezes a view: its mount becomes read-only, so nothing more is written through it. Refused (EBUSY) by the
 * kernel while a file is open for writing in it: false then, and the view is as it was.
 */
export function freezeView(l: StoreLayout, viewId: string): boolean {
  try {
    native.mount(null, viewPaths(l, viewId).merged, null, native.MS_REMOUNT | native.MS_BIND | native.MS_RDONLY | native.MS_NOSUID | native.MS_NODEV);
    return true;
  } catch (e) {
    if (errnoCode(e) === 'EBUSY') return false;
    throw e;
  }
}

/** Makes a frozen view writable again (a collapse that froze it was refused before its exchange). */
export function thawView(l: StoreLayout, viewId: string): void {
  native.mount(null, viewPaths(l, viewId).merged, null, native.MS_REMOUNT | native.MS_BIND | native.MS_NOSUID | native.MS_NODEV);
}

/** Unmounts a view (lazily: a process inside keeps what it holds) and, unless kept, removes it. */
export function dropView(l: StoreLayout, viewId: string, o: { keepUpper: boolean }): void {
  const p = viewPaths(l, viewId);
  if (isMountPoint(p.merged)) native.umount2(p.merged, native.MNT_DETACH);
  if (!o.keepUpper) rmSync(p.dir, { recursive: true, force: true });
}

/** Every view made of a Root (current or replaced), by its record. */
export function viewsOfRoot(l: StoreLayout, rootKey: string): string[] {
  let names: string[];
  try {
    names = readdirSync(l.views);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return [];
    throw e;
  }
  return names.filter((n) => viewRecordOf(n)?.rootKey === rootKey);
}

/** The Root's view link now names `viewId` (a single atomic rename of a new link over the old). */
export function linkView(l: StoreLayout, rootKey: string, viewId: string): void {
  const link = viewLinkPath(l, rootKey);
  const tmp = join(l.live, `.${viewLinkName(rootKey)}.tmp`); // a dot name: never copied into a mapping (exchange-live.ts)
  rmSync(tmp, { force: true });
  symlinkSync(viewLinkTarget(viewId), tmp);
  renameSync(tmp, link);
}

/** True when `root`'s view link names a mounted view of this Root. */
export function viewRoutes(store: Pick<Store, 'layout'>, root: Pick<RootRecord, 'rootKey'>): boolean {
  const id = currentViewId(store.layout, root.rootKey);
  return id !== undefined && viewRecordOf(id)?.rootKey === root.rootKey && isViewMounted(store.layout, id);
}

/**
 * Brings every Root's view back after a restart or a settled crash: the view its link names is mounted (its
 * upper kept what the owner wrote) and, being the current one, made writable again (a collapse refused
 * before its exchange may have frozen it). With `relink` (no collapse is unsettled), a Root whose link names
 * no view that can be mounted gets a new view of PRIME, and a host path linked the older way (to
 * live/<root key>) is linked to the view by one rename.
 */
export function reconcileViews(store: Pick<Store, 'db' | 'layout'>, o: { relink: boolean }): void {
  const l = store.layout;
  const mounted = new Set(mountPoints());
  for (const root of listRoots(store.db)) {
    if (root.state === 'Released' || root.state === 'Adopting') continue;
    const gen = getGeneration(store.db, root.rootKey, root.generation);
    if (!gen) continue;
    let id = currentViewId(l, root.rootKey);
    if (id !== undefined) {
      try {
        mountView(store, id, mounted);
        if (root.state !== 'Releasing' && isReadOnlyMount(viewPaths(l, id).merged)) thawView(l, id);
      } catch {
        id = undefined;
      }
    }
    if (!o.relink) continue;
    if (id === undefined) linkView(l, root.rootKey, ensureView(store, gen.id));
    relinkHostPath(l, root);
  }
  if (o.relink) removeReplacedViews(store);
}

/**
 * Removes the views no Root's link names any more and nothing has mounted (replaced by a collapse before
 * this start). Each held only published edits: a collapse replaces a view only once it measured it equal
 * to PRIME, frozen. One still mounted (the agent stopped before the unmount that follows a commit) is
 * unmounted now, lazily, and removed at the next open.
 */
function removeReplacedViews(store: Pick<Store, 'db' | 'layout'>): void {
  const l = store.layout;
  const current = new Set(listRoots(store.db).map((r) => currentViewId(l, r.rootKey)));
  const mounted = new Set(mountPoints());
  for (const name of readdirSync(l.views)) {
    if (current.has(name)) continue;
    if (mounted.has(viewPaths(l, name).merged)) dropView(l, name, { keepUpper: true });
    else rmSync(viewDir(l, name), { recursive: true, force: true });
  }
}

/** A host path linked to live/<root key> (agents before views) is linked to live/<root key>_view instead. */
function relinkHostPath(l: StoreLayout, root: Pick<RootRecord, 'nodePath' | 'rootKey'>): void {
  let target: string;
  try {
    target = readlinkSync(root.nodePath);
  } catch {
    return;
  }
  if (target !== liveLinkPath(l, root.rootKey)) return;
  const tmp = join(dirname(root.nodePath), `.${basename(root.nodePath)}.worldline-view`);
  rmSync(tmp, { force: true });
  symlinkSync(viewLinkPath(l, root.rootKey), tmp);
  renameSync(tmp, root.nodePath);
}
