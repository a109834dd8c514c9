// Facts about a started (not yet running) world, read from the kernel through /proc/<pid>: the mounts
// the world actually sees and the network interfaces it actually has. Nothing here trusts what the
// agent meant to set up; it reads what is there.
import { lstatSync, readFileSync } from 'node:fs';
import { parseMountinfo, type MountFact } from '../store/mount-table.js';

export type { MountFact } from '../store/mount-table.js';

export interface WorldFacts {
  mounts: MountFact[];
  interfaces: string[];
  /**
   * The identity (fileIdentity) of what the world sees at each probed path, looked up through its own
   * root (/proc/<pid>/root); a path that cannot be looked up is absent.
   */
  identities?: Record<string, string>;
}

/** A file's identity on this node: its device and inode numbers, "dev:ino". */
export function fileIdentity(path: string): string {
  const st = lstatSync(path, { bigint: true });
  return `${st.dev}:${st.ino}`;
}

export function parseNetDev(text: string): string[] {
  return text
    .split('\n')
    .slice(2)
    .map((l) => l.split(':')[0]?.trim() ?? '')
    .filter((n) => n.length > 0);
}

/**
 * The world's mounts and interfaces, and the identity of what it sees at each of `probe` (absolute paths
 * in the world). Taken before anything of the workload runs, so the paths are still the ones the node-agent
 * built; the last component is not followed.
 */
export function measureWorld(pid: number, probe: readonly string[] = []): WorldFacts {
  const identities: Record<string, string> = {};
  for (const p of probe) {
    try {
      identities[p] = fileIdentity(`/proc/${pid}/root${p}`);
    } catch {
      // Absent: what the world sees there could not be identified, which no plan matches.
    }
  }
  return {
    mounts: parseMountinfo(readFileSync(`/proc/${pid}/mountinfo`, 'utf8')),
    interfaces: parseNetDev(readFileSync(`/proc/${pid}/net/dev`, 'utf8')),
    ...(probe.length > 0 ? { identities } : {}),
  };
}
