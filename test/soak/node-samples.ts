// What the soak samples on the node between World lifecycles: the node-agent's RSS and open descriptors,
// the mounts below its store, the cgroup directories of the soak's Worlds under worldline's cgroup roots,
// loop devices backed by files in the store, and the processes (and distinct network namespaces among
// them) that descend from the agent. Everything is read from /proc and /sys, nothing from the agent itself.
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface NodeSample {
  lifecycles: number;
  rssKiB: number;
  fds: number;
  mounts: number;
  cgroupDirs: number;
  loopDevices: number;
  descendants: number;
  netns: number;
}

export const SAMPLE_FIELDS = ['rssKiB', 'fds', 'mounts', 'cgroupDirs', 'loopDevices', 'descendants', 'netns'] as const;
export type SampleField = (typeof SAMPLE_FIELDS)[number];

/** Mount points at or below `dir` in the mount table of process `pid` (the agent's, wherever its worlds mount). */
function mountsOf(pid: number, dir: string): number {
  const unescape = (x: string): string => x.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .map((l) => unescape(l.split(' ')[4] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`)).length;
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}

/** Cgroup directories (any v1 controller, or v2) under worldline's roots whose name holds one of `uids`. */
export function cgroupDirsOf(uids: ReadonlySet<string>): number {
  const roots = ['/sys/fs/cgroup/worldline', ...readdirSync('/sys/fs/cgroup').map((c) => join('/sys/fs/cgroup', c, 'worldline'))];
  let n = 0;
  for (const r of roots) {
    if (!existsSync(r) || !statSync(r).isDirectory()) continue;
    for (const d of readdirSync(r)) {
      const uid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(d)?.[0];
      if (uid !== undefined && uids.has(uid)) n++;
    }
  }
  return n;
}

/** Loop devices whose backing file lies in the store. */
function loopDevicesIn(storeDir: string): number {
  let n = 0;
  for (const dev of readdirSync('/sys/block').filter((d) => d.startsWith('loop'))) {
    try {
      if (readFileSync(`/sys/block/${dev}/loop/backing_file`, 'utf8').trim().startsWith(storeDir)) n++;
    } catch {
      /* not attached */
    }
  }
  return n;
}

/** Every live process whose ancestry reaches `pid` (not `pid` itself). */
export function descendantsOf(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      parent.set(Number(n), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* exited while we looked */
    }
  }
  const out: number[] = [];
  for (const p of parent.keys()) {
    for (let q = parent.get(p); q !== undefined && q > 1; q = parent.get(q)) {
      if (q === pid) {
        out.push(p);
        break;
      }
    }
  }
  return out;
}

function netnsOf(pids: number[], agentPid: number): number {
  const own = readlinkSync(`/proc/${agentPid}/ns/net`);
  const seen = new Set<string>();
  for (const p of pids) {
    try {
      const ns = readlinkSync(`/proc/${p}/ns/net`);
      if (ns !== own) seen.add(ns);
    } catch {
      /* exited */
    }
  }
  return seen.size;
}

export function sampleNode(agentPid: number, storeDir: string, uids: ReadonlySet<string>, lifecycles: number): NodeSample {
  const kids = descendantsOf(agentPid);
  return {
    lifecycles,
    rssKiB: rssKiB(agentPid),
    fds: readdirSync(`/proc/${agentPid}/fd`).length,
    mounts: mountsOf(agentPid, storeDir),
    cgroupDirs: cgroupDirsOf(uids),
    loopDevices: loopDevicesIn(storeDir),
    descendants: kids.length,
    netns: netnsOf(kids, agentPid),
  };
}

/** The samples as a fixed-width text table (one row per sample). */
export function sampleTable(samples: NodeSample[]): string {
  const cols = ['lifecycles', ...SAMPLE_FIELDS] as const;
  const rows = [cols.map(String), ...samples.map((s) => cols.map((c) => String(s[c])))];
  const width = cols.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((v, i) => v.padStart(width[i]!)).join('  ')).join('\n');
}
