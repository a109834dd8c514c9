// At start, a world directory whose record is gone (or was never written) is a leftover of a crash:
// its mounts are removed and its directory deleted. Recorded worlds are left to their reconcile.
import { readdirSync } from 'node:fs';
import type { CgroupLayout } from '../sandbox/cgroup.js';
import type { Store } from '../store/open-store.js';
import { cleanupWorldLeftovers } from './world-cleanup.js';
import { getWorldRecord } from '../store/world-records.js';

export function sweepOrphanWorlds(store: Store, cgroups: CgroupLayout): string[] {
  const swept: string[] = [];
  for (const uid of readdirSync(store.layout.worlds)) {
    if (!/^[A-Za-z0-9-]+$/.test(uid)) continue; // output logs (<uid>.output.log) are removed with their world
    if (getWorldRecord(store.db, uid)) continue;
    cleanupWorldLeftovers(store.layout.worlds, uid, cgroups);
    swept.push(uid);
  }
  return swept;
}
