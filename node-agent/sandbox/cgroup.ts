// A world's cgroup: created under the agent's own subtree, limits written and then read back from
// the kernel's files (a limit that does not read back as written refuses the work), the pids to
// place, OOM detection and removal. cgroup v2 where the node has it, v1 (cpu, memory, pids) otherwise.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Refusal } from '../../core/errors.js';
import type { V2Budget } from './cgroup-v2-budget.js';
import { inspectV2Leaf } from './cgroup-v2-preflight.js';
import { signalMembers } from './signal-members.js';

export type CgroupVersion = 'v1' | 'v2';

export interface CgroupLimits {
  /** CPU limit in millicores; undefined = unlimited. */
  cpuMillis?: number;
  /** Memory limit in bytes (swap included where the kernel accounts it); undefined = unlimited. */
  memoryBytes?: number;
  /** Process/thread limit; undefined = unlimited. */
  pids?: number;
}

export interface CgroupReadback {
  cpuMillis: number | 'max';
  memoryBytes: number | 'max';
  pids: number | 'max';
}

export class CgroupError extends Refusal {
  constructor(override readonly code: 'RESOURCE_STATE_UNKNOWN' | 'CGROUP_LIMIT_MISMATCH' | 'CGROUP_UNAVAILABLE', message: string) {
    super(code, message);
    this.name = 'CgroupError';
  }
}

const CPU_PERIOD_US = 100_000;
const PAGE_BYTES = 4096;

/** The v2 budget the preflight expects of limits written by applyLimits (memory as the kernel rounds it to pages). */
export function v2Budget(l: Required<CgroupLimits>): V2Budget {
  return { cpuQuotaMicros: Math.max(1000, Math.round((l.cpuMillis * CPU_PERIOD_US) / 1000)), cpuPeriodMicros: CPU_PERIOD_US, memoryBytes: Math.floor(l.memoryBytes / PAGE_BYTES) * PAGE_BYTES, pids: l.pids };
}
const V1_CONTROLLERS = ['cpu', 'memory', 'pids'] as const;

export interface CgroupLayout {
  version: CgroupVersion;
  /** v2: the unified mount; v1: the directory holding one mount per controller. */
  mount: string;
}

/** Finds how this node mounts cgroups: a v2 hierarchy with cpu, memory and pids, else v1 controllers. */
export function detectCgroups(base = '/sys/fs/cgroup'): CgroupLayout {
  const controllersFile = join(base, 'cgroup.controllers');
  if (existsSync(controllersFile)) {
    const have = readFileSync(controllersFile, 'utf8').trim().split(/\s+/);
    const missing = ['cpu', 'memory', 'pids'].filter((c) => !have.includes(c));
    if (missing.length > 0) throw new CgroupError('CGROUP_UNAVAILABLE', `cgroup v2 at ${base} lacks controllers: ${missing.join(', ')}`);
    return { version: 'v2', mount: base };
  }
  const missing = V1_CONTROLLERS.filter((c) => !existsSync(join(base, c, 'cgroup.procs')));
  if (missing.length > 0) throw new CgroupError('CGROUP_UNAVAILABLE', `cgroup v1 controllers not mounted under ${base}: ${missing.join(', ')}`);
  return { version: 'v1', mount: base };
}

function readNumberOrMax(file: string): number | 'max' {
  const raw = readFileSync(file, 'utf8').trim();
  if (raw === 'max') return 'max';
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new CgroupError('RESOURCE_STATE_UNKNOWN', `${file} holds "${raw}", not a number`);
  return n;
}

/** v1 reports "no limit" as a huge page-aligned number. */
const V1_UNLIMITED_MEMORY = 2 ** 62;

export class WorldCgroup {
  private constructor(
    readonly layout: CgroupLayout,
    /** Relative path below each hierarchy, e.g. worldline/<world-id>. */
    readonly relPath: string,
  ) {}

  static create(layout: CgroupLayout, parent: string, name: string): WorldCgroup {
    if (!/^[A-Za-z0-9._-]+$/.test(name) || !/^[A-Za-z0-9._/-]+$/.test(parent) || parent.includes('..')) {
      throw new Error(`invalid cgroup name ${parent}/${name}`);
    }
    const cg = new WorldCgroup(layout, `${parent}/${name}`);
    if (layout.version === 'v2') {
      const parentDir = join(layout.mount, parent);
      mkdirSync(parentDir, { recursive: true });
      writeFileSync(join(parentDir, 'cgroup.subtree_control'), '+cpu +memory +pids');
      mkdirSync(join(layout.mount, cg.relPath), { recursive: true });
    } else {
      for (const c of V1_CONTROLLERS) mkdirSync(join(layout.mount, c, cg.relPath), { recursive: true });
    }
    return cg;
  }

  /** A handle on an existing (or absent) cgroup, for cleanup. */
  static attach(layout: CgroupLayout, parent: string, name: string): WorldCgroup {
    return new WorldCgroup(layout, `${parent}/${name}`);
  }

  /** Directories of this cgroup (one per v1 controller, or the single v2 directory). */
  dirs(): string[] {
    if (this.layout.version === 'v2') return [join(this.layout.mount, this.relPath)];
    return V1_CONTROLLERS.map((c) => join(this.layout.mount, c, this.relPath));
  }

  /** The cgroup.procs files a new process must be written into before it runs anything. */
  procsFiles(): string[] {
    return this.dirs().map((d) => join(d, 'cgroup.procs'));
  }

  private file(controller: (typeof V1_CONTROLLERS)[number], name: string): string {
    return this.layout.version === 'v2' ? join(this.layout.mount, this.relPath, name) : join(this.layout.mount, controller, this.relPath, name);
  }

  applyLimits(l: CgroupLimits): void {
    if (this.layout.version === 'v2') {
      const quota = l.cpuMillis === undefined ? 'max' : String(Math.max(1000, Math.round((l.cpuMillis * CPU_PERIOD_US) / 1000)));
      writeFileSync(this.file('cpu', 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
      writeFileSync(this.file('memory', 'memory.max'), l.memoryBytes === undefined ? 'max' : String(l.memoryBytes));
      if (existsSync(this.file('memory', 'memory.swap.max'))) writeFileSync(this.file('memory', 'memory.swap.max'), '0');
      writeFileSync(this.file('pids', 'pids.max'), l.pids === undefined ? 'max' : String(l.pids));
      // No burst above the quota, and an OOM kill takes the whole run (the preflight requires both).
      if (existsSync(this.file('cpu', 'cpu.max.burst'))) writeFileSync(this.file('cpu', 'cpu.max.burst'), '0');
      writeFileSync(this.file('memory', 'memory.oom.group'), '1');
      return;
    }
    writeFileSync(this.file('cpu', 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    writeFileSync(this.file('cpu', 'cpu.cfs_quota_us'), l.cpuMillis === undefined ? '-1' : String(Math.max(1000, Math.round((l.cpuMillis * CPU_PERIOD_US) / 1000))));
    const mem = l.memoryBytes === undefined ? '-1' : String(l.memoryBytes);
    writeFileSync(this.file('memory', 'memory.limit_in_bytes'), mem);
    // With swap accounting, memsw bounds memory+swap; it must be set after (and be >=) the memory limit.
    if (existsSync(this.file('memory', 'memory.memsw.limit_in_bytes'))) writeFileSync(this.file('memory', 'memory.memsw.limit_in_bytes'), mem);
    writeFileSync(this.file('pids', 'pids.max'), l.pids === undefined ? 'max' : String(l.pids));
  }

  /** Reads the limits back from the kernel's own files. */
  readLimits(): CgroupReadback {
    try {
      if (this.layout.version === 'v2') {
        const [quota, period] = readFileSync(this.file('cpu', 'cpu.max'), 'utf8').trim().split(/\s+/);
        const cpuMillis = quota === 'max' ? 'max' : Math.round((Number(quota) * 1000) / Number(period));
        return { cpuMillis, memoryBytes: readNumberOrMax(this.file('memory', 'memory.max')), pids: readNumberOrMax(this.file('pids', 'pids.max')) };
      }
      const quota = Number(readFileSync(this.file('cpu', 'cpu.cfs_quota_us'), 'utf8').trim());
      const period = Number(readFileSync(this.file('cpu', 'cpu.cfs_period_us'), 'utf8').trim());
      const mem = readNumberOrMax(this.file('memory', 'memory.limit_in_bytes'));
      return {
        cpuMillis: quota < 0 ? 'max' : Math.round((quota * 1000) / period),
        memoryBytes: mem === 'max' || mem >= V1_UNLIMITED_MEMORY ? 'max' : mem,
        pids: readNumberOrMax(this.file('pids', 'pids.max')),
      };
    } catch (err) {
      if (err instanceof CgroupError) throw err;
      throw new CgroupError('RESOURCE_STATE_UNKNOWN', `cannot read back cgroup ${this.relPath}: ${(err as Error).message}`);
    }
  }

  /** Applies and verifies: the kernel's values must equal what was asked (memory may round down to a page). */
  applyAndVerify(l: CgroupLimits): CgroupReadback {
    this.applyLimits(l);
    const got = this.readLimits();
    const problems: string[] = [];
    const wantCpu = l.cpuMillis === undefined ? 'max' : Math.max(10, l.cpuMillis);
    if (got.cpuMillis !== wantCpu) problems.push(`cpu ${String(got.cpuMillis)}m, asked ${String(wantCpu)}m`);
    const wantMem = l.memoryBytes ?? 'max';
    const memOk = wantMem === 'max' ? got.memoryBytes === 'max' : typeof got.memoryBytes === 'number' && got.memoryBytes <= wantMem && wantMem - got.memoryBytes < 4096 * 16;
    if (!memOk) problems.push(`memory ${String(got.memoryBytes)}, asked ${String(wantMem)}`);
    const wantPids = l.pids ?? 'max';
    if (got.pids !== wantPids) problems.push(`pids ${String(got.pids)}, asked ${String(wantPids)}`);
    if (problems.length > 0) throw new CgroupError('CGROUP_LIMIT_MISMATCH', `cgroup ${this.relPath} reads back ${problems.join('; ')}`);
    // On v2, the whole budget once more as the preflight reads it: the leaf by descriptor on the cgroup2
    // mount, every control file twice, exact values, empty and unfrozen (cgroup-v2-preflight.ts).
    if (this.layout.version === 'v2' && l.cpuMillis !== undefined && l.memoryBytes !== undefined && l.pids !== undefined) {
      inspectV2Leaf({ mountPoint: this.layout.mount, leaf: this.relPath, want: v2Budget({ cpuMillis: l.cpuMillis, memoryBytes: l.memoryBytes, pids: l.pids }) });
    }
    return got;
  }

  /** True when the kernel's OOM killer acted in this cgroup. */
  oomKilled(): boolean {
    try {
      if (this.layout.version === 'v2') {
        const m = /^oom_kill (\d+)$/m.exec(readFileSync(this.file('memory', 'memory.events'), 'utf8'));
        return Number(m?.[1] ?? 0) > 0;
      }
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(this.file('memory', 'memory.oom_control'), 'utf8'));
      return Number(m?.[1] ?? 0) > 0;
    } catch {
      return false;
    }
  }

  /** Pids currently in the cgroup (any hierarchy). */
  pids(): number[] {
    const out = new Set<number>();
    for (const f of this.procsFiles()) {
      try {
        for (const line of readFileSync(f, 'utf8').split('\n')) if (line.trim()) out.add(Number(line));
      } catch {
        /* hierarchy already gone */
      }
    }
    return [...out];
  }

  /** SIGKILLs every process in the cgroup (v2: cgroup.kill; v1: each member through a pidfd). */
  killAll(): void {
    if (this.layout.version === 'v2' && existsSync(join(this.dirs()[0] ?? '', 'cgroup.kill'))) {
      writeFileSync(join(this.dirs()[0] ?? '', 'cgroup.kill'), '1');
      return;
    }
    this.signalAll('SIGKILL');
  }

  /** SIGTERM or SIGKILL to every process in the cgroup and to nothing else (signal-members.ts). */
  signalAll(sig: 'SIGTERM' | 'SIGKILL'): number {
    return signalMembers(() => this.pids(), sig);
  }

  /** Removes the cgroup directories; they must be empty of processes. Returns the ones that remain. */
  remove(): string[] {
    const left: string[] = [];
    for (const d of this.dirs()) {
      try {
        rmdirSync(d);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') left.push(d);
      }
    }
    return left;
  }
}
