// Facts about a started (not yet running) world, read from the kernel through /proc/<pid>: the mounts
// the world actually sees and the network interfaces it actually has. Nothing here trusts what the
// agent meant to set up; it reads what is there.
import { readFileSync } from 'node:fs';
import { parseMountinfo, type MountFact } from '../store/mount-table.js';

export type { MountFact } from '../store/mount-table.js';

export interface WorldFacts {
  mounts: MountFact[];
  interfaces: string[];
}

export function parseNetDev(text: string): string[] {
  return text
    .split('\n')
    .slice(2)
    .map((l) => l.split(':')[0]?.trim() ?? '')
    .filter((n) => n.length > 0);
}

export function measureWorld(pid: number): WorldFacts {
  return {
    mounts: parseMountinfo(readFileSync(`/proc/${pid}/mountinfo`, 'utf8')),
    interfaces: parseNetDev(readFileSync(`/proc/${pid}/net/dev`, 'utf8')),
  };
}
