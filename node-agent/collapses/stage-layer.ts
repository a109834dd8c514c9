// The layer of a stacked generation (store/generation-stack.ts): what a candidate changes against its
// base, written as an overlay layer, and the check that a layer holds exactly that.
//
// For every path the candidate adds, changes or removes (in byte order, so a parent comes first):
// - removed: a whiteout (a 0:0 character device, made with renameat2 RENAME_WHITEOUT) hides it and
//   everything below it in the layers under this one;
// - a file or a symlink: its bytes copied from the candidate (or its target), owner and mode set; it hides
//   whatever the layers below have at that path;
// - a directory: created with its owner and mode; the layers below show through it.
// Every directory on the way to one of those is created with the owner and mode the next manifest gives
// it (overlayfs shows the topmost layer's directory attributes), and so is the layer's own top directory.
//
// Cost: O(changed paths × depth). The layers below are never read or written here.
import { chmodSync, chownSync, closeSync, copyFileSync, fsyncSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, symlinkSync, unlinkSync, writeFileSync, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { parentOf } from '../../core/relative-path.js';
import type { ManifestEntry, RootAttributes } from '../../core/manifest.js';
import type { LayerItem } from '../../core/layer-plan.js';
import * as native from '../../native/index.js';
import { hashOpenFile } from '../store/hash-file.js';

export interface BuiltLayer {
  items: LayerItem[];
  /** Files whose bytes were copied from the candidate. */
  copied: number;
  whiteouts: number;
  /**
   * Every file and directory of the layer, relative to it ('' for its top): written, not yet fsynced. The
   * commit makes them durable in its one batch before the exchange (commit-generation.ts).
   */
  unsynced: string[];
}

/**
 * Creates one manifest entry at `to`: a directory (owner and mode; the caller fsyncs it once filled), a
 * symlink, or a file copied from `candidateRoot` with the entry's owner and mode, fsynced here unless
 * `sync` is false (then the caller fsyncs it).
 */
export function writeEntry(to: string, e: ManifestEntry, candidateRoot: string, sync = true): void {
  if (e.type === 'dir') {
    mkdirSync(to, { mode: 0o700 });
    setOwnerAndMode(to, e);
  } else if (e.type === 'symlink') {
    symlinkSync(e.target ?? '', to);
    lchownSync(to, e.uid, e.gid);
  } else {
    copyFileSync(join(candidateRoot, e.path), to, fsc.COPYFILE_EXCL);
    setOwnerAndMode(to, e);
    if (sync) syncPath(to);
  }
}

/** Owner, then mode (chown clears setuid and setgid bits). */
export function setOwnerAndMode(path: string, a: ManifestEntry | RootAttributes): void {
  chownSync(path, a.uid, a.gid);
  chmodSync(path, a.mode); // after chown, which clears setuid and setgid bits
}

/** fsync of a file or directory by path. */
export function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A whiteout at `path`: an empty file renamed away with RENAME_WHITEOUT leaves one behind. */
function makeWhiteout(dir: string, name: string): void {
  const dirFd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    const spare = `.wl-whiteout-${process.pid}`;
    writeFileSync(join(dir, name), '', { flag: 'wx', mode: 0o600 });
    native.renameat2(dirFd, name, dirFd, spare, native.RENAME_WHITEOUT);
    unlinkSync(join(dir, spare));
  } finally {
    closeSync(dirFd);
  }
}

/**
 * Writes the layer at `layer` (a new directory): the items of planLayer, file bytes from `candidateRoot`
 * (the candidate's copy of the Root's changed files), the top directory with `rootAttributes`. Nothing of
 * it is fsynced here: it lists what it wrote (`unsynced`), and the commit syncs that in the same batch as
 * the generation's marker and directories, after moving the layer into generations/ and before the
 * exchange. Until that exchange nothing refers to the layer: a crash before it is rolled back, and the
 * layer removed, whatever of it reached the disk.
 */
export function buildLayer(layer: string, items: readonly LayerItem[], rootAttributes: RootAttributes, candidateRoot: string): BuiltLayer {
  mkdirSync(layer, { mode: 0o700 });
  const unsynced = [''];
  let copied = 0;
  let whiteouts = 0;
  for (const item of items) {
    const to = join(layer, item.path);
    if (item.kind === 'whiteout') {
      makeWhiteout(join(layer, parentOf(item.path)), item.path.slice(item.path.lastIndexOf('/') + 1));
      whiteouts++;
      continue;
    }
    writeEntry(to, item.entry, candidateRoot, false);
    if (item.entry.type === 'dir' || item.entry.type === 'file') unsynced.push(item.path);
    if (item.entry.type === 'file') copied++;
  }
  setOwnerAndMode(layer, rootAttributes);
  return { items: [...items], copied, whiteouts, unsynced };
}

/**
 * The first way the layer at `layer` differs from `items` (and top attributes `root`), or undefined when
 * it holds exactly them: each item with its type, owner, mode, size, bytes (hashed now) or target, each
 * whiteout a 0:0 character device, and no other entry in any directory of the layer.
 */
export function layerMismatch(layer: string, items: readonly LayerItem[], root: RootAttributes): string | undefined {
  const buffer = Buffer.allocUnsafe(1 << 16);
  const children = new Map<string, Set<string>>([['', new Set()]]);
  for (const item of items) {
    const parent = parentOf(item.path);
    const set = children.get(parent);
    if (!set) return `${item.path}: its directory is not part of the layer`;
    set.add(item.path.slice(item.path.lastIndexOf('/') + 1));
    if (item.kind === 'entry' && item.entry.type === 'dir') children.set(item.path, new Set());
  }
  const top = lstatSync(layer);
  if (!top.isDirectory() || (top.mode & 0o7777) !== root.mode || top.uid !== root.uid || top.gid !== root.gid) return 'the layer top directory has other attributes';
  for (const [dir, names] of children) {
    const found = readdirSync(join(layer, dir));
    if (found.length !== names.size || found.some((n) => !names.has(n))) return `${dir || '.'}: the layer's directory holds ${found.length} entries, ${names.size} expected`;
  }
  for (const item of items) {
    const path = join(layer, item.path);
    const st = lstatSync(path);
    if (item.kind === 'whiteout') {
      if (!st.isCharacterDevice() || st.rdev !== 0) return `${item.path}: not a whiteout`;
      continue;
    }
    const e = item.entry;
    if (st.uid !== e.uid || st.gid !== e.gid) return `${item.path}: owner ${st.uid}:${st.gid}, expected ${e.uid}:${e.gid}`;
    if (e.type === 'symlink') {
      if (!st.isSymbolicLink() || readlinkSync(path) !== (e.target ?? '')) return `${item.path}: not the symlink expected`;
      continue;
    }
    if ((st.mode & 0o7777) !== e.mode) return `${item.path}: mode ${(st.mode & 0o7777).toString(8)}, expected ${e.mode.toString(8)}`;
    if (e.type === 'dir') {
      if (!st.isDirectory()) return `${item.path}: not a directory`;
      continue;
    }
    if (!st.isFile() || st.nlink !== 1) return `${item.path}: not a singly linked regular file`;
    const fd = openSync(path, fsc.O_RDONLY | fsc.O_NOFOLLOW);
    try {
      const h = hashOpenFile(fd, buffer);
      if (h.size !== e.size || h.sha256 !== e.sha256) return `${item.path}: its bytes are not the candidate's`;
    } finally {
      closeSync(fd);
    }
  }
  return undefined;
}
