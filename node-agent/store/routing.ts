// A root's content is read through the store, never through the host path. This checks the whole route
// before anyone reads: live/<root key> -> generations/<id>/payload of the recorded generation, and the
// host path -> live/<root key>_view -> the mounted view of this Root (owner-view.ts), each hop exact and each store directory a real directory, and the directory reached the
// very one (device and inode) that was published for that generation, so a payload swapped for another
// directory under the same name is caught. A stacked generation (generation-stack.ts) is identified by
// its own layer, and its payload must be a mount (another device) over the payload directory.
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { readMarker } from './generation-marker.js';
import { isReadOnlyMount, isStacked, layerDir, stackDirs, stackIds } from './generation-stack.js';
import type { Store } from './open-store.js';
import { StoreError, errnoCode } from './store-errors.js';
import { serializedOnStore } from './store-serial.js';
import { generationDir, liveLinkPath, liveLinkTarget, payloadDir, viewLinkPath } from './store-layout.js';
import { currentViewId, viewPaths, viewRecordOf } from './owner-view.js';
import { getGeneration, getRoot, type RootRecord } from './store-records.js';

export interface Routing {
  root: RootRecord;
  generationId: string;
  /** The payload directory of PRIME, as a path with no links in it. */
  payloadPath: string;
  /** Its layers, topmost first (generation-stack.ts): the payload itself when it is a full generation. */
  layers: string[];
  liveLink: string;
  /** The owner's view the host path shows (owner-view.ts). */
  viewId: string;
}

const broken = (name: string, detail: string): StoreError => new StoreError('LIVE_MAPPING_BROKEN', `root ${name}: ${detail}`);

function readLinkOrNull(path: string): string | null {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : null;
  } catch (e) {
    if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') return null;
    throw e;
  }
}

/**
 * The route of a root, or LIVE_MAPPING_BROKEN naming the first hop that is wrong. About a dozen lstat,
 * readlink and stat calls on the store's own directories, made synchronously: through the thread pool each
 * cost an event-loop turn, ~1 ms apiece on a busy agent, on every World's launch.
 */
export function checkRouting(store: Store, name: string): Promise<Routing> {
  return new Promise((resolve) => resolve(routeOf(store, name))); // a throw rejects
}

function routeOf(store: Store, name: string): Routing {
  const root = getRoot(store.db, name);
  if (!root) throw new StoreError('ROOT_NOT_FOUND', `no root named ${name} in the store at ${store.dir}`);
  // A Root being released or released (store/release-root.ts) is read and written by nobody: fail closed, by name.
  if (root.state === 'Releasing') throw new StoreError('ROOT_RELEASING', `root ${name} is being released to ${root.nodePath}; nothing forks from it or commits into it`);
  if (root.state === 'Released') throw new StoreError('ROOT_RELEASED', `root ${name} was released to ${root.nodePath} as a plain directory; it is no longer in the store`);
  const gen = getGeneration(store.db, root.rootKey, root.generation);
  if (!gen) throw broken(name, `generation ${root.generation} is not recorded`);
  const liveDir = lstatSync(store.layout.live);
  if (!liveDir.isDirectory()) throw broken(name, `${store.layout.live} is not a directory`);

  const liveLink = liveLinkPath(store.layout, root.rootKey);
  const liveTarget = readLinkOrNull(liveLink);
  if (liveTarget === null) throw broken(name, `${liveLink} is not a symlink`);
  if (liveTarget !== liveLinkTarget(gen.id)) throw broken(name, `${liveLink} points to ${liveTarget}, not to generation ${gen.id}`);

  const payloadPath = payloadDir(store.layout, gen.id);
  for (const hop of [store.layout.generations, generationDir(store.layout, gen.id), payloadPath]) {
    const st = orUndefined(() => lstatSync(hop));
    if (!st?.isDirectory()) throw broken(name, `${hop} is not a directory`);
  }
  const marker = readMarker(store.layout, gen.id);
  if (!marker || marker.rootKey !== root.rootKey || marker.generation !== root.generation || marker.digest !== root.digest) {
    throw broken(name, `the marker of generation ${gen.id} does not match the recorded root`);
  }

  // The host path is the owner's: it links to the Root's view link, which names a mounted view of this Root.
  const viewLink = viewLinkPath(store.layout, root.rootKey);
  const hostTarget = readLinkOrNull(root.nodePath);
  if (hostTarget === null) throw broken(name, `${root.nodePath} is not a symlink`);
  if (hostTarget !== viewLink) throw broken(name, `${root.nodePath} points to ${hostTarget}, not to ${viewLink}`);
  const viewId = currentViewId(store.layout, root.rootKey);
  if (viewId === undefined) throw broken(name, `${viewLink} does not name a view`);
  if (viewRecordOf(viewId)?.rootKey !== root.rootKey) throw broken(name, `${viewLink} names view ${viewId}, which is not one of this root's`);
  const view = viewPaths(store.layout, viewId).merged;
  const viewTop = orUndefined(() => statSync(view, { bigint: true }));
  const viewReached = orUndefined(() => statSync(root.nodePath, { bigint: true }));
  const storeDev = orUndefined(() => statSync(store.layout.views, { bigint: true }))?.dev;
  if (!viewTop || viewTop.dev === storeDev) throw broken(name, `the view ${viewId} is not mounted at ${view}`);
  if (!viewReached || viewReached.dev !== viewTop.dev || viewReached.ino !== viewTop.ino) throw broken(name, `${root.nodePath} does not resolve to the mounted view ${viewId}`);
  const recorded = `${gen.payloadDev}:${gen.payloadIno}`;
  // A stacked generation is identified by its own layer, and its payload is the mount of its stack on
  // top of the (empty) payload directory: all three ways in must reach that mount, on another device.
  let expected = recorded;
  if (isStacked(marker)) {
    const layer = orUndefined(() => lstatSync(layerDir(store.layout, gen.id), { bigint: true }));
    const found = layer ? `${layer.dev}:${layer.ino}` : 'nothing';
    if (found !== recorded) throw broken(name, `the layer of generation ${gen.id} is not the one published (device:inode ${recorded}, found ${found})`);
    const mounted = orUndefined(() => statSync(payloadPath, { bigint: true }));
    if (!mounted || mounted.dev === layer!.dev) throw broken(name, `the stacked payload of generation ${gen.id} is not mounted at ${payloadPath}`);
    expected = `${mounted.dev}:${mounted.ino}`;
  }
  for (const via of [payloadPath, liveLink]) {
    const reached = orUndefined(() => statSync(via, { bigint: true }));
    const found = reached ? `${reached.dev}:${reached.ino}` : 'nothing';
    if (found !== expected) throw broken(name, `${via} does not resolve to the payload published for generation ${gen.id} (device:inode ${expected}, found ${found})`);
  }
  // Every payload is a read-only mount (generation-stack.ts): a writable one would let a write through the
  // host link change this generation, every one stacked on it and every World's lower layer.
  if (!isReadOnlyMount(payloadPath)) throw broken(name, `the payload of generation ${gen.id} at ${payloadPath} is not sealed read-only`);
  return { root, generationId: gen.id, payloadPath, layers: isStacked(marker) ? stackDirs(store.layout, stackIds(marker, gen.id)) : [payloadPath], liveLink, viewId };
}

/** A stat that cannot be taken (missing, a non-directory or a loop on the way) is no directory and no payload. */
function orUndefined<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * checkRouting once every change of the live mapping queued before it (collapse commits, adoption, release:
 * store-serial.ts) has settled. A reader outside that queue (a World's fork, a Check, a Root's status)
 * could otherwise read the record before a commit and the link after its exchange, and take a commit in
 * flight for a broken route (LIVE_MAPPING_BROKEN, seen by the fault campaign). Never call it from inside
 * the queue: it would wait for itself.
 */
export function checkRoutingSettled(store: Store, name: string): Promise<Routing> {
  return serializedOnStore(store.dir, () => checkRouting(store, name));
}

/** Where to read PRIME of a root: its payload directory in the store, after the route is checked. */
export async function primePath(store: Store, name: string): Promise<string> {
  return (await checkRouting(store, name)).payloadPath;
}
