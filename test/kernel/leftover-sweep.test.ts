// What an agent killed mid-teardown leaves, and how the next agent's start removes it (leftover-sweep.ts).
// The fault campaign found the window: a World's end was recorded (Captured/Failed) and the agent died
// before its run was torn down, so its cgroup, loop device and id range outlived it, and nothing looked
// at a finished World again. Here, with real cgroups, processes, ext4 run disks on loop devices and the
// store's id ranges: a finished World, a Check run and an unrecorded World are each left with a live
// process, a mounted disk and an id range; a World recorded running is left the same way. The sweep
// kills and removes the first three and releases their ranges, keeps the finished World's output log,
// and does not touch the running World (its supervisor's new agent re-attaches to it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { mountRunDisk } from '../../node-agent/sandbox/disk-image.js';
import { RunDiskPool } from '../../node-agent/sandbox/disk-pool.js';
import { detachLoop, listLoops } from '../../node-agent/sandbox/disk-loop.js';
import { acquireSlot, slotHolders } from '../../node-agent/sandbox/id-slots.js';
import { worldPaths, type WorldPaths } from '../../node-agent/sandbox/run-paths.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { putWorldRecord } from '../../node-agent/store/world-records.js';
import { sweepRunLeftovers } from '../../node-agent/worlds/leftover-sweep.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the leftover sweep test (cgroups, loop devices, ext4 mounts)');
const MiB = 2 ** 20;
const dir = mkdtempSync(join('/var/tmp', 'wl-sweep-'));
const layout = detectCgroups();
const cgroups: WorldCgroup[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const cg of cgroups) {
    cg.killAll();
    cg.remove();
  }
  for (const m of mountsUnder(dir)) native.umount2(m, native.MNT_DETACH);
  for (const l of listLoops()) if (l.backingFile.startsWith(`${dir}/`)) detachLoop(l.device);
  rmSync(dir, { recursive: true, force: true });
});

/** A run as an agent leaves it when killed mid-teardown: a process in its cgroup and its disk mounted. */
async function leaveRun(paths: WorldPaths, cgroupName: string): Promise<{ child: ChildProcess; exited: Promise<void>; device: string; cgroup: WorldCgroup }> {
  const cgroup = WorldCgroup.create(layout, 'worldline', cgroupName);
  cgroups.push(cgroup);
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  children.push(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (const f of cgroup.procsFiles()) writeFileSync(f, String(child.pid));
  assert.deepEqual(cgroup.pids(), [child.pid]);
  const { device } = await mountRunDisk(paths, 4 * MiB);
  return { child, exited, device, cgroup };
}

function attached(device: string): boolean {
  return listLoops().some((l) => l.device === device && l.backingFile.startsWith(`${dir}/`));
}

test('a finished World, a Check run and an unrecorded World left mid-teardown are removed at start; a running World is kept', async () => {
  const { store } = await openStore({ dir: join(dir, 'store') });
  try {
    const now = new Date();
    const [finishedUid, runningUid, orphanUid, checkUid] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const checksDir = join(store.dir, 'checks');

    const finishedPaths = worldPaths(store.layout.worlds, finishedUid);
    const finished = await leaveRun(finishedPaths, `world-${finishedUid}`);
    writeFileSync(finishedPaths.output, 'what the agent printed\n');
    putWorldRecord(store.db, { uid: finishedUid, namespace: 'ns', name: 'finished', state: 'captured', status: { phase: 'Captured' } }, now);
    acquireSlot(store.db, finishedUid, 8, now);

    const runningPaths = worldPaths(store.layout.worlds, runningUid);
    const running = await leaveRun(runningPaths, `world-${runningUid}`);
    putWorldRecord(store.db, { uid: runningUid, namespace: 'ns', name: 'running', state: 'running', status: { phase: 'Running' } }, now);
    acquireSlot(store.db, runningUid, 8, now);

    const orphanPaths = worldPaths(store.layout.worlds, orphanUid);
    const orphan = await leaveRun(orphanPaths, `world-${orphanUid}`);
    writeFileSync(orphanPaths.output, 'nobody reads this\n');

    const checkPaths = worldPaths(checksDir, checkUid);
    const check = await leaveRun(checkPaths, `check-${checkUid}`);
    acquireSlot(store.db, `check-${checkUid}`, 8, now);
    // A private-evaluator run's role left in its cgroup beneath the run's budget.
    const budget = WorldCgroup.create(layout, 'worldline', `pe-${checkUid}`);
    const role = WorldCgroup.create(layout, `worldline/pe-${checkUid}`, 'c1');
    cgroups.push(role, budget);
    const roleChild = spawn('sleep', ['600'], { stdio: 'ignore' });
    children.push(roleChild);
    const roleExited = new Promise<void>((resolve) => roleChild.once('exit', () => resolve()));
    for (const f of role.procsFiles()) writeFileSync(f, String(roleChild.pid));
    assert.deepEqual(role.pids(), [roleChild.pid]);

    // A run disk the agent had made ahead and no run took (disk-pool.ts): mounted and attached, as a kill leaves it.
    const pool = new RunDiskPool(store.layout.diskPool, join(store.layout.worlds, '.disk-templates'));
    pool.refill(16 * MiB);
    for (let i = 0; i < 500 && pool.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(pool.size, 1);
    const [poolDevice] = listLoops().filter((l) => l.backingFile.startsWith(`${store.layout.diskPool}/`)).map((l) => l.device);
    assert.ok(poolDevice);

    const swept = await sweepRunLeftovers(store, layout);
    assert.deepEqual(swept.failed, []);
    assert.equal(swept.disks.length, 1, 'the disk made ahead is swept');
    assert.equal(attached(poolDevice), false, 'its loop device is detached');
    assert.deepEqual(mountsUnder(store.layout.diskPool), [], 'its mount is gone');
    assert.deepEqual(swept.worlds.sort(), [finishedUid, orphanUid].sort());
    assert.deepEqual(swept.checks, [checkUid]);
    assert.deepEqual(swept.slots.sort(), [finishedUid, `check-${checkUid}`].sort());

    for (const [what, run, paths] of [['finished World', finished, finishedPaths], ['unrecorded World', orphan, orphanPaths], ['Check run', check, checkPaths]] as const) {
      await run.exited; // killed through its cgroup (the test would time out otherwise)
      assert.equal(run.child.signalCode, 'SIGKILL', `${what}: its process was killed`);
      for (const d of run.cgroup.dirs()) assert.equal(existsSync(d), false, `${what}: cgroup ${d} is gone`);
      assert.equal(existsSync(paths.dir), false, `${what}: its directory is gone`);
      assert.deepEqual(mountsUnder(paths.dir), [], `${what}: nothing mounted`);
      assert.equal(attached(run.device), false, `${what}: loop device ${run.device} detached`);
    }
    await roleExited;
    assert.equal(roleChild.signalCode, 'SIGKILL', "the private run's role was killed");
    for (const d of [...role.dirs(), ...budget.dirs()]) assert.equal(existsSync(d), false, `private run cgroup ${d} is gone`);
    assert.equal(readFileSync(finishedPaths.output, 'utf8'), 'what the agent printed\n', 'a finished World keeps its output log');
    assert.equal(existsSync(orphanPaths.output), false, 'an unrecorded World\'s output log goes with it');

    assert.equal(running.child.exitCode, null, 'the running World\'s process is alive');
    assert.equal(running.child.signalCode, null);
    assert.deepEqual(running.cgroup.pids(), [running.child.pid]);
    assert.ok(attached(running.device), 'the running World\'s disk stays attached');
    assert.ok(existsSync(runningPaths.dir));
    assert.deepEqual(slotHolders(store.db), [runningUid], 'only the running World keeps its id range');

    // A second start finds nothing more to do.
    const again = await sweepRunLeftovers(store, layout);
    assert.deepEqual(again, { worlds: [], checks: [], loops: [], disks: [], slots: [], failed: [] });
  } finally {
    store.close();
  }
});
