// A run's ephemeral storage: the filesystem its upper layers are written into, of exactly the size
// admission reserved. A sparse file in the run's directory (<run>/disk.img) is formatted ext4 (no journal,
// no discard, no blocks reserved for root), attached to a loop device and mounted nodev,nosuid at the
// run's layers directory, so every Root's upper and work directories (layers/<rootKey>/upper, .../work)
// live on it — below its root, never at it, so the filesystem's own lost+found is in no upper layer. A
// write past the size gets ENOSPC from the kernel. The size is read back with statfs (mounted minixdf, so
// f_blocks counts the whole filesystem, metadata included) and a mismatch refuses the run by name.
// Teardown: unmount (rootfs.ts unmountLayers), then detachRunDisk; the image goes with the run directory.
import { chmodSync, closeSync, ftruncateSync, mkdirSync, openSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
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
  const image = diskImagePath(paths);
  // O_EXCL: an image left from before is a leftover for the teardown, never reused.
  const fd = openSync(image, 'wx', 0o600);
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  await tool(
    'mkfs.ext4',
    ['-F', '-q', '-b', String(DISK_BLOCK_BYTES), '-m', '0', '-O', '^has_journal', '-E', 'nodiscard,lazy_itable_init=1,root_owner=0:0', '-L', 'worldline-run', '--', image],
    `formatting the run disk ${image}`,
  );
  const device = await attachLoop(image);
  mkdirSync(paths.layers, { mode: 0o700 });
  try {
    // noinit_itable: the image is sparse, its unwritten inode tables already read as zeros.
    native.mount(device, paths.layers, 'ext4', native.MS_NODEV | native.MS_NOSUID, 'minixdf,noinit_itable,errors=remount-ro');
  } catch (err) {
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `mounting ${device} (${image}) at ${paths.layers}: ${(err as Error).message}`);
  }
  chmodSync(paths.layers, 0o700);
  return readBackDisk(paths, bytes, device);
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
export function detachRunDisk(paths: WorldPaths): Promise<string[]> {
  return detachLoopsUnder(paths.dir);
}
