// A root's content is read through the store, never through the host path. This checks the whole route
// before anyone reads: host path -> live/<root key> -> generations/<id>/payload of the recorded
// generation, each hop exact and each store directory a real directory, and the directory reached the
// very one (device and inode) that was published for that generation, so a payload swapped for another
// directory under the same name is caught.
import { lstat, readlink, stat } from 'node:fs/promises';
import { readMarker } from './generation-marker.js';
import type { Store } from './open-store.js';
import { StoreError, errnoCode } from './store-errors.js';
import { serializedOnStore } from './store-serial.js';
import { generationDir, liveLinkPath, liveLinkTarget, payloadDir } from './store-layout.js';
import { getGeneration, getRoot, type RootRecord } from './store-records.js';

export interface Routing {
  root: RootRecord;
  generationId: string;
  /** The payload directory of PRIME, as a path with no links in it. */
  payloadPath: string;
  liveLink: string;
}

const broken = (name: string, detail: string): StoreError => new StoreError('LIVE_MAPPING_BROKEN', `root ${name}: ${detail}`);

async function readLinkOrNull(path: string): Promise<string | null> {
  try {
    return (await lstat(path)).isSymbolicLink() ? await readlink(path) : null;
  } catch (e) {
    if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') return null;
    throw e;
  }
}

/** The route of a root, or LIVE_MAPPING_BROKEN naming the first hop that is wrong. */
export async function checkRouting(store: Store, name: string): Promise<Routing> {
  const root = getRoot(store.db, name);
  if (!root) throw new StoreError('ROOT_NOT_FOUND', `no root named ${name} in the store at ${store.dir}`);
  // A Root being released or released (store/release-root.ts) is read and written by nobody: fail closed, by name.
  if (root.state === 'Releasing') throw new StoreError('ROOT_RELEASING', `root ${name} is being released to ${root.nodePath}; nothing forks from it or commits into it`);
  if (root.state === 'Released') throw new StoreError('ROOT_RELEASED', `root ${name} was released to ${root.nodePath} as a plain directory; it is no longer in the store`);
  const gen = getGeneration(store.db, root.rootKey, root.generation);
  if (!gen) throw broken(name, `generation ${root.generation} is not recorded`);
  const liveDir = await lstat(store.layout.live);
  if (!liveDir.isDirectory()) throw broken(name, `${store.layout.live} is not a directory`);

  const liveLink = liveLinkPath(store.layout, root.rootKey);
  const liveTarget = await readLinkOrNull(liveLink);
  if (liveTarget === null) throw broken(name, `${liveLink} is not a symlink`);
  if (liveTarget !== liveLinkTarget(gen.id)) throw broken(name, `${liveLink} points to ${liveTarget}, not to generation ${gen.id}`);

  const payloadPath = payloadDir(store.layout, gen.id);
  for (const hop of [store.layout.generations, generationDir(store.layout, gen.id), payloadPath]) {
    const st = await lstat(hop).catch(() => undefined);
    if (!st?.isDirectory()) throw broken(name, `${hop} is not a directory`);
  }
  const marker = await readMarker(store.layout, gen.id);
  if (!marker || marker.rootKey !== root.rootKey || marker.generation !== root.generation || marker.digest !== root.digest) {
    throw broken(name, `the marker of generation ${gen.id} does not match the recorded root`);
  }

  const hostTarget = await readLinkOrNull(root.nodePath);
  if (hostTarget === null) throw broken(name, `${root.nodePath} is not a symlink`);
  if (hostTarget !== liveLink) throw broken(name, `${root.nodePath} points to ${hostTarget}, not to ${liveLink}`);
  const recorded = `${gen.payloadDev}:${gen.payloadIno}`;
  for (const via of [payloadPath, liveLink, root.nodePath]) {
    const reached = await stat(via, { bigint: true }).catch(() => undefined);
    const found = reached ? `${reached.dev}:${reached.ino}` : 'nothing';
    if (found !== recorded) throw broken(name, `${via} does not resolve to the payload published for generation ${gen.id} (device:inode ${recorded}, found ${found})`);
  }
  return { root, generationId: gen.id, payloadPath, liveLink };
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
