// Default node ceilings read from the host (the I/O half of the policy; admission-policy.ts is pure).
//   cpuMillis   = CPUs this process may run on (sched affinity) x 1000, or the cpu lines of /proc/stat
//   memoryBytes = MemTotal (/proc/meminfo) minus a reserve for the host: 10% of MemTotal, at least 512Mi and
//                 at most 4Gi; rounded down to a 4KiB page
//   pids        = the host task limit minus a reserve: min(/proc/sys/kernel/pid_max, threads-max, the root
//                 cgroup's pids.max when it is a number) less 10% of it, at least 1024 (never below 0)
//   ephemeralStorageBytes = the size of the store's filesystem (statfs of the store directory) minus a
//                 reserve for the store's own records and candidates: 10% of it, at least 1Gi and at most
//                 20Gi (storeReserve); rounded down to 4KiB
// A value that cannot be read is left out, so parseCeilings names its key unless it is configured.
import { readFileSync, statfsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseCeilings, type NodeCeilings, type PolicyParseResult } from './admission-policy.js';

export interface HostPaths {
  /** Default /proc. */
  procDir?: string;
  /** Default /sys/fs/cgroup (v2: pids.max; v1: pids/pids.max). */
  cgroupDir?: string;
  /** CPUs to assume instead of reading them (tests); default os.availableParallelism(). */
  cpus?: number;
  /** The node store's directory, whose filesystem holds every run's disk image; unset: not derived. */
  storeDir?: string;
}

export interface HostCeilings {
  ceilings: Partial<NodeCeilings>;
  /** What was read and from where, or why a value is missing (for the agent's start-up log). */
  notes: string[];
}

const GiB = 2 ** 30;
const MiB = 2 ** 20;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readInt(path: string): number | undefined {
  const text = readText(path)?.trim();
  if (text === undefined || !/^[0-9]+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A /proc/meminfo line's value in bytes (the file says kB and means KiB). */
export function meminfoBytes(text: string | undefined, key: string): number | undefined {
  if (text === undefined) return undefined;
  const m = new RegExp(`^${key}:\\s+([0-9]+) kB$`, 'm').exec(text);
  if (!m) return undefined;
  const n = Number(m[1]) * 1024;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** The host's memory reserve for a given MemTotal. */
export function memoryReserve(totalBytes: number): number {
  return Math.min(4 * GiB, Math.max(512 * MiB, Math.floor(totalBytes / 10)));
}

/** The store filesystem's reserve (kept free of run disk images) for a given filesystem size. */
export function storeReserve(totalBytes: number): number {
  return Math.min(20 * GiB, Math.max(GiB, Math.floor(totalBytes / 10)));
}

/** Size and free space (for an unprivileged writer, f_bavail) of the filesystem holding `dir`, or why not. */
export function storeFilesystem(dir: string): { totalBytes: number; availableBytes: number } | string {
  try {
    const st = statfsSync(dir);
    const totalBytes = st.blocks * st.bsize;
    const availableBytes = st.bavail * st.bsize;
    if (!Number.isSafeInteger(totalBytes) || !Number.isSafeInteger(availableBytes) || totalBytes <= 0) return `statfs of ${dir} gave ${st.blocks} blocks of ${st.bsize} bytes`;
    return { totalBytes, availableBytes };
  } catch (err) {
    return `statfs of ${dir} failed: ${(err as Error).message}`;
  }
}

/** The host's task reserve for a given task limit. */
export function pidsReserve(limit: number): number {
  return Math.max(1024, Math.floor(limit / 10));
}

export function readHostCeilings(paths: HostPaths = {}): HostCeilings {
  const proc = paths.procDir ?? '/proc';
  const cgroup = paths.cgroupDir ?? '/sys/fs/cgroup';
  const notes: string[] = [];
  const ceilings: Partial<NodeCeilings> = {};

  let cpus = paths.cpus;
  if (cpus === undefined && paths.procDir === undefined) cpus = availableParallelism();
  if (cpus === undefined) {
    const stat = readText(join(proc, 'stat'));
    const n = stat === undefined ? 0 : stat.split('\n').filter((l) => /^cpu[0-9]+ /.test(l)).length;
    if (n > 0) cpus = n;
  }
  if (cpus !== undefined && Number.isSafeInteger(cpus) && cpus > 0) {
    ceilings.cpuMillis = cpus * 1000;
    notes.push(`cpu: ${cpus} CPUs`);
  } else {
    notes.push('cpu: the number of CPUs could not be read');
  }

  const total = meminfoBytes(readText(join(proc, 'meminfo')), 'MemTotal');
  if (total !== undefined) {
    const reserve = memoryReserve(total);
    ceilings.memoryBytes = Math.max(0, Math.floor((total - reserve) / 4096) * 4096);
    notes.push(`memory: MemTotal ${total} bytes less a reserve of ${reserve}`);
  } else {
    notes.push(`memory: MemTotal could not be read from ${join(proc, 'meminfo')}`);
  }

  const limits: [string, number][] = [];
  for (const file of [join(proc, 'sys/kernel/pid_max'), join(proc, 'sys/kernel/threads-max'), join(cgroup, 'pids.max'), join(cgroup, 'pids/pids.max')]) {
    const n = readInt(file);
    if (n !== undefined) limits.push([file, n]);
  }
  if (limits.length > 0 && limits.some(([f]) => f.endsWith('pid_max'))) {
    const [file, limit] = limits.reduce((a, b) => (b[1] < a[1] ? b : a));
    const reserve = pidsReserve(limit);
    ceilings.pids = Math.max(0, limit - reserve);
    notes.push(`pids: ${limit} from ${file} less a reserve of ${reserve}`);
  } else {
    notes.push(`pids: the task limit could not be read from ${join(proc, 'sys/kernel/pid_max')}`);
  }
  if (paths.storeDir !== undefined) {
    const fs = storeFilesystem(paths.storeDir);
    if (typeof fs === 'string') {
      notes.push(`ephemeral storage: ${fs}`);
    } else {
      const reserve = storeReserve(fs.totalBytes);
      ceilings.ephemeralStorageBytes = Math.max(0, Math.floor((fs.totalBytes - reserve) / 4096) * 4096);
      notes.push(`ephemeral storage: the store filesystem's ${fs.totalBytes} bytes less a reserve of ${reserve}`);
    }
  } else {
    notes.push('ephemeral storage: no store directory to measure');
  }
  return { ceilings, notes };
}

/** parseCeilings with this host's defaults for whatever is not configured. */
export function loadAdmissionPolicy(raw: Readonly<Record<string, string | undefined>>, paths: HostPaths = {}): PolicyParseResult & { notes: string[] } {
  const host = readHostCeilings(paths);
  return { ...parseCeilings(raw, host.ceilings), notes: host.notes };
}
