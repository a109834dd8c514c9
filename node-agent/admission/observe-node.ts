// The node's state as the kernel reports it now. Every field is measured on its own, and any failure to
// read or understand one yields 'unknown' for that field alone, so admission answers RESOURCE_STATE_UNKNOWN
// instead of mistaking an unreadable file for a full node.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meminfoBytes } from './admission-host.js';

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
}

export const UNKNOWN_STATE: ObservedState = { memAvailableBytes: 'unknown', tasks: 'unknown', pidMax: 'unknown', cpuCount: 'unknown' };

export interface ObserveOptions {
  /** The proc filesystem to read; tests point it at a fake directory. Default /proc. */
  procDir?: string;
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
  };
}
