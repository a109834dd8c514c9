// At start, a world directory whose record is gone (or was never written) is a leftover of a crash:
// its mounts are removed, its disk's loop device detached and its directory deleted. Recorded worlds are
// left to their reconcile. A loop device whose image is gone (unlinked, or its run directory removed) is a
// leftover whoever it belonged to, a World's or a Check's run: it is detached.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { CgroupLayout } from '../sandbox/cgroup.js';
import { detachLoop, loopsUnder } from '../sandbox/disk-loop.js';
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
  for (const dir of [store.layout.worlds, join(store.dir, 'checks')]) {
    for (const loop of loopsUnder(dir)) {
      if (!loop.deleted && existsSync(dirname(loop.backingFile))) continue;
      detachLoop(loop.device);
      swept.push(relative(store.dir, loop.backingFile));
    }
  }
  return swept;
}
