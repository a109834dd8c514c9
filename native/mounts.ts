// Mounts: thin mount/umount2, and the new mount API for bind mounts whose attributes cover the whole
// tree, overlayfs with one lowerdir+ per layer, tmpfs, and idmapped mounts; plus the user namespace fd
// an idmapped mount needs.
import { binding } from './binding.js';
import { constants } from './constants.js';
import type { BindMountOptions, IdMap, IdmappedMountOptions, OverlayOptions, TmpfsOptions } from './types.js';
import * as v from './validate.js';

const { MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_IDMAP } = constants;
const U32_MAX = 0xffffffff;

interface AttrFlags {
  readonly?: boolean;
  nosuid?: boolean;
  nodev?: boolean;
  noexec?: boolean;
}

function attrFlags(name: string, o: AttrFlags): number {
  let attr = 0;
  if (v.optional(o.readonly, (x) => v.bool(`${name}.readonly`, x))) attr |= MOUNT_ATTR_RDONLY;
  if (v.optional(o.nosuid, (x) => v.bool(`${name}.nosuid`, x))) attr |= MOUNT_ATTR_NOSUID;
  if (v.optional(o.nodev, (x) => v.bool(`${name}.nodev`, x))) attr |= MOUNT_ATTR_NODEV;
  if (v.optional(o.noexec, (x) => v.bool(`${name}.noexec`, x))) attr |= MOUNT_ATTR_NOEXEC;
  return attr;
}

/** mount(2)'s five arguments, checked as both mount calls take them. */
function mountArgs(source: string | null, target: string, fstype: string | null, flags: number, data?: string): [string | null, string, string | null, number, string | null] {
  return [
    source === null ? null : v.string('source', source),
    v.absolutePath('target', target),
    fstype === null ? null : v.nonEmptyString('fstype', fstype),
    v.flags32('flags', flags),
    data === undefined ? null : v.string('data', data),
  ];
}

/** mount(2), unchanged. */
export function mount(source: string | null, target: string, fstype: string | null, flags: number, data?: string): void {
  binding.mount(...mountArgs(source, target, fstype, flags, data));
}

/**
 * mount(2) made from the cgroup namespace at `nsPath` (a /proc/<pid>/ns/cgroup), by a short-lived thread
 * of its own: the caller's namespaces never change. For cgroup2 superblock options the kernel takes only
 * from the initial cgroup namespace (favordynmods).
 */
export function mountInCgroupNs(nsPath: string, source: string | null, target: string, fstype: string | null, flags: number, data?: string): void {
  binding.mountInCgroupNs(v.absolutePath('nsPath', nsPath), ...mountArgs(source, target, fstype, flags, data));
}

/** umount2(2), unchanged. */
export function umount2(target: string, flags: number): void {
  binding.umount2(v.absolutePath('target', target), v.integer('flags', flags, 0, 0xff));
}

/**
 * Bind mount via open_tree(OPEN_TREE_CLONE[|AT_RECURSIVE]) + mount_setattr + move_mount: readonly,
 * nosuid, nodev and noexec apply to every mount of the bound tree when recursive.
 */
export function bindMount(source: string, target: string, opts: BindMountOptions): void {
  v.object('opts', opts);
  binding.cloneMount(
    v.absolutePath('source', source),
    v.absolutePath('target', target),
    v.bool('opts.recursive', opts.recursive),
    attrFlags('opts', { ...opts, readonly: v.bool('opts.readonly', opts.readonly) }),
    -1,
  );
}

/**
 * A clone of the one mount at `source` (open_tree(OPEN_TREE_CLONE), not recursive), attached nowhere: its
 * fd reaches, as `/proc/self/fd/<fd>/<path>`, what the mounts below `source` cover. Close it with closeFd.
 */
export function openDetachedTree(source: string): number {
  return binding.openDetachedTree(v.absolutePath('source', source));
}

/**
 * Overlayfs via fsopen/fsconfig/fsmount/move_mount, one "lowerdir+" per layer (topmost first); without
 * `upper` (and `work`) the overlay is read-only and needs two or more lowers. Kernels
 * before 6.8 get a "lowerdir=a:b" string instead, and then a lower path with ':', ',' or '\' is refused.
 */
export function mountOverlay(target: string, opts: OverlayOptions & AttrFlags): void {
  v.object('opts', opts);
  const lower = v.stringArray('opts.lower', opts.lower, v.absolutePath);
  if (lower.length === 0) throw v.valueError('opts.lower', 'needs at least one layer');
  if (opts.upper === undefined && lower.length < 2) throw v.valueError('opts.lower', 'a read-only overlay (no upper) needs at least two layers');
  if (opts.upper === undefined && opts.work !== undefined) throw v.valueError('opts.work', 'a work directory only goes with an upper one');
  const extra = v.stringArray('opts.extra', opts.extra ?? [], v.nonEmptyString);
  binding.mountOverlay(
    v.absolutePath('target', target),
    lower,
    opts.upper === undefined ? '' : v.absolutePath('opts.upper', opts.upper),
    opts.upper === undefined ? '' : v.absolutePath('opts.work', opts.work),
    extra,
    attrFlags('opts', opts),
  );
}

/** A fresh tmpfs via fsopen/fsconfig/fsmount/move_mount. */
export function mountTmpfs(target: string, opts: TmpfsOptions): void {
  v.object('opts', opts);
  const options: string[] = [];
  if (opts.size !== undefined) {
    const size = v.string('opts.size', opts.size);
    if (!/^[0-9]+[kKmMgGtT%]?$/.test(size)) throw v.valueError('opts.size', `"${size}" is not a tmpfs size`);
    options.push(`size=${size}`);
  }
  if (opts.mode !== undefined) options.push(`mode=${v.integer('opts.mode', opts.mode, 0, 0o7777).toString(8).padStart(4, '0')}`);
  if (opts.uid !== undefined) options.push(`uid=${v.integer('opts.uid', opts.uid, 0, U32_MAX - 1)}`);
  if (opts.gid !== undefined) options.push(`gid=${v.integer('opts.gid', opts.gid, 0, U32_MAX - 1)}`);
  const attr = attrFlags('opts', {
    nosuid: v.bool('opts.nosuid', opts.nosuid),
    nodev: v.bool('opts.nodev', opts.nodev),
    noexec: v.bool('opts.noexec', opts.noexec),
  });
  binding.fsMount('tmpfs', 'tmpfs', v.absolutePath('target', target), options, attr);
}

/**
 * A mount namespace holding only a read-only tmpfs root with an empty /root and a proc at /proc
 * (native/src/mount_template.c), for spawnSupervisedSandbox's `mountTemplate`. `base` is any existing
 * directory: the template's tmpfs is mounted over it in a private copy of the caller's namespace, which
 * is then left. The caller owns the fd (O_CLOEXEC).
 */
export function createMountTemplate(base: string): number {
  return binding.createMountTemplate(v.absolutePath('base', base));
}

/**
 * A user namespace fd carrying the given maps (for idmapped mounts). Host id 0 is refused in any outside
 * range. The caller closes the fd.
 */
export function createUserNamespace(uidMap: IdMap[], gidMap: IdMap[]): number {
  return binding.createUserNamespace(v.idMaps('uidMap', uidMap), v.idMaps('gidMap', gidMap));
}

/**
 * Idmapped bind mount: open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_IDMAP[|RDONLY], usernsFd)
 * + move_mount. A file owned by host id N on source appears owned by the id that N maps to in usernsFd's
 * map (e.g. 1000 → 201000 for 0→200000/65536).
 */
export function mountIdmapped(source: string, target: string, usernsFd: number, opts: IdmappedMountOptions): void {
  v.object('opts', opts);
  binding.cloneMount(
    v.absolutePath('source', source),
    v.absolutePath('target', target),
    v.bool('opts.recursive', opts.recursive),
    MOUNT_ATTR_IDMAP | (v.bool('opts.readonly', opts.readonly) ? MOUNT_ATTR_RDONLY : 0),
    v.fd('usernsFd', usernsFd),
  );
}
