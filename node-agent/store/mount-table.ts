// The one reader of mountinfo: the mounts a process sees (to unmount a world's mounts deepest
// first, to refuse deleting a directory something is mounted under, to find mount points inside a
// Root, and to measure what a world actually has mounted). A question about one path (is something
// mounted here?) is answered by statx instead: mountinfo is as long as the node's mount table, which
// grows with every generation a store keeps mounted, and each read of it costs more (docs/benchmarks.md).
import { readFileSync } from 'node:fs';
import * as native from '../../native/index.js';

export interface MountFact {
  /** The mount id (mountinfo's first field; statx's STATX_MNT_ID). */
  mountId: number;
  mountPoint: string;
  options: string[];
  fsType: string;
  superOptions: string[];
}

/** Undoes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function parseMountinfo(text: string): MountFact[] {
  const out: MountFact[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const [left, right] = line.split(' - ');
    const f = (left ?? '').split(' ');
    const r = (right ?? '').split(' ');
    out.push({ mountId: Number(f[0]), mountPoint: unescape(f[4] ?? ''), options: (f[5] ?? '').split(','), fsType: r[0] ?? '', superOptions: (r[2] ?? '').split(',') });
  }
  return out;
}

/** Mount points of this process (or of `pid`). */
export function mountPoints(pid: number | 'self' = 'self'): string[] {
  return parseMountinfo(readFileSync(`/proc/${pid}/mountinfo`, 'utf8')).map((m) => m.mountPoint);
}

/**
 * True when `path` is the root of a mount in this process's mount namespace (statx's
 * STATX_ATTR_MOUNT_ROOT; the last component is not followed); false when nothing is mounted there or the
 * path does not exist. A kernel that does not report the attribute is answered from mountinfo.
 */
export function isMountPoint(path: string): boolean {
  let mountRoot: boolean | null;
  try {
    mountRoot = native.statx(native.AT_FDCWD, path, native.AT_SYMLINK_NOFOLLOW).mountRoot;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw e;
  }
  return mountRoot ?? mountPoints().includes(path);
}

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return mountPoints()
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}
