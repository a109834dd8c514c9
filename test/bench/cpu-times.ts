// CPU time spent by named processes, and by the whole machine, over a window: what competes for the
// cores while a benchmark waits on a chain of processes (API server, etcd, controller, node-agent).
//
// Per process: utime + stime of /proc/<pid>/stat (every thread of it; children not included), in the
// kernel's USER_HZ ticks (getconf CLK_TCK; 10 ms at 100 Hz), so one window reads coarse: sum windows
// and divide. The machine: the busy columns of /proc/stat's `cpu` line (user, nice, system, irq,
// softirq, steal) against the number of `cpuN` lines times the window.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/** USER_HZ as getconf reports it. */
function hz(): number {
  if (ticksPerSecond === undefined) {
    const v = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (!Number.isInteger(v) || v <= 0) throw new Error(`getconf CLK_TCK printed ${v}`);
    ticksPerSecond = v;
  }
  return ticksPerSecond;
}

/** utime + stime of process `pid`, ms. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`/proc/${pid}/stat: no utime/stime in ${JSON.stringify(stat)}`);
  return ((utime + stime) * 1000) / hz();
}

/** Busy CPU ms of the whole machine since boot, and how many CPUs it counts. */
export function machineCpu(): { busyMs: number; cpus: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const total = lines.find((l) => l.startsWith('cpu '));
  if (!total) throw new Error('/proc/stat has no cpu line');
  const [user, nice, system, , , irq, softirq, steal] = total.trim().split(/\s+/).slice(1).map(Number);
  const busy = [user, nice, system, irq, softirq, steal].reduce((a: number, b) => a + (b ?? 0), 0);
  return { busyMs: (busy * 1000) / hz(), cpus: lines.filter((l) => /^cpu\d+ /.test(l)).length };
}

/** Sums, over windows, the CPU ms of each named process and of the machine, and the windows' wall time. */
export class CpuAccount {
  private readonly totals = new Map<string, number>();
  private busyMs = 0;
  private wallMs = 0;
  private cpus = 0;
  private windows = 0;

  /** `pids`: name → pid; 'self' is this process (process.cpuUsage, µs precision). */
  constructor(private readonly pids: Readonly<Record<string, number>>) {}

  /** Starts a window; the returned function ends it and adds it to the sums. */
  begin(): () => void {
    const at = performance.now();
    const self = process.cpuUsage();
    const before = this.sample();
    const machine = machineCpu();
    return () => {
      const after = this.sample();
      const m = machineCpu();
      const used = process.cpuUsage(self);
      for (const [name, ms] of after) this.totals.set(name, (this.totals.get(name) ?? 0) + ms - (before.get(name) ?? ms));
      this.totals.set('bench', (this.totals.get('bench') ?? 0) + (used.user + used.system) / 1000);
      this.busyMs += m.busyMs - machine.busyMs;
      this.wallMs += performance.now() - at;
      this.cpus = m.cpus;
      this.windows++;
    };
  }

  private sample(): Map<string, number> {
    return new Map(Object.entries(this.pids).map(([name, pid]) => [name, processCpuMs(pid)]));
  }

  /** Mean CPU ms per window by process, the machine's mean busy ms, and its busy share of the cores. */
  result(): { perWindowMs: Record<string, number>; machineBusyMs: number; busyShare: number; windows: number } {
    const n = Math.max(1, this.windows);
    return {
      perWindowMs: Object.fromEntries([...this.totals].map(([k, v]) => [k, v / n])),
      machineBusyMs: this.busyMs / n,
      busyShare: this.wallMs > 0 && this.cpus > 0 ? this.busyMs / (this.wallMs * this.cpus) : NaN,
      windows: this.windows,
    };
  }
}
