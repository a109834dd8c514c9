// Where everything lives inside a node store, and making sure its directories have the right shape.
import { chmod, chown, lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError, errnoCode } from './store-errors.js';

export const DEFAULT_STORE_DIR = '/var/lib/worldline';

export interface StoreLayout {
  dir: string;
  generations: string;
  live: string;
  /** Owners' views of their Roots (owner-view.ts): the only part of the store others may traverse into. */
  views: string;
  staging: string;
  worlds: string;
  /** Run disks made ahead of Worlds' launches (sandbox/disk-pool.ts), one directory each. */
  diskPool: string;
  candidates: string;
  database: string;
  /** The single-use grant store (node-agent/evidence/grant-store.ts), provisioned with the store. */
  grants: string;
}

export function layoutOf(dir: string): StoreLayout {
  return {
    dir,
    generations: join(dir, 'generations'),
    live: join(dir, 'live'),
    views: join(dir, 'views'),
    staging: join(dir, 'staging'),
    worlds: join(dir, 'worlds'),
    diskPool: join(dir, 'disk-pool'),
    candidates: join(dir, 'candidates'),
    database: join(dir, 'state.db'),
    grants: join(dir, 'grants.db'),
  };
}

export const generationDir = (l: StoreLayout, genId: string): string => join(l.generations, genId);
export const payloadDir = (l: StoreLayout, genId: string): string => join(l.generations, genId, 'payload');
export const markerPath = (l: StoreLayout, genId: string): string => join(l.generations, genId, 'marker.json');
export const liveLinkPath = (l: StoreLayout, rootKey: string): string => join(l.live, rootKey);
/** What a live/<rootKey> link holds: a path relative to live/, so the store can be moved as a whole. */
export const liveLinkTarget = (genId: string): string => `../generations/${genId}/payload`;
/**
 * live/<rootKey>_view: the owner's view of a Root (owner-view.ts), what the host path links to. A root key
 * never holds '_' (a DNS-1123 name, or its prefix and a hex hash), so it never names a Root's PRIME link.
 */
export const viewLinkName = (rootKey: string): string => `${rootKey}_view`;
export const viewLinkPath = (l: StoreLayout, rootKey: string): string => join(l.live, viewLinkName(rootKey));
export const viewDir = (l: StoreLayout, viewId: string): string => join(l.views, viewId);
/** What a live/<rootKey>_view link holds: the view's merged directory, relative to live/. */
export const viewLinkTarget = (viewId: string): string => `../views/${viewId}/merged`;

/**
 * Create (or check) a store directory: a real directory, not a link, mode 0700, owned by this process's
 * user (root in production). An existing directory with another owner or a link refuses.
 */
export async function ensurePrivateDir(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: 0o700 });
  } catch (e) {
    if (errnoCode(e) !== 'EEXIST') throw e;
  }
  const st = await lstat(path);
  const uid = process.getuid?.() ?? 0;
  if (!st.isDirectory()) throw new StoreError('STORE_LAYOUT_INVALID', `${path} is not a directory (a link or a file is in its place)`);
  if (st.uid !== uid) throw new StoreError('STORE_LAYOUT_INVALID', `${path} is owned by uid ${st.uid}, not ${uid}`);
  if ((st.mode & 0o7777) !== 0o700) await chmod(path, 0o700);
  if (st.gid !== (process.getgid?.() ?? 0) && uid === 0) await chown(path, 0, 0);
}

/** The directories an owner passes through to reach a view: search (x) for everyone, listing for none. */
const TRAVERSABLE = 0o711;

/**
 * The store's subdirectories; call once the store's lock is held (the store directory is checked first).
 * The store directory, live/ and views/ are made traversable (0711) so that an owner reaches their view
 * by its exact path; nothing there can be listed, and every other entry of the store directory is made
 * private to root (group and other bits cleared), so the store's records stay unreachable.
 */
export async function ensureLayout(l: StoreLayout): Promise<void> {
  for (const d of [l.generations, l.staging, l.worlds, l.candidates]) await ensurePrivateDir(d);
  for (const d of [l.live, l.views]) {
    await ensurePrivateDir(d);
    await chmod(d, TRAVERSABLE);
  }
  await privatizeStoreEntries(l);
  await chmod(l.dir, TRAVERSABLE);
}

/** Clears group and other bits of every entry of the store directory except live/ and views/. */
export async function privatizeStoreEntries(l: StoreLayout): Promise<void> {
  for (const name of await readdir(l.dir)) {
    const path = join(l.dir, name);
    if (path === l.live || path === l.views) continue;
    const st = await lstat(path);
    if (!st.isSymbolicLink() && (st.mode & 0o077) !== 0) await chmod(path, st.mode & 0o7700);
  }
}
