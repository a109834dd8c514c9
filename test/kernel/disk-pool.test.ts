// Run disks made ahead (disk-pool.ts). What must hold: a disk taken from the pool is the run's own clean
// filesystem of exactly the size, mounted at its layers, with its image in the run's directory and the
// loop device following it there (so the run's teardown detaches it as any run disk); the pool keeps
// nothing of it (no entry, no mount, no loop); a disk is taken once; a size not made ahead is not
// answered; a closed pool removes what it holds; and what an earlier agent's pool left is swept whole.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as native from '../../native/index.js';
import { detachRunDisk, diskImagePath, makeDisk } from '../../node-agent/sandbox/disk-image.js';
import { loopsUnder } from '../../node-agent/sandbox/disk-loop.js';
import { RunDiskPool, sweepDiskPool } from '../../node-agent/sandbox/disk-pool.js';
import { worldPaths, type WorldPaths } from '../../node-agent/sandbox/run-paths.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the run disk pool tests (loop devices, ext4 mounts)');
const execFileP = promisify(execFile);
const MiB = 2 ** 20;
const dir = mkdtempSync(join('/var/tmp', 'wl-diskpool-'));
const runs = join(dir, 'worlds');
const poolDir = join(dir, 'disk-pool');
const templates = join(runs, '.disk-templates');
mkdirSync(runs);
const used: WorldPaths[] = [];
after(() => {
  for (const m of mountsUnder(dir)) native.umount2(m, native.MNT_DETACH);
  for (const p of used) detachRunDisk(p);
  for (const l of loopsUnder(dir)) native.loopDetach(l.device);
  rmSync(dir, { recursive: true, force: true });
});

const poolEntries = (): string[] => (existsSync(poolDir) ? readdirSync(poolDir) : []);
const poolMounts = (): string[] => mountsUnder(poolDir);

async function filled(pool: RunDiskPool, bytes: number, want: number): Promise<void> {
  pool.refill(bytes);
  for (let i = 0; i < 500 && pool.size < want; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(pool.size, want, `the pool made ${want} disk(s) ahead`);
}

test('a disk taken from the pool is the run\'s own clean filesystem of the size; the pool keeps nothing of it', async () => {
  const errors: Error[] = [];
  const pool = new RunDiskPool(poolDir, templates, (e) => errors.push(e));
  await filled(pool, 64 * MiB, 1);
  assert.equal(poolEntries().length, 1, 'one entry made ahead');

  const p = worldPaths(runs, 'run-a');
  used.push(p);
  const back = pool.take(p, 64 * MiB);
  assert.ok(back, 'a ready disk of the size is taken');
  assert.equal(back.bytes, 64 * MiB);
  const st = statfsSync(p.layers);
  assert.equal(st.blocks * st.bsize, 64 * MiB, 'statfs at the run\'s layers reads back the size');
  assert.notEqual(statSync(p.layers).dev, statSync(p.dir).dev, 'the layers are a filesystem of their own');
  assert.deepEqual(readdirSync(p.layers).sort(), ['lost+found'], 'nothing was ever written to it');
  assert.equal(statSync(p.layers).mode & 0o7777, 0o700);

  // The image is in the run's directory and the loop device names it there.
  const loops = loopsUnder(p.dir);
  assert.equal(loops.length, 1, 'the run\'s loop device follows its image into the run directory');
  assert.equal(loops[0]?.backingFile, diskImagePath(p));
  assert.equal(loops[0]?.device, back.device);
  assert.deepEqual(poolEntries(), [], 'the pool\'s entry is gone');
  assert.deepEqual(poolMounts(), [], 'and so is its mount');
  assert.equal(pool.size, 0);
  assert.equal(pool.take(worldPaths(runs, 'run-b'), 64 * MiB), undefined, 'a disk is taken once');

  // The run writes to it; after the run's teardown (unmount, then detach) the image checks clean.
  writeFileSync(join(p.layers, 'written'), 'by the run');
  native.umount2(p.layers, 0);
  assert.deepEqual(detachRunDisk(p), [back.device], 'the run\'s teardown detaches it as any run disk');
  const { stdout } = await execFileP('e2fsck', ['-f', '-n', '--', diskImagePath(p)], { encoding: 'utf8', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
  assert.match(stdout, /clean|files/, stdout);
  assert.deepEqual(errors, []);
  pool.close();
});

test('a size not made ahead is not answered, and a closed pool removes what it holds and makes no more', async () => {
  const pool = new RunDiskPool(poolDir, templates);
  await filled(pool, 32 * MiB, 1);
  assert.equal(pool.take(worldPaths(runs, 'run-c'), 48 * MiB), undefined, 'only the exact size is taken');
  assert.equal(existsSync(worldPaths(runs, 'run-c').dir), false, 'a miss touches nothing of the run');
  pool.close();
  assert.equal(pool.size, 0);
  assert.deepEqual(poolEntries(), []);
  assert.deepEqual(loopsUnder(poolDir), [], 'no loop device is left attached');
  pool.refill(32 * MiB);
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(poolEntries(), [], 'a closed pool makes nothing');
});

test('what an earlier agent\'s pool left (mounted and attached, or half made) is swept whole at start', async () => {
  // A disk made ahead as the pool makes it, and an entry with an image but no mount: both as a killed agent leaves them.
  const whole = join(poolDir, 'left-1');
  mkdirSync(whole, { recursive: true, mode: 0o700 });
  await makeDisk(whole, join(whole, 'mnt'), 16 * MiB, templates);
  const half = join(poolDir, 'left-2');
  mkdirSync(half, { mode: 0o700 });
  writeFileSync(join(half, 'disk.img'), '');
  assert.equal(loopsUnder(whole).length, 1);

  const swept = sweepDiskPool(poolDir).sort();
  assert.deepEqual(swept, ['left-1', 'left-2']);
  assert.deepEqual(poolEntries(), []);
  assert.deepEqual(loopsUnder(poolDir), [], 'its loop device is detached');
  assert.deepEqual(poolMounts(), [], 'and its mount is gone');
  assert.ok(existsSync(templates), 'the templates stay');
  assert.deepEqual(sweepDiskPool(join(dir, 'absent')), [], 'a runs directory not made yet has nothing to sweep');
});
