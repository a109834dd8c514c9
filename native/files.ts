// File-level syscalls Node lacks: openat2 and the no-escape openBeneath, statx, renameat2, fsync of a
// path or of many at once, and lgetxattr/llistxattr for overlayfs markers. Arguments are validated here before the addon.
import { binding } from './binding.js';
import type { Openat2Options, Statx } from './types.js';
import * as v from './validate.js';

/** openat2(2); the fd is always O_CLOEXEC. */
export function openat2(dirfd: number, path: string, opts: Openat2Options): number {
  v.object('opts', opts);
  return binding.openat2(
    v.dirFd('dirfd', dirfd),
    v.relativePath('path', path, true),
    v.flags32('opts.flags', opts.flags),
    v.integer('opts.mode', opts.mode ?? 0, 0, 0o7777),
    v.flags32('opts.resolve', opts.resolve),
  );
}

/**
 * Opens relPath beneath rootDirFd without ever following a symlink or leaving the directory:
 * openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or, where the kernel lacks
 * openat2 (ENOSYS), a per-component O_NOFOLLOW walk. Escapes fail with EXDEV ("..", absolute paths) or
 * ELOOP (any symlink). The fallback is stricter: it refuses every ".." component, even a harmless one.
 */
export function openBeneath(rootDirFd: number, relPath: string, flags: number, mode = 0): number {
  return binding.openBeneath(
    v.dirFd('rootDirFd', rootDirFd),
    v.relativePath('relPath', relPath),
    v.flags32('flags', flags),
    v.integer('mode', mode, 0, 0o7777),
  );
}

/**
 * Closes an fd that openat2 or openBeneath returned. Use it rather than fs.closeSync in a worker thread,
 * where Node warns about closing an fd its fs module did not open.
 */
export function closeFd(fd: number): void {
  binding.closeFd(v.fd('fd', fd));
}

/** Test hook: make openBeneath skip openat2 and use the fallback walk (process-wide). */
export function forceBeneathFallback(on: boolean): void {
  binding.forceBeneathFallback(v.bool('on', on));
}

/** statx(2) with STATX_BASIC_STATS|STATX_MNT_ID. Pass AT_SYMLINK_NOFOLLOW for lstat semantics. */
export function statx(dirfd: number, path: string, flags: number): Statx {
  return binding.statx(v.dirFd('dirfd', dirfd), v.relativePath('path', path, true), v.integer('flags', flags, 0, 0x7fffffff));
}

/** renameat2(2): flags 0, RENAME_NOREPLACE, RENAME_EXCHANGE or RENAME_WHITEOUT. */
export function renameat2(olddirfd: number, oldpath: string, newdirfd: number, newpath: string, flags: number): void {
  binding.renameat2(
    v.dirFd('olddirfd', olddirfd),
    v.relativePath('oldpath', oldpath),
    v.dirFd('newdirfd', newdirfd),
    v.relativePath('newpath', newpath),
    v.flags32('flags', flags),
  );
}

/** Opens path O_RDONLY|O_NOFOLLOW (O_DIRECTORY for a directory), fsyncs and closes it. */
export function fsyncPath(path: string): void {
  binding.fsyncPath(v.absolutePath('path', path));
}

/**
 * Every path made durable (a file's bytes, a directory's entries) by one call on the thread pool: writeback
 * started on all the files first (sync_file_range), then the fsyncs made by up to eight threads at once,
 * so their journal commits and cache flushes are shared. Symbolic links are refused (ELOOP). Rejects with
 * the first failure, naming its path.
 */
export function syncPaths(paths: readonly string[]): Promise<void> {
  return binding.syncPaths(v.stringArray('paths', paths, v.absolutePath));
}

export function fsyncFd(fd: number): void {
  binding.fsyncFd(v.fd('fd', fd));
}

/** The value of an extended attribute of path itself (a trailing symlink is not followed); null if absent. */
export function lgetxattr(path: string, name: string): Buffer | null {
  return binding.lgetxattr(v.absolutePath('path', path), v.nonEmptyString('name', name));
}

/** The extended attribute names of path itself. */
export function llistxattr(path: string): string[] {
  return binding.llistxattr(v.absolutePath('path', path));
}
