// Where everything lives inside a node store, and making sure its directories have the right shape.
import { chmod, chown, lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError, errnoCode } from './store-errors.js';

export const DEFAULT_STORE_DIR = '/var/lib/worldline';

export interface StoreLayout {
  dir: string;
  generations: string;
  live: string;
  staging: string;
  worlds: string;
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
    staging: join(dir, 'staging'),
    worlds: join(dir, 'worlds'),
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

/** The store's subdirectories; call once the store's lock is held (the store directory is checked first). */
export async function ensureLayout(l: StoreLayout): Promise<void> {
  for (const d of [l.generations, l.live, l.staging, l.worlds, l.candidates]) await ensurePrivateDir(d);
}
