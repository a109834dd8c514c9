// Facts about a started (not yet running) world, read from the kernel through /proc/<pid>: the mounts
// the world actually sees and the network interfaces it actually has. Nothing here trusts what the
// agent meant to set up; it reads what is there.
import { readFileSync } from 'node:fs';

export interface MountFact {
  mountPoint: string;
  options: string[];
  fsType: string;
  superOptions: string[];
}

export interface WorldFacts {
  mounts: MountFact[];
  interfaces: string[];
}

function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function parseMountinfo(text: string): MountFact[] {
  const out: MountFact[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const [left, right] = line.split(' - ');
    const f = (left ?? '').split(' ');
    const r = (right ?? '').split(' ');
    out.push({ mountPoint: unescape(f[4] ?? ''), options: (f[5] ?? '').split(','), fsType: r[0] ?? '', superOptions: (r[2] ?? '').split(',') });
  }
  return out;
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

/** The variable names in a process's environment (after it exec'd). */
export function environmentNames(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .filter((kv) => kv.length > 0)
    .map((kv) => kv.slice(0, Math.max(0, kv.indexOf('='))));
}
