// A run's ephemeral storage: the filesystem its upper layers are written into, of exactly the size
// admission reserved. A sparse file in the run's directory (<run>/disk.img), formatted ext4 (no journal,
// no discard, no blocks reserved for root), is attached to a loop device and mounted nodev,nosuid at the
// run's layers directory. The format is made once per size: mkfs.ext4 writes a template
// (<runs>/.disk-templates/<bytes>.img, never mounted), and each run's image is a sparse copy of its data
// extents (~1 MiB for a 1 GiB disk) — a run no longer waits for a mkfs child. Every run disk of one size
// therefore has the same filesystem UUID; ext4 mounts such twins side by side, and nothing here names a
// filesystem by UUID. The image is mounted so every Root's upper and work directories (layers/<rootKey>/upper, .../work)
// live on it — below its root, never at it, so the filesystem's own lost+found is in no upper layer. A
// write past the size gets ENOSPC from the kernel. The size is read back with statfs (mounted minixdf, so
// f_blocks counts the whole filesystem, metadata included) and a mismatch refuses the run by name.
// Teardown: unmount (rootfs.ts unmountLayers), then detachRunDisk; the image goes with the run directory.
import { chmodSync, closeSync, ftruncateSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statfsSync, statSync, utimesSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import * as native from '../../native/index.js';
import { attachLoop, detachLoopsUnder, DiskError, tool } from './disk-loop.js';
import type { WorldPaths } from './run-paths.js';

export { DiskError } from './disk-loop.js';

/** The image's file name inside a run's directory (observe-node.ts sums what these hold on the store). */
export const DISK_IMAGE_NAME = 'disk.img';
/** ext4 block size; sizes are rounded down to it. */
export const DISK_BLOCK_BYTES = 4096;
/** The smallest ephemeral storage a run may have (ext4 needs room for its own metadata). */
export const MIN_EPHEMERAL_STORAGE_BYTES = 2 ** 20;

/** What the kernel reports for a mounted run disk. */
export interface DiskReadback {
  /** The filesystem's size, statfs f_blocks x f_bsize (minixdf: metadata included). */
  bytes: number;
  /** The loop device it is mounted from. */
  device: string;
}

/** How full a run's disk is (read at capture). */
export interface DiskUsage {
  bytes: number;
  freeBytes: number;
  freeInodes: number;
  /** The run wrote until its limit: free space below EXHAUSTED_FREE_BYTES(bytes), or no inode left. */
  exhausted: boolean;
}

export function diskImagePath(paths: WorldPaths): string {
  return join(paths.dir, DISK_IMAGE_NAME);
}

/** A size in bytes as the run's filesystem will have it: whole ext4 blocks. */
export function diskBytes(requested: number): number {
  return Math.floor(requested / DISK_BLOCK_BYTES) * DISK_BLOCK_BYTES;
}

/**
 * Free space under which a disk counts as exhausted: 1/16 of its size, at most 4 MiB. ext4 keeps a few
 * clusters back for delayed allocation, so a writer that met ENOSPC may leave up to a few hundred KiB
 * "available" on a small filesystem; a run that stopped more than this short of its limit did not fill it.
 */
export function exhaustedFreeBytes(bytes: number): number {
  return Math.min(4 * 2 ** 20, Math.floor(bytes / 16));
}

/**
 * Creates, formats, attaches and mounts the run's disk at paths.layers (which must not be mounted yet) and
 * reads its size back. Throws DiskError; whatever exists by then is removed by the run's teardown.
 */
export async function mountRunDisk(paths: WorldPaths, requestedBytes: number): Promise<DiskReadback> {
  const bytes = diskBytes(requestedBytes);
  if (!Number.isSafeInteger(bytes) || bytes < MIN_EPHEMERAL_STORAGE_BYTES) {
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `ephemeral storage of ${requestedBytes} bytes is below the smallest run disk of ${MIN_EPHEMERAL_STORAGE_BYTES} bytes`);
  }
  mkdirSync(paths.dir, { recursive: true, mode: 0o711 });
  const device = await makeDisk(paths.dir, paths.layers, bytes, diskTemplatesDir(paths));
  return readBackDisk(paths, bytes, device);
}

/**
 * Makes a disk of `bytes` (whole blocks) in `dir` (<dir>/disk.img, a sparse copy of the size's template in
 * `templates`), attaches it to a loop device and mounts it at `mountPoint` (made here, which must not exist);
 * returns the device. Throws DiskError; what exists by then is the caller's to remove.
 */
export async function makeDisk(dir: string, mountPoint: string, bytes: number, templates: string): Promise<string> {
  const image = join(dir, DISK_IMAGE_NAME);
  for (let attempt = 1; ; attempt++) {
    const template = await diskTemplate(templates, bytes);
    try {
      // O_EXCL: an image left from before is a leftover for the teardown, never reused.
      native.copySparse(template, image);
      break;
    } catch (err) {
      // A template pruned by a run making another size between the two steps: make it again, once.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (err as { path?: string }).path === template && attempt < 2) continue;
      throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `copying the formatted template ${template} to ${image}: ${(err as Error).message}`);
    }
  }
  const device = attachLoop(image);
  mkdirSync(mountPoint, { mode: 0o700 });
  try {
    // noinit_itable: the image is sparse, its unwritten inode tables already read as zeros.
    native.mount(device, mountPoint, 'ext4', native.MS_NODEV | native.MS_NOSUID, 'minixdf,noinit_itable,errors=remount-ro');
  } catch (err) {
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `mounting ${device} (${image}) at ${mountPoint}: ${(err as Error).message}`);
  }
  chmodSync(mountPoint, 0o700);
  return device;
}

/** The mounted disk's size from statfs; anything but `bytes` (or a disk not mounted there) is EPHEMERAL_STORAGE_LIMIT_MISMATCH. */
export function readBackDisk(paths: WorldPaths, bytes: number, device: string): DiskReadback {
  if (statSync(paths.layers).dev === statSync(paths.dir).dev) {
    throw new DiskError('EPHEMERAL_STORAGE_LIMIT_MISMATCH', `${paths.layers} is not a filesystem of its own: the run's disk is not mounted there`);
  }
  const st = statfsSync(paths.layers);
  const got = st.blocks * st.bsize;
  if (got !== bytes) {
    throw new DiskError('EPHEMERAL_STORAGE_LIMIT_MISMATCH', `the run's disk reads back as ${got} bytes (${st.blocks} blocks of ${st.bsize}), not the ${bytes} bytes requested`);
  }
  return { bytes: got, device };
}

/** How full the mounted run disk is now. */
export function runDiskUsage(paths: WorldPaths): DiskUsage {
  const st = statfsSync(paths.layers);
  const bytes = st.blocks * st.bsize;
  const freeBytes = st.bavail * st.bsize;
  return { bytes, freeBytes, freeInodes: st.ffree, exhausted: freeBytes < exhaustedFreeBytes(bytes) || st.ffree === 0 };
}

/** Detaches every loop device whose image lies in the run's directory (call after its layers are unmounted). */
export function detachRunDisk(paths: WorldPaths): string[] {
  return detachLoopsUnder(paths.dir);
}

/** Where the formatted templates of a runs directory live: <runs>/.disk-templates (no run id starts with a dot). */
export function diskTemplatesDir(paths: WorldPaths): string {
  return join(dirname(paths.dir), DISK_TEMPLATES_NAME);
}

export const DISK_TEMPLATES_NAME = '.disk-templates';
/** Templates kept per runs directory; making one more removes the least recently used. */
export const MAX_DISK_TEMPLATES = 8;

/**
 * The formatted, never-mounted ext4 image of `bytes` in `dir`, made when missing: mkfs.ext4 into a private
 * temporary name, then renamed into place, so a template is complete or absent (two runs making the same
 * one race harmlessly: both are the same format). Its mtime is touched on use for the LRU bound.
 */
export async function diskTemplate(dir: string, bytes: number): Promise<string> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${bytes}.img`);
  try {
    const st = lstatSync(path);
    if (st.isFile() && st.size === bytes) {
      const now = new Date();
      utimesSync(path, now, now); // most recently used
      return path;
    }
    rmSync(path, { force: true }); // anything else under the name is not a template of ours
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const tmp = join(dir, `.${bytes}.img.${randomUUID()}`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  try {
    await tool(
      'mkfs.ext4',
      ['-F', '-q', '-b', String(DISK_BLOCK_BYTES), '-m', '0', '-O', '^has_journal', '-E', 'nodiscard,lazy_itable_init=1,root_owner=0:0', '-L', 'worldline-run', '--', tmp],
      `formatting the run disk template ${path}`,
    );
    pruneTemplates(dir, MAX_DISK_TEMPLATES - 1);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return path;
}

/** A temporary template older than this was left by a crash (mkfs of a run disk takes milliseconds). */
const STALE_TEMPORARY_MS = 10 * 60_000;

/** Removes the least recently used templates until at most `keep` remain, and temporaries a crash left. */
function pruneTemplates(dir: string, keep: number): void {
  const entries = readdirSync(dir).map((n) => {
    try {
      return { n, t: lstatSync(join(dir, n)).mtimeMs };
    } catch {
      return undefined; // removed meanwhile by another run's prune
    }
  });
  const present = entries.filter((e): e is { n: string; t: number } => e !== undefined);
  const templates = present.filter((e) => /^[0-9]+\.img$/.test(e.n)).sort((a, b) => b.t - a.t);
  const stale = present.filter((e) => e.n.startsWith('.') && Date.now() - e.t > STALE_TEMPORARY_MS);
  for (const { n } of [...templates.slice(keep), ...stale]) rmSync(join(dir, n), { force: true });
}
