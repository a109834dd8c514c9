// At start, before anything is admitted: what the previous agent's runs left on the node, and what it
// still held for them, is settled against the store's records. A run is known by its directory in the
// store or by the id range it holds (a run's range is released only after its teardown), never by
// scanning the node's cgroups: another agent's store on the same host is none of this agent's business.
// - A world directory or cgroup whose record is gone (or was never written) is removed whole.
// - One whose World is recorded finished (the agent ended between recording the end and tearing the run
//   down) loses its processes, mounts, disk and cgroup; its output log stays with the World.
// - Every Check run is removed: a Check never re-attaches, an interrupted one runs again from scratch.
// - A loop device whose image is gone (unlinked, or its run directory removed) is detached, whoever's.
// - Id ranges are released except those of Worlds recorded running (re-attached, or cleaned up and
//   released by their reconcile), so no range is reused while a process of its last holder may live.
// Worlds recorded running are left to their reconcile.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { sweepPrivateRunCgroups } from '../private-evaluator/run-examiner.js';
import { WorldCgroup, type CgroupLayout } from '../sandbox/cgroup.js';
import { detachLoop, loopsUnder } from '../sandbox/disk-loop.js';
import { sweepDiskPool } from '../sandbox/disk-pool.js';
import { releaseSlotsExcept, slotHolders } from '../sandbox/id-slots.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';
import type { Store } from '../store/open-store.js';
import { getWorldRecord, runningWorlds } from '../store/world-records.js';
import { cleanupWorldLeftovers } from './world-cleanup.js';

const RUN_ID = /^[A-Za-z0-9-]+$/;

export interface SweepResult {
  /** World uids whose leftovers were removed (no record, or a finished record). */
  worlds: string[];
  /** Check run ids removed. */
  checks: string[];
  /** Loop devices detached because their image was gone (store-relative image paths). */
  loops: string[];
  /** Run disks the previous agent had made ahead (sandbox/disk-pool.ts), never taken by a run. */
  disks: string[];
  /** Id range holders released. */
  slots: string[];
  /** Runs whose teardown failed (a mount that will not go, say): logged, and their id ranges kept. */
  failed: { run: string; error: string }[];
}

const CHECK_HOLDER = 'check-';

export async function sweepRunLeftovers(store: Store, cgroups: CgroupLayout): Promise<SweepResult> {
  const out: SweepResult = { worlds: [], checks: [], loops: [], disks: [], slots: [], failed: [] };
  const keep = new Set(runningWorlds(store.db));
  const attempt = async (run: string, holder: string, fn: () => Promise<void>): Promise<boolean> => {
    try {
      await fn();
      return true;
    } catch (err) {
      out.failed.push({ run, error: (err as Error).message });
      keep.add(holder);
      return false;
    }
  };
  const holders = slotHolders(store.db);
  const worldUids = new Set([...readdirSync(store.layout.worlds), ...holders.filter((h) => !h.startsWith(CHECK_HOLDER))]);
  for (const uid of [...worldUids].sort()) {
    if (!RUN_ID.test(uid)) continue;
    const rec = getWorldRecord(store.db, uid);
    if (rec?.state === 'running') continue;
    if (await attempt(`world ${uid}`, uid, () => cleanupWorldLeftovers(store.layout.worlds, uid, cgroups, { keepOutput: rec !== undefined }))) out.worlds.push(uid);
  }
  const checksDir = join(store.dir, 'checks');
  const checkDirs = existsSync(checksDir) ? readdirSync(checksDir).filter((n) => RUN_ID.test(n)) : [];
  for (const runId of [...new Set([...checkDirs, ...holders.filter((h) => h.startsWith(CHECK_HOLDER)).map((h) => h.slice(CHECK_HOLDER.length))])].sort()) {
    if (!RUN_ID.test(runId)) continue;
    const cgroup = WorldCgroup.attach(cgroups, 'worldline', `check-${runId}`);
    const swept = async (): Promise<void> => {
      throwTeardownErrors(await teardownRun(worldPaths(checksDir, runId), cgroup, () => cgroup.killAll()));
      // A private-evaluator run's roles have cgroups of their own beneath the run's budget.
      const left = await sweepPrivateRunCgroups(cgroups, runId);
      if (left.length > 0) throw new Error(`cgroups of private run ${runId} remain: ${left.join(', ')}`);
    };
    if (await attempt(`check ${runId}`, `${CHECK_HOLDER}${runId}`, swept)) out.checks.push(runId);
  }
  try {
    out.disks = sweepDiskPool(store.layout.diskPool);
  } catch (err) {
    out.failed.push({ run: 'run disks made ahead', error: (err as Error).message });
  }
  for (const dir of [store.layout.worlds, checksDir]) {
    for (const loop of loopsUnder(dir)) {
      if (!loop.deleted && existsSync(dirname(loop.backingFile))) continue;
      detachLoop(loop.device);
      out.loops.push(relative(store.dir, loop.backingFile));
    }
  }
  out.slots = releaseSlotsExcept(store.db, keep);
  return out;
}
