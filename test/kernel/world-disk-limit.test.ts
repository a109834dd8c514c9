// The disk resource class of the containment contract, enforced by the kernel: a World with 16Mi of
// ephemeral storage tries to write 64Mi. Its upper layer lives on a 16Mi ext4 of its own (a sparse image
// on a loop device), so the write fails with ENOSPC inside the world; the image holds at most the limit on
// the store; the size read back from the kernel is the request; capture keeps what fitted and says the disk
// was exhausted; teardown leaves no loop device and no mount. Then a crash leftover (a mounted run disk
// whose World has no record) is removed by the orphan sweep at agent start.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as native from '../../native/index.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { detachRunDisk, diskImagePath, mountRunDisk, readBackDisk } from '../../node-agent/sandbox/disk-image.js';
import { listLoops, tool } from '../../node-agent/sandbox/disk-loop.js';
import { worldPaths } from '../../node-agent/sandbox/run-paths.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { readCandidate } from '../../node-agent/store/candidates.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { generationManifest } from '../../node-agent/store/world-records.js';
import { sweepRunLeftovers } from '../../node-agent/worlds/leftover-sweep.js';
import { startWorldRun, type WorldEvent } from '../../node-agent/worlds/run-world.js';
import { admittedStatus, withEvent } from '../../node-agent/worlds/world-status.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the disk-limit tests (loop devices, ext4 mounts, a real sandbox)');
const execFileP = promisify(execFile);
const OWNER = 1000;
const ID_BASE = 2 ** 30 + 65536 * 44;
const MiB = 2 ** 20;
const LIMIT = 16 * MiB;

const dir = mkdtempSync(join('/var/tmp', 'wl-disk-'));
let store: Store | undefined;
after(() => {
  store?.close();
  for (const m of mountsUnder(dir)) native.umount2(m, native.MNT_DETACH);
  rmSync(dir, { recursive: true, force: true });
});

async function losetupAll(): Promise<string> {
  return (await execFileP('losetup', ['--all'], { encoding: 'utf8' })).stdout;
}

async function setup(): Promise<Store> {
  store = (await openStore({ dir: join(dir, 'store') })).store;
  const host = join(dir, 'roots', 'proj');
  mkdirSync(host, { recursive: true });
  writeFileSync(join(host, 'README.md'), 'base\n');
  for (const p of ['', 'README.md']) chownSync(join(host, p), OWNER, OWNER);
  await adoptRoot(store, { name: 'proj', hostPath: host });
  return store;
}

test('a World with 16Mi of ephemeral storage that writes 64Mi meets ENOSPC; the limit reads back; capture says so; teardown leaves nothing', async () => {
  const s = await setup();
  const r = await checkRouting(s, 'proj');
  const uid = 'disk-world-1';
  const paths = worldPaths(s.layout.worlds, uid);
  const script = [
    'exec 2>&1',
    'echo kept > /work/proj/kept.txt',
    'dd if=/dev/zero of=/work/proj/big bs=1M count=64',
    'echo "dd=$?"',
    // The workload sees its own limit from inside: statfs of its Root's view is the overlay over 16Mi.
    'df -k /work/proj | tail -n 1',
    'exit 0',
  ].join('\n');
  const events: WorldEvent[] = [];
  let imageBytesAtCapture = -1;
  let mountedAtRun: string[] = [];
  const run = startWorldRun(
    {
      uid,
      paths,
      roots: [{ name: 'proj', rootKey: r.root.rootKey, path: '/work/proj', payload: r.payloadPath, generation: r.root.generation, digest: r.root.digest, manifest: () => generationManifest(s.db, r.root.rootKey, r.root.generation)! }],
      argv: ['/bin/sh', '-c', script],
      env: ['PATH=/usr/bin:/bin'],
      cwd: '/work/proj',
      runAsUid: OWNER,
      runAsGid: OWNER,
      home: '/home/agent',
      newNetwork: true,
      idBase: ID_BASE,
      idCount: 65536,
      limits: { pids: 64, memoryBytes: 256 * MiB },
      wallTimeMs: 60_000,
      outputLimitBytes: 1 * MiB,
      ephemeralStorageBytes: LIMIT,
      cgroups: detectCgroups(),
      agentNs: native.nsIds('self'),
      candidatesDir: s.layout.candidates,
    },
    (e) => {
      events.push(e);
      if (e.type === 'running') mountedAtRun = mountsUnder(paths.dir);
      // Before teardown: what the world's disk image holds on the store's filesystem.
      if (e.type === 'captured') imageBytesAtCapture = lstatSync(diskImagePath(paths)).blocks * 512;
      return Promise.resolve();
    },
  );
  await run.finished;
  const output = readFileSync(paths.output, 'utf8');
  const failed = events.find((e) => e.type === 'failed');
  assert.equal(failed, undefined, `the run failed: ${JSON.stringify(failed)}\n${output}`);

  // ENOSPC inside the world, from the kernel.
  assert.match(output, /No space left on device/, output);
  assert.match(output, /dd=1/, output);

  // Read back from the kernel (statfs of the mounted disk) as exactly the request, before the workload ran.
  const disk = events.find((e) => e.type === 'disk');
  assert.ok(disk && disk.type === 'disk', JSON.stringify(events.map((e) => e.type)));
  assert.equal(disk.readback.bytes, LIMIT);
  assert.match(disk.readback.device, /^\/dev\/loop[0-9]+$/);
  assert.ok(mountedAtRun.includes(paths.layers), `the run disk was mounted at ${paths.layers}: ${mountedAtRun.join(', ')}`);
  assert.deepEqual(events.map((e) => e.type), ['cgroup', 'disk', 'running', 'exited', 'captured']);

  // The store grew by no more than the limit: the sparse image holds at most 16Mi, yet the world wrote until full.
  assert.ok(imageBytesAtCapture > 8 * MiB && imageBytesAtCapture <= LIMIT, `the image held ${imageBytesAtCapture} bytes on the store`);

  // Captured, with what fitted, and the disk named as exhausted; nothing of the disk's own entries leaks in.
  const captured = events.find((e) => e.type === 'captured');
  assert.ok(captured && captured.type === 'captured');
  assert.equal(captured.disk?.exhausted, true, JSON.stringify(captured.disk));
  assert.equal(captured.disk?.bytes, LIMIT);
  const deltas = [...readCandidate(captured.candidate.dir).deltas.values()];
  assert.deepEqual(deltas.flatMap((d) => d.upsert.map((u) => u.path)).sort(), ['big', 'kept.txt']);
  const big = deltas[0]!.upsert.find((u) => u.path === 'big');
  // On status: still Captured, the message and the Captured condition name the exhausted disk.
  const status = withEvent(admittedStatus([], 1, new Date(), 'admitted'), captured, { newNetwork: true, now: new Date() });
  assert.equal(status.phase, 'Captured');
  assert.match(status.message ?? '', /EPHEMERAL_STORAGE_EXHAUSTED: the world filled its ephemeral storage of 16777216 bytes/);
  assert.match(status.conditions.find((c) => c.type === 'Captured')?.message ?? '', /EPHEMERAL_STORAGE_EXHAUSTED/);
  const withDisk = withEvent(admittedStatus([], 1, new Date(), 'admitted'), disk, { newNetwork: true, now: new Date() });
  assert.deepEqual(withDisk.isolation?.observation?.ephemeralStorage, { bytes: String(LIMIT) });
  assert.ok(big && big.type === 'file' && (big.size ?? 0) > 8 * MiB && (big.size ?? 0) < LIMIT, JSON.stringify(big));

  // Teardown: no mount, no loop device, no image, no directory.
  assert.deepEqual(mountsUnder(paths.dir), []);
  assert.equal(existsSync(paths.dir), false);
  assert.deepEqual(listLoops().filter((l) => l.backingFile.startsWith(`${dir}/`)), []);
  assert.doesNotMatch(await losetupAll(), new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.equal(disk.readback.device !== undefined && existsSync(`/sys/block/${disk.readback.device.slice(5)}/loop/backing_file`), false, `${disk.readback.device} is still attached`);
});

test('a mounted run disk left by a crash (no World record) is unmounted, detached and removed by the orphan sweep', async () => {
  const s = store ?? (await setup());
  const paths = worldPaths(s.layout.worlds, 'crashed-world');
  const readback = await mountRunDisk(paths, 4 * MiB);
  assert.equal(statfsSync(paths.layers).blocks * statfsSync(paths.layers).bsize, 4 * MiB);
  // A loop device whose image was unlinked (its directory gone) is a leftover too.
  const gonePaths = worldPaths(s.layout.worlds, 'gone-world');
  const gone = await mountRunDisk(gonePaths, 2 * MiB);
  native.umount2(gonePaths.layers, native.MNT_DETACH);
  rmSync(gonePaths.dir, { recursive: true, force: true });
  assert.ok(listLoops().some((l) => l.device === gone.device && l.deleted), 'the unlinked image is still attached');

  const swept = await sweepRunLeftovers(s, detectCgroups());
  assert.ok(swept.worlds.includes('crashed-world'), swept.worlds.join(', '));
  assert.deepEqual(mountsUnder(paths.dir), []);
  assert.equal(existsSync(paths.dir), false);
  for (const d of [readback.device, gone.device]) {
    assert.ok(!listLoops().some((l) => l.device === d && l.backingFile.startsWith(`${dir}/`)), `${d} is still attached`);
  }
  assert.doesNotMatch(await losetupAll(), new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
});

test('a disk that does not read back as requested, or cannot be made, is refused by name', async () => {
  const s = store ?? (await setup());
  const paths = worldPaths(s.layout.worlds, 'mismatch-world');
  const readback = await mountRunDisk(paths, 4 * MiB);
  try {
    assert.throws(() => readBackDisk(paths, 4 * MiB + 4096, readback.device), { code: 'EPHEMERAL_STORAGE_LIMIT_MISMATCH', message: /reads back as 4194304 bytes .* not the 4198400 bytes requested/ });
  } finally {
    native.umount2(paths.layers, native.MNT_DETACH);
    detachRunDisk(paths);
  }
  // Nothing of its own mounted at the layers directory: the size would be the store's, never the request.
  assert.throws(() => readBackDisk(paths, 4 * MiB, readback.device), { code: 'EPHEMERAL_STORAGE_LIMIT_MISMATCH', message: /not a filesystem of its own/ });
  rmSync(paths.dir, { recursive: true, force: true });
  await assert.rejects(mountRunDisk(worldPaths(s.layout.worlds, 'tiny-world'), 64 * 1024), { code: 'EPHEMERAL_STORAGE_UNAVAILABLE', message: /below the smallest run disk/ });
  await assert.rejects(tool('mkfs.worldline-missing', ['x'], 'formatting'), { code: 'EPHEMERAL_STORAGE_UNAVAILABLE', message: /mkfs\.worldline-missing is not installed/ });
  rmSync(worldPaths(s.layout.worlds, 'tiny-world').dir, { recursive: true, force: true });
});
