// Run disks made ahead of their runs. Making a run's disk (disk-image.ts: a sparse copy of the size's
// template, a loop device, the ext4 mount) costs a launch ~3 ms of the agent's thread, most of it the
// loop device's configuration. The pool keeps one disk of each size a run recently took made ahead, in
// <store>/disk-pool/<uuid>/ (disk.img attached and mounted at mnt, never written), and a launch takes it:
// the image is renamed into the run's directory (the loop device follows the file), its filesystem is
// bound at the run's layers and the pool's mount is detached. A disk is taken once: it is the pool's
// until then, and the run's after (its teardown detaches it as any run disk). What a previous agent left
// in the pool is swept at start (sweepDiskPool), never taken: this agent's pool knows only what it made.
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { detachLoopsUnder, DiskError } from './disk-loop.js';
import { DISK_BLOCK_BYTES, DISK_IMAGE_NAME, MIN_EPHEMERAL_STORAGE_BYTES, diskImagePath, makeDisk, MAX_DISK_TEMPLATES, readBackDisk, type DiskReadback } from './disk-image.js';
import type { WorldPaths } from './run-paths.js';
import { unmountAllUnder } from './rootfs.js';

const MOUNT_NAME = 'mnt';
/** How long after a refill is asked for the disk is made. */
export const REFILL_DELAY_MS = 50;

interface ReadyDisk {
  dir: string;
  bytes: number;
  device: string;
}

export class RunDiskPool {
  private readonly ready: ReadyDisk[] = [];
  private readonly filling = new Set<number>();
  private closed = false;

  /**
   * Entries are made in `dir` (on the runs' filesystem: a taken image is renamed into its run's directory),
   * from the formatted templates in `templates`. `onError` hears of a disk the pool could not make (a launch
   * then makes its own, as without a pool).
   */
  constructor(
    private readonly dir: string,
    private readonly templates: string,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  /** How many disks are ready now (all sizes). */
  get size(): number {
    return this.ready.length;
  }

  /**
   * Moves a ready disk of exactly `bytes` to the run, mounted at paths.layers with its image at
   * <paths.dir>/disk.img, and reads it back; undefined when none of that size is ready. Throws DiskError
   * when the move fails: what was moved by then is the run's, and its teardown removes it.
   */
  take(paths: WorldPaths, bytes: number): DiskReadback | undefined {
    const i = this.ready.findIndex((r) => r.bytes === bytes);
    if (i < 0) return undefined;
    const [disk] = this.ready.splice(i, 1) as [ReadyDisk];
    try {
      mkdirSync(paths.dir, { recursive: true, mode: 0o711 });
      renameSync(join(disk.dir, DISK_IMAGE_NAME), diskImagePath(paths));
      mkdirSync(paths.layers, { mode: 0o700 });
      native.bindMount(join(disk.dir, MOUNT_NAME), paths.layers, { readonly: false, recursive: false, nosuid: true, nodev: true });
      chmodSync(paths.layers, 0o700);
    } catch (err) {
      this.discard(disk.dir);
      throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `taking the run disk made ahead in ${disk.dir} for ${paths.dir}: ${(err as Error).message}`);
    }
    // The filesystem is the run's now, at its layers; the pool's mount of it and the entry go (one
    // detach: the mount table is not read on the launch's path).
    try {
      native.umount2(join(disk.dir, MOUNT_NAME), native.MNT_DETACH);
      rmSync(disk.dir, { recursive: true, force: true });
    } catch {
      this.discard(disk.dir);
    }
    return readBackDisk(paths, bytes, disk.device);
  }

  /** Makes a disk of `bytes` ahead, in the background, unless one is ready or being made. */
  refill(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < MIN_EPHEMERAL_STORAGE_BYTES || bytes % DISK_BLOCK_BYTES !== 0) return;
    if (this.closed || this.filling.has(bytes) || this.ready.some((r) => r.bytes === bytes)) return;
    this.filling.add(bytes);
    // Made a little later: the launch that took a disk has its own work to finish first (its status write,
    // its workload's start), and the making is ~3 ms of synchronous system calls on the agent's thread.
    void new Promise<void>((r) => setTimeout(r, REFILL_DELAY_MS).unref())
      .then(() => this.make(bytes))
      .then((disk) => {
        if (this.closed) return this.discard(disk.dir);
        this.ready.push(disk);
        // At most one per template the runs directory keeps: the oldest size goes first.
        while (this.ready.length > MAX_DISK_TEMPLATES) this.discard((this.ready.shift() as ReadyDisk).dir);
      })
      .catch((err: unknown) => this.onError(err as Error))
      .finally(() => this.filling.delete(bytes));
  }

  /** Removes every ready disk; later refills make nothing. */
  close(): void {
    this.closed = true;
    for (const disk of this.ready.splice(0)) this.discard(disk.dir);
  }

  private async make(bytes: number): Promise<ReadyDisk> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const dir = join(this.dir, randomUUID());
    mkdirSync(dir, { mode: 0o700 });
    try {
      return { dir, bytes, device: await makeDisk(dir, join(dir, MOUNT_NAME), bytes, this.templates) };
    } catch (err) {
      this.discard(dir);
      throw err;
    }
  }

  /** Detaches the entry's mount and loop device (when its image is still there) and removes it. */
  private discard(dir: string): void {
    try {
      removeEntry(dir);
    } catch (err) {
      this.onError(err as Error);
    }
  }
}

function removeEntry(dir: string): void {
  const left = unmountAllUnder(dir);
  if (left.length > 0) throw new Error(`the run disk made ahead in ${dir} stays mounted at ${left.join(', ')}`);
  detachLoopsUnder(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Removes every entry an earlier agent's pool left in `dir`; returns the entries removed. */
export function sweepDiskPool(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  for (const n of names) removeEntry(join(dir, n));
  return names;
}
