// The private evaluator's frozen input: the candidate's tree copied, with change detection, into a tree
// of ordinary directories and singly linked regular files the node-agent owns the shape of. Anything else
// in the source refuses the copy by name (PRIVATE_INPUT_REFUSED, the path and why): a symbolic link, a
// special file, a file with more than one link, setuid/setgid/sticky bits, an extended attribute, a mount
// inside the tree, or an entry that changed while it was copied. The examiner is to see the frozen tree
// read-only; each worker gets a disposable copy of it (copyFrozen) whose identity must be the frozen one
// (PRIVATE_EVALUATOR_BOUNDARY_FAILED otherwise); a candidate session gets an overlay view (session-view.ts).
//
// Identity: `source` is the manifest of what was read (owners as in the source), so its digest is the
// candidate's manifest digest when the source is the candidate's tree; `identity` is the digest of the same
// entries without owners, because each copy belongs to the principal that uses it.
import { createHash } from 'node:crypto';
import { closeSync, constants as fsc, fchmodSync, fchownSync, fstatSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, readSync, symlinkSync, writeSync, chmodSync, chownSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { Refusal } from '../../core/errors.js';
import { manifestDigest, type Manifest, type ManifestEntry } from '../../core/manifest.js';
import { compareBytes } from '../../core/relative-path.js';
import * as native from '../../native/index.js';
import { BoundaryFailed } from './check-principals.js';

export class InputRefused extends Refusal {
  declare readonly code: 'PRIVATE_INPUT_REFUSED';
  constructor(readonly path: string, why: string) {
    super('PRIVATE_INPUT_REFUSED', `the candidate's input cannot be frozen: ${path === '' ? 'its top' : path}: ${why}`);
    this.name = 'InputRefused';
  }
}

export interface FrozenTree {
  dir: string;
  /** What was read, owners included (sorted entries; root attributes of the top). */
  source: Manifest;
  /** manifestDigest of source. */
  sourceDigest: string;
  /** The digest of the entries without owners: what every copy must show. */
  identity: string;
}

const CHUNK = 1024 * 1024;
const SPECIAL_BITS = 0o7000;

export interface FreezeOptions {
  /** Test hook: runs after an entry is lstat'ed and before it is opened, so a test can change it. */
  afterLstat?: (relPath: string) => void;
}

export interface CopyOptions extends FreezeOptions {
  /** Symbolic links are copied when this names no problem with one (at `relPath`, pointing at `target`); absent, every link refuses. */
  linkProblem?: (relPath: string, target: string) => string | undefined;
  /** The error a refusal throws (default InputRefused). */
  refuse?: (relPath: string, why: string) => Error;
  /**
   * A directory fd `src` is relative to: the top is then opened beneath it with no symbolic link in any
   * component (openat2 RESOLVE_NO_SYMLINKS), so nobody who can write below that directory can point the
   * copy elsewhere. Without it, `src` is a path the caller trusts.
   */
  beneath?: number;
}

/** Copies `src` into `dst` (which must not exist), every entry owned by `ownerHostId`. */
export function freezeTree(src: string, dst: string, ownerHostId: number, opts: FreezeOptions = {}): FrozenTree {
  const source = copyTree(src, dst, ownerHostId, opts);
  return { dir: dst, source, sourceDigest: manifestDigest(source), identity: identityOf(source) };
}

/** A disposable copy of a frozen tree for one run, owned by that run's principal; its identity is checked. */
export function copyFrozen(frozen: FrozenTree, dst: string, ownerHostId: number): string {
  const copied = identityOf(copyTree(frozen.dir, dst, ownerHostId));
  if (copied !== frozen.identity) throw new BoundaryFailed([`a copy of the frozen input at ${dst} is ${copied}, not the frozen ${frozen.identity}`]);
  return dst;
}

/** The digest of a manifest's entries with owners left out. */
export function identityOf(m: Manifest): string {
  return manifestDigest({ entries: m.entries.map((e) => ({ ...e, uid: 0, gid: 0 })), root: m.root ? { ...m.root, uid: 0, gid: 0 } : undefined });
}

/** Copies `src` into `dst` (which must not exist) under the frozen input's rules, every entry owned by `owner`; returns the source's manifest. */
export function copyTree(src: string, dst: string, owner: number, opts: CopyOptions = {}): Manifest {
  const rootFd = opts.beneath === undefined ? openSync(src, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW) : openTop(opts.beneath, src, opts.refuse);
  try {
    const top = fstatSync(rootFd, { bigint: true });
    const mntId = native.statx(rootFd, '', native.AT_EMPTY_PATH).mntId;
    const entries: ManifestEntry[] = [];
    mkdirSync(dst, { mode: 0o700 });
    const refuse = opts.refuse ?? ((rel: string, why: string) => new InputRefused(rel, why));
    // Entries are looked up through the open top itself, never through the path it was opened by: a parent
    // swapped for a link after the open changes nothing here.
    copyDir({ rootFd, src: `/proc/self/fd/${rootFd}`, dst, owner, mntId, entries, refuse, ...(opts.afterLstat ? { afterLstat: opts.afterLstat } : {}), ...(opts.linkProblem ? { linkProblem: opts.linkProblem } : {}) }, '', top);
    entries.sort((a, b) => compareBytes(a.path, b.path));
    return { entries, root: { mode: Number(top.mode) & 0o7777, uid: Number(top.uid), gid: Number(top.gid) } };
  } finally {
    native.closeFd(rootFd);
  }
}

function openTop(beneath: number, rel: string, refuse: CopyOptions['refuse']): number {
  try {
    return native.openBeneath(beneath, rel, fsc.O_RDONLY | fsc.O_DIRECTORY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EXDEV' || code === 'ENOTDIR' || code === 'ENOENT') {
      const why = `is not a directory reached without a symbolic link (${code})`;
      throw refuse ? refuse('', why) : new InputRefused('', why);
    }
    throw err;
  }
}

interface Walk {
  rootFd: number;
  src: string;
  dst: string;
  owner: number;
  mntId: number;
  entries: ManifestEntry[];
  afterLstat?: (relPath: string) => void;
  linkProblem?: (relPath: string, target: string) => string | undefined;
  refuse: (relPath: string, why: string) => Error;
}

/** Opens an entry beneath the top; one that became a link or vanished since its lstat changed while copied. */
function openEntry(w: Walk, rel: string, flags: number): number {
  try {
    return native.openBeneath(w.rootFd, rel, flags);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR' || code === 'EXDEV') throw w.refuse(rel, `changed while it was copied (${code})`);
    throw err;
  }
}

function sameInode(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.nlink === b.nlink && a.mode === b.mode;
}

/** The checks every entry gets: no mount under the tree's top, no special permission bits, no xattrs. */
function checkEntry(w: Walk, rel: string, fd: number, st: BigIntStats): void {
  if (native.statx(fd, '', native.AT_EMPTY_PATH).mntId !== w.mntId) throw w.refuse(rel, 'is on another mount');
  if ((Number(st.mode) & SPECIAL_BITS) !== 0) throw w.refuse(rel, `has setuid, setgid or sticky bits (mode ${(Number(st.mode) & 0o7777).toString(8)})`);
  const xattrs = native.llistxattr(join(w.src, rel === '' ? '.' : rel));
  if (xattrs.length > 0) throw w.refuse(rel, `has extended attributes (${xattrs.join(', ')})`);
}

function copyDir(w: Walk, rel: string, seen: BigIntStats): void {
  const fd = rel === '' ? w.rootFd : openEntry(w, rel, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    const before = fstatSync(fd, { bigint: true });
    if (!sameInode(before, seen)) throw w.refuse(rel, 'changed while it was copied');
    checkEntry(w, rel, fd, before);
    const names = readdirSync(`/proc/self/fd/${fd}`).sort(compareBytes);
    for (const name of names) {
      const child = rel === '' ? name : `${rel}/${name}`;
      if (name.includes('\uFFFD')) throw w.refuse(child, 'its name is not valid UTF-8');
      const st = lstatSync(join(w.src, child), { bigint: true, throwIfNoEntry: false });
      if (st === undefined) throw w.refuse(child, 'changed while it was copied (it vanished)');
      w.afterLstat?.(child);
      if (st.isDirectory()) {
        mkdirSync(join(w.dst, child), { mode: 0o700 });
        copyDir(w, child, st);
      } else if (st.isFile()) {
        copyFile(w, child, st);
      } else if (st.isSymbolicLink() && w.linkProblem) {
        copyLink(w, child, st);
      } else {
        throw w.refuse(child, st.isSymbolicLink() ? 'is a symbolic link' : 'is a special file');
      }
    }
    const after = fstatSync(fd, { bigint: true });
    if (!sameInode(before, after)) throw w.refuse(rel, 'changed while it was copied');
    const out = join(w.dst, rel);
    chownSync(out, w.owner, w.owner);
    chmodSync(out, Number(before.mode) & 0o777);
    if (rel !== '') w.entries.push({ path: rel, type: 'dir', mode: Number(before.mode) & 0o7777, uid: Number(before.uid), gid: Number(before.gid) });
  } finally {
    if (rel !== '') native.closeFd(fd);
  }
}

function copyLink(w: Walk, rel: string, seen: BigIntStats): void {
  const target = readlinkSync(join(w.src, rel));
  const again = lstatSync(join(w.src, rel), { bigint: true, throwIfNoEntry: false });
  if (again === undefined || !again.isSymbolicLink() || !sameInode(seen, again)) throw w.refuse(rel, 'changed while it was copied');
  const problem = w.linkProblem?.(rel, target);
  if (problem !== undefined) throw w.refuse(rel, problem);
  if (seen.nlink !== 1n) throw w.refuse(rel, `has ${seen.nlink} links`);
  const xattrs = native.llistxattr(join(w.src, rel));
  if (xattrs.length > 0) throw w.refuse(rel, `has extended attributes (${xattrs.join(', ')})`);
  symlinkSync(target, join(w.dst, rel));
  lchownSync(join(w.dst, rel), w.owner, w.owner);
  w.entries.push({ path: rel, type: 'symlink', mode: Number(seen.mode) & 0o7777, uid: Number(seen.uid), gid: Number(seen.gid), target });
}

function copyFile(w: Walk, rel: string, seen: BigIntStats): void {
  if (seen.nlink !== 1n) throw w.refuse(rel, `has ${seen.nlink} links`);
  const fd = openEntry(w, rel, fsc.O_RDONLY | fsc.O_NONBLOCK | fsc.O_NOFOLLOW);
  try {
    const before = fstatSync(fd, { bigint: true });
    if (!before.isFile() || !sameInode(before, seen)) throw w.refuse(rel, 'changed while it was copied');
    checkEntry(w, rel, fd, before);
    const out = openSync(join(w.dst, rel), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    const hash = createHash('sha256');
    let size = 0;
    try {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, Number(before.size))));
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, size);
        if (n === 0) break;
        hash.update(buf.subarray(0, n));
        writeSync(out, buf, 0, n);
        size += n;
      }
      fchownSync(out, w.owner, w.owner);
      fchmodSync(out, Number(before.mode) & 0o777);
    } finally {
      closeSync(out);
    }
    const after = fstatSync(fd, { bigint: true });
    if (BigInt(size) !== before.size || !sameInode(before, after)) throw w.refuse(rel, 'changed while it was copied');
    w.entries.push({ path: rel, type: 'file', mode: Number(before.mode) & 0o7777, uid: Number(before.uid), gid: Number(before.gid), size, sha256: hash.digest('hex') });
  } finally {
    native.closeFd(fd);
  }
}
