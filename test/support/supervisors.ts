// The per-world supervisors (native/src/shim/shim.c) on the host, found by their command line: the shim's
// first argument is the output log it writes, which lies under its store and names its World's uid.
// A graceful agent stop detaches from its Worlds, so a test stack that ends kills its own supervisors
// (each one's World dies with it: the World's pid 1 has the shim's death as its parent-death signal).
import { hostProcesses } from './worlds.js';

export interface Supervisor {
  pid: number;
  /** The output log the supervisor writes (<store>/worlds/<uid>.output.log). */
  log: string;
}

export function supervisors(): Supervisor[] {
  return hostProcesses()
    .filter((p) => (p.cmdline[0] ?? '').endsWith('worldline-shim'))
    .map((p) => ({ pid: p.pid, log: p.cmdline[1] ?? '' }));
}

/** SIGKILLs every supervisor whose log lies under `storeDir`; returns how many were signalled. */
export function killSupervisorsUnder(storeDir: string): number {
  const prefix = storeDir.endsWith('/') ? storeDir : `${storeDir}/`;
  let n = 0;
  for (const p of supervisors()) {
    if (!p.log.startsWith(prefix)) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
      n++;
    } catch {
      /* it ended while we looked */
    }
  }
  return n;
}
