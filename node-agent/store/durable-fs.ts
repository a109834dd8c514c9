// Small filesystem steps that survive a crash in a known state: fsync of files and directories, a file
// written whole or not at all, and a symlink replaced atomically.
import { lstat, open, rename, rm, symlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncPaths } from '../../native/index.js';
import { errnoCode } from './store-errors.js';

/**
 * Makes a directory's entries (or a file's bytes) durable (open it, fsync, close), off the event loop.
 * Not the addon's fsyncPath, which syncs any path synchronously and refuses a symbolic link.
 */
export async function fsyncDirectory(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Makes each path durable (files' bytes, directories' entries) in one call to the addon, off the event
 * loop: writeback is started on every file before the first fsync, so the filesystem's journal commits
 * them together (native/src/fsync.c). A symbolic link is refused.
 */
export async function fsyncPaths(paths: readonly string[]): Promise<void> {
  await syncPaths(paths);
}

/** The temporary sibling a file or link is written as before it is renamed over `path`. */
export const temporarySibling = (path: string): string => join(dirname(path), `.${basename(path)}.tmp`);

/** Write `data` to a temporary sibling, fsync it, rename it over `path`, fsync the directory. */
export async function writeFileDurable(path: string, data: string, mode = 0o600): Promise<void> {
  const tmp = temporarySibling(path);
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  await fsyncDirectory(dirname(path));
}

/** Point the symlink at `path` to `target`, atomically (symlink to a temporary name, rename over). */
export async function replaceSymlink(path: string, target: string): Promise<void> {
  const tmp = temporarySibling(path);
  await rm(tmp, { force: true });
  await symlink(target, tmp);
  await rename(tmp, path);
  await fsyncDirectory(dirname(path));
}

export type PathKind = 'missing' | 'dir' | 'symlink' | 'file' | 'other';

export async function pathKind(path: string): Promise<PathKind> {
  try {
    const st = await lstat(path);
    if (st.isDirectory()) return 'dir';
    if (st.isSymbolicLink()) return 'symlink';
    if (st.isFile()) return 'file';
    return 'other';
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return 'missing';
    throw e;
  }
}
