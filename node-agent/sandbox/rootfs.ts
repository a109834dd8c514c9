// Builds a world's root filesystem on the host (as root, before the sandbox starts) and takes it
// down again. The tree: a read-only tmpfs root; the host's system directories bound read-only; a
// minimal /dev; private /tmp and an empty HOME; each Root at its own path as an overlay whose lower
// layer is the immutable generation seen through an idmapped mount (so files keep their owners
// inside); and the one credential, read-only. Nothing of the store, the agent's config or keys.
import { chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as native from '../../native/index.js';
import { ID_RANGE } from '../config.js';
import { isMountPoint, mountsUnder } from '../store/mount-table.js';
import { layerPaths, type LayerPaths, type WorldPaths } from './run-paths.js';
import { withIdmapNamespace } from './idmap-namespace.js';

export interface RootMount {
  /** Store key of the Root (directory name of its layers). */
  rootKey: string;
  /** The generation payload directory (PRIME at fork time), read through the store. */
  payload: string;
  /**
   * The payload's layers, topmost first (store/generation-stack.ts): each is idmapped and the overlay
   * stacks them under the world's upper. Absent: the payload is one directory.
   */
  layers?: string[];
  /** Where the Root appears inside the world (its spec.path). */
  path: string;
}

export interface RootfsSpec {
  paths: WorldPaths;
  roots: RootMount[];
  /** The world's host id range: namespace ids 0..count-1 are host ids base..base+count-1. */
  idBase: number;
  idCount: number;
  /** Namespace uid/gid of the agent (owner of HOME and the credential). */
  uid: number;
  gid: number;
  home: string;
  credential?: { path: string; value: Buffer };
  tmpSize?: string;
  /** Mounts one Root's view in place of mountRootLayer (a check's view stacks more lower layers). */
  mountRoot?: (paths: WorldPaths, root: RootMount, usernsFd: number, idBase: number) => LayerPaths;
}

/** Directories bound read-only from the host when they are real directories there. */
const SYSTEM_DIRS = ['usr', 'etc', 'opt', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
const DEV_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];
/** Overlay options that keep the upper layer a plain record of changes (no redirects, no metadata-only copies). */
const OVERLAY_OPTIONS = ['redirect_dir=off', 'metacopy=off', 'index=off'];

function mkdirp(p: string, mode = 0o755): void {
  mkdirSync(p, { recursive: true, mode });
}

function touch(p: string): void {
  closeSync(openSync(p, 'a', 0o644));
}

/**
 * The host id an upper layer's top directory takes for a Root top owned by `id`: the world's own mapping
 * of it, or — for an id the world's range cannot map (65536 or more) — the id itself, so the world sees
 * its root directory as it sees the lower one (the overflow id) and capture finds the owner unchanged.
 */
export function upperTopOwner(id: number, idBase: number): number {
  return id < ID_RANGE ? idBase + id : id;
}

/**
 * Idmaps each layer of a generation, topmost first, at <lower>/0, <lower>/1, ...; returns those mount
 * points (the overlay's lower layers, in order). <lower>/0 is the generation's own directory: the
 * isolation observation identifies the base by it (lowerTop).
 */
export function mountLowers(lower: string, layers: readonly string[], usernsFd: number): string[] {
  return layers.map((layer, i) => {
    const at = join(lower, String(i));
    mkdirp(at, 0o700);
    native.mountIdmapped(layer, at, usernsFd, { readonly: true, recursive: false });
    return at;
  });
}

/** Where a Root's topmost lower layer is mounted in a world or check (the generation's identity). */
export const lowerTop = (l: Pick<LayerPaths, 'lower'>): string => join(l.lower, '0');

/** Mounts one Root's overlay; returns its layer paths. */
export function mountRootLayer(paths: WorldPaths, root: RootMount, usernsFd: number, idBase: number): LayerPaths {
  const l = layerPaths(paths, root.rootKey);
  for (const d of [l.lower, l.upper, l.work, l.merged]) mkdirp(d, 0o700);
  // The merged root directory takes the upper root's owner and mode: give it the lower root's, mapped.
  // That is the topmost layer's root (every layer has one), read without the payload's own mount.
  const top = lstatSync(root.layers?.[0] ?? root.payload);
  chownSync(l.upper, upperTopOwner(top.uid, idBase), upperTopOwner(top.gid, idBase));
  chmodSync(l.upper, top.mode & 0o7777);
  const lowers = mountLowers(l.lower, root.layers ?? [root.payload], usernsFd);
  native.mountOverlay(l.merged, { lower: lowers, upper: l.upper, work: l.work, extra: OVERLAY_OPTIONS, nosuid: true, nodev: true });
  return l;
}

/**
 * The part of a sandbox's root filesystem that holds nothing of its own: a tmpfs at `rf`, the host's
 * system directories bound read-only, an empty /proc, a minimal /dev with a private /dev/shm, and a
 * private /tmp of `tmpSize`. The caller adds its own mounts, then seals the root read-only (sealRootfs).
 */
export function mountSystemTree(rf: string, tmpSize: string): void {
  native.mountTmpfs(rf, { mode: 0o755, size: '16m', nosuid: true, nodev: true, noexec: false });
  for (const d of SYSTEM_DIRS) {
    const host = `/${d}`;
    if (!existsSync(host)) continue;
    const st = lstatSync(host);
    if (st.isSymbolicLink()) {
      symlinkSync(readlinkSync(host), join(rf, d));
    } else if (st.isDirectory()) {
      mkdirp(join(rf, d));
      native.bindMount(host, join(rf, d), { readonly: true, recursive: true, nosuid: true, nodev: true });
    }
  }
  mkdirp(join(rf, 'proc'), 0o555);
  mkdirp(join(rf, 'dev'));
  native.mountTmpfs(join(rf, 'dev'), { mode: 0o755, size: '1m', nosuid: true, nodev: false, noexec: true });
  for (const n of DEV_NODES) {
    if (!existsSync(`/dev/${n}`)) continue;
    touch(join(rf, 'dev', n));
    native.bindMount(`/dev/${n}`, join(rf, 'dev', n), { readonly: false, recursive: false, nosuid: true, noexec: true });
  }
  for (const [name, target] of [['fd', '/proc/self/fd'], ['stdin', '/proc/self/fd/0'], ['stdout', '/proc/self/fd/1'], ['stderr', '/proc/self/fd/2']] as const) {
    symlinkSync(target, join(rf, 'dev', name));
  }
  mkdirp(join(rf, 'dev', 'shm'), 0o1777);
  native.mountTmpfs(join(rf, 'dev', 'shm'), { mode: 0o1777, size: '64m', nosuid: true, nodev: true, noexec: true });
  mkdirp(join(rf, 'tmp'), 0o1777);
  native.mountTmpfs(join(rf, 'tmp'), { mode: 0o1777, size: tmpSize, nosuid: true, nodev: true, noexec: false });
}

/** Seals a root filesystem: the sandbox cannot add files to / or replace any mount point. */
export function sealRootfs(rf: string): void {
  native.mount(null, rf, null, native.MS_REMOUNT | native.MS_BIND | native.MS_RDONLY | native.MS_NOSUID | native.MS_NODEV);
}

export function assembleRootfs(spec: RootfsSpec): LayerPaths[] {
  const { paths } = spec;
  const hostUid = spec.idBase + spec.uid;
  const hostGid = spec.idBase + spec.gid;
  mkdirp(paths.dir, 0o711);
  mkdirp(paths.rootfs, 0o755);
  mkdirp(paths.layers, 0o700);
  const layers = withIdmapNamespace(spec.idBase, spec.idCount, (userns) => spec.roots.map((r) => (spec.mountRoot ?? mountRootLayer)(paths, r, userns, spec.idBase)));

  const rf = paths.rootfs;
  mountSystemTree(rf, spec.tmpSize ?? '512m');

  // HOME: an empty tmpfs owned by the agent; nothing of any real home directory is visible.
  const home = join(rf, spec.home);
  mkdirp(home);
  native.mountTmpfs(home, { mode: 0o700, size: '256m', uid: hostUid, gid: hostGid, nosuid: true, nodev: true, noexec: false });

  spec.roots.forEach((r, i) => {
    const target = join(rf, r.path);
    mkdirp(target);
    native.bindMount((layers[i] as LayerPaths).merged, target, { readonly: false, recursive: false, nosuid: true, nodev: true });
  });

  if (spec.credential) {
    writeFileSync(paths.credential, spec.credential.value, { mode: 0o400 });
    chownSync(paths.credential, hostUid, hostGid);
    const target = join(rf, spec.credential.path);
    mkdirp(dirname(target));
    touch(target);
    native.bindMount(paths.credential, target, { readonly: true, recursive: false, nosuid: true, nodev: true, noexec: true });
  }
  sealRootfs(rf);
  return layers;
}

/**
 * Detaches every mount at or below `dir`; returns the mounts still there afterwards. A lazy detach takes
 * the whole tree below a mount with it, and each umount2 waits for an RCU grace period (most of its
 * cost), so only the outermost mounts are detached: a sandbox's root filesystem, a tmpfs with a dozen
 * mounts inside, goes in one call instead of one per mount. Each point listed is then asked again by
 * statx (the mount table is as long as every mount on the node, and grows with the generations a store
 * keeps mounted); if any is still a mount point, everything left is detached one by one, deepest first,
 * and reported if it stays.
 */
export function unmountAllUnder(dir: string): string[] {
  const all = mountsUnder(dir); // deepest first; a point with stacked mounts is listed once per mount
  if (all.length === 0) return all;
  detachEach(all.filter((m) => !all.some((o) => o !== m && m.startsWith(o.endsWith('/') ? o : `${o}/`))));
  if (!all.some(mountedOrUnknown)) return [];
  detachEach(mountsUnder(dir));
  return mountsUnder(dir);
}

/** True when statx says `path` is a mount point, or cannot say (then the caller asks the mount table). */
function mountedOrUnknown(path: string): boolean {
  try {
    return isMountPoint(path);
  } catch {
    return true;
  }
}

function detachEach(mounts: readonly string[]): void {
  for (const m of mounts) {
    try {
      native.umount2(m, native.MNT_DETACH);
    } catch {
      /* the caller reports it if it is still there */
    }
  }
}

/**
 * Unmounts everything under the rootfs. Returns mounts that could not be removed. The rootfs is a tmpfs
 * with every other mount of the sandbox inside it (mountSystemTree), so when it is a mount point one
 * detach takes all of them, without reading the mount table. Whatever is left (a mount stacked on the
 * same point, a rootfs never mounted or detached already with something under it) goes by the table.
 */
export function unmountRootfs(paths: WorldPaths): string[] {
  if (mountedOrUnknown(paths.rootfs)) {
    detachEach([paths.rootfs]);
    if (!mountedOrUnknown(paths.rootfs)) return [];
  }
  return unmountAllUnder(paths.rootfs);
}

/** Unmounts the overlays and idmapped lowers of every layer. Returns mounts that could not be removed. */
export function unmountLayers(paths: WorldPaths): string[] {
  return unmountAllUnder(paths.layers);
}

/**
 * Removes a world's directory — only when nothing at all is mounted below it, so a bind mount of a
 * host directory can never be deleted through it.
 */
export function removeWorldDir(paths: WorldPaths): void {
  const left = mountsUnder(paths.dir);
  if (left.length > 0) throw new Error(`refusing to remove ${paths.dir}: still mounted: ${left.join(', ')}`);
  rmSync(paths.dir, { recursive: true, force: true });
}
