// The node's state as the kernel reports it now. Every field is measured on its own, and any failure to
// read or understand one yields 'unknown' for that field alone, so admission answers RESOURCE_STATE_UNKNOWN
// instead of mistaking an unreadable file for a full node.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meminfoBytes, storeFilesystem, storeReserve } from './admission-host.js';
import { DISK_IMAGE_NAME } from '../sandbox/disk-image.js';

export type Measured = number | 'unknown';

export interface ObservedState {
  /** MemAvailable from meminfo, in bytes: what can be allocated now without swapping. */
  memAvailableBytes: Measured;
  /** Tasks (threads) on the host now. */
  tasks: Measured;
  /** The most tasks the host allows: min(kernel pid_max, threads-max when readable). */
  pidMax: Measured;
  /** CPUs online (informational; CPU is accounted against the ceiling only). */
  cpuCount: Measured;
  /** Free space of the store's filesystem (statfs f_bavail) less its reserve (storeReserve), in bytes. */
  storeFreeBytes: Measured;
  /** What the live runs' sparse disk images hold on the store now (allocated blocks), in bytes. */
  storeUsedByRunsBytes: Measured;
}

export const UNKNOWN_STATE: ObservedState = { memAvailableBytes: 'unknown', tasks: 'unknown', pidMax: 'unknown', cpuCount: 'unknown', storeFreeBytes: 'unknown', storeUsedByRunsBytes: 'unknown' };

export interface ObserveOptions {
  /** The proc filesystem to read; tests point it at a fake directory. Default /proc. */
  procDir?: string;
  /** The node store's directory; its filesystem is measured for ephemeral storage. Unset: unknown. */
  storeDir?: string;
  /** Directories (in the store) holding one directory per run, each with its disk image. */
  runDirs?: readonly string[];
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function int(text: string | undefined): Measured {
  const t = text?.trim();
  if (t === undefined || !/^[0-9]+$/.test(t)) return 'unknown';
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : 'unknown';
}

/** Tasks from loadavg's fourth field ("running/total"), else by counting /proc/<pid>/task entries. */
function countTasks(proc: string): Measured {
  const m = /^\S+ \S+ \S+ [0-9]+\/([0-9]+) [0-9]+\s*$/.exec(read(join(proc, 'loadavg')) ?? '');
  if (m) return int(m[1]);
  try {
    let total = 0;
    for (const pid of readdirSync(proc)) {
      if (!/^[0-9]+$/.test(pid)) continue;
      try {
        total += readdirSync(join(proc, pid, 'task')).length;
      } catch (e) {
        // A process that exited between the two reads holds no tasks; anything else is unmeasured.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return 'unknown';
      }
    }
    return total > 0 ? total : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Free store space less the reserve, or unknown when the store cannot be measured. */
function storeFree(storeDir: string | undefined): Measured {
  if (storeDir === undefined) return 'unknown';
  const fs = storeFilesystem(storeDir);
  if (typeof fs === 'string') return 'unknown';
  return Math.max(0, fs.availableBytes - storeReserve(fs.totalBytes));
}

/** Allocated bytes of every run's disk image (`<runDir>/<id>/disk.img`); unknown when a directory cannot be read. */
function usedByRuns(runDirs: readonly string[] | undefined): Measured {
  if (runDirs === undefined) return 'unknown';
  let total = 0;
  for (const dir of runDirs) {
    let ids: string[];
    try {
      ids = readdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      return 'unknown';
    }
    for (const id of ids) {
      try {
        total += lstatSync(join(dir, id, DISK_IMAGE_NAME)).blocks * 512;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') return 'unknown';
      }
    }
  }
  return total;
}

export function observeNode(options: ObserveOptions = {}): ObservedState {
  const proc = options.procDir ?? '/proc';
  const mem = meminfoBytes(read(join(proc, 'meminfo')), 'MemAvailable');
  const pidMax = int(read(join(proc, 'sys/kernel/pid_max')));
  const threadsMax = int(read(join(proc, 'sys/kernel/threads-max')));
  const stat = read(join(proc, 'stat'));
  const cpus = stat === undefined ? 0 : stat.split('\n').filter((l) => /^cpu[0-9]+ /.test(l)).length;
  return {
    memAvailableBytes: mem ?? 'unknown',
    tasks: countTasks(proc),
    pidMax: pidMax === 'unknown' ? 'unknown' : threadsMax === 'unknown' ? pidMax : Math.min(pidMax, threadsMax),
    cpuCount: cpus > 0 ? cpus : 'unknown',
    storeFreeBytes: storeFree(options.storeDir),
    storeUsedByRunsBytes: usedByRuns(options.runDirs),
  };
}
