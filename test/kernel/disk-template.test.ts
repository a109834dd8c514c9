// Run disks are sparse copies of one formatted template per size (disk-image.ts): the first disk of a size
// runs mkfs.ext4 once, every later one copies the template's data extents. What must hold: the copy is a
// clean ext4 filesystem of exactly the size (e2fsck and statfs say so), it is as sparse as the template
// (holes stay holes: a 256 MiB disk allocates about what its metadata needs), two disks made from one
// template are independent filesystems, the template is never rewritten by use, something else under a
// template's name is replaced, and at most MAX_DISK_TEMPLATES sizes are kept. copySparse itself: data and
// holes as in the source, and an existing destination refused.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, ftruncateSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as native from '../../native/index.js';
import { DISK_TEMPLATES_NAME, MAX_DISK_TEMPLATES, detachRunDisk, diskImagePath, diskTemplatesDir, mountRunDisk } from '../../node-agent/sandbox/disk-image.js';
import { worldPaths, type WorldPaths } from '../../node-agent/sandbox/run-paths.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the run disk template tests (loop devices, ext4 mounts)');
const execFileP = promisify(execFile);
const MiB = 2 ** 20;
const dir = mkdtempSync(join('/var/tmp', 'wl-disktpl-'));
const runs = join(dir, 'worlds');
const mounted: WorldPaths[] = [];
after(() => {
  for (const m of mountsUnder(dir)) native.umount2(m, native.MNT_DETACH);
  for (const p of mounted) detachRunDisk(p);
  rmSync(dir, { recursive: true, force: true });
});

function unmount(p: WorldPaths): void {
  native.umount2(p.layers, 0);
  detachRunDisk(p);
}

async function fsckClean(image: string): Promise<void> {
  // -f: check even a clean filesystem; -n: open read-only, answer no. Exit 0 only when nothing is wrong.
  const { stdout } = await execFileP('e2fsck', ['-f', '-n', '--', image], { encoding: 'utf8', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
  assert.match(stdout, /clean|files/, stdout);
}

test('the second disk of a size is a sparse copy of the template: clean ext4 of the exact size, independent of the first', async () => {
  const a = worldPaths(runs, 'run-a');
  const b = worldPaths(runs, 'run-b');
  mounted.push(a, b);
  await mountRunDisk(a, 256 * MiB);
  const template = join(diskTemplatesDir(a), `${256 * MiB}.img`);
  assert.equal(diskTemplatesDir(a), join(runs, DISK_TEMPLATES_NAME));
  const before = lstatSync(template, { bigint: true });
  const bytesBefore = createHash('sha256').update(readFileSync(template)).digest('hex');
  await mountRunDisk(b, 256 * MiB);
  assert.equal(lstatSync(template, { bigint: true }).ino, before.ino, 'the template was reused, not made again');

  for (const p of [a, b]) {
    const st = statfsSync(p.layers);
    assert.equal(st.blocks * st.bsize, 256 * MiB, 'statfs reads back the requested size');
    const img = lstatSync(diskImagePath(p));
    assert.equal(img.size, 256 * MiB);
    assert.ok(img.blocks * 512 < 16 * MiB, `the image is sparse (${img.blocks * 512} bytes allocated)`);
  }
  // Independent filesystems: what one run writes, the other does not see.
  writeFileSync(join(a.layers, 'only-in-a'), 'a');
  assert.equal(existsSync(join(b.layers, 'only-in-a')), false);

  // The template is never mounted or written: after both runs it still checks clean, as does each copy.
  unmount(a);
  unmount(b);
  await fsckClean(template);
  await fsckClean(diskImagePath(a));
  await fsckClean(diskImagePath(b));
  assert.equal(createHash('sha256').update(readFileSync(template)).digest('hex'), bytesBefore, 'using the template did not change a byte of it');
});

test('something else under a template name is replaced, and only MAX_DISK_TEMPLATES sizes are kept', async () => {
  const tdir = diskTemplatesDir(worldPaths(runs, 'x'));
  const size = 8 * MiB;
  // A truncated file where the 8 MiB template should be: not a template of that size, so it is remade.
  writeFileSync(join(tdir, `${size}.img`), 'not a filesystem');
  const p = worldPaths(runs, 'run-replaced');
  mounted.push(p);
  await mountRunDisk(p, size);
  assert.equal(lstatSync(join(tdir, `${size}.img`)).size, size);
  const st = statfsSync(p.layers);
  assert.equal(st.blocks * st.bsize, size);
  unmount(p);

  for (let i = 0; i < MAX_DISK_TEMPLATES + 2; i++) {
    const q = worldPaths(runs, `run-size-${i}`);
    mounted.push(q);
    await mountRunDisk(q, (2 + i) * MiB);
    unmount(q);
  }
  const kept = readdirSync(tdir).filter((n) => /^[0-9]+\.img$/.test(n));
  assert.equal(kept.length, MAX_DISK_TEMPLATES, kept.join(', '));
  assert.ok(kept.includes(`${(2 + MAX_DISK_TEMPLATES + 1) * MiB}.img`), 'the newest template is kept');
  assert.equal(kept.includes(`${256 * MiB}.img`), false, 'the least recently used template was pruned');
  assert.deepEqual(readdirSync(tdir).filter((n) => n.startsWith('.')), [], 'no temporary template is left');
});

test('copySparse copies data and keeps holes; it refuses an existing destination', () => {
  const src = join(dir, 'sparse.src');
  const fd = openSync(src, 'w');
  ftruncateSync(fd, 64 * MiB);
  const chunk = Buffer.alloc(64 * 1024, 0x5a);
  writeSync(fd, chunk, 0, chunk.length, 0);
  writeSync(fd, chunk, 0, chunk.length, 32 * MiB);
  writeSync(fd, Buffer.from('tail'), 0, 4, 64 * MiB - 4);
  closeSync(fd);
  const dst = join(dir, 'sparse.dst');
  const copied = native.copySparse(src, dst);
  assert.ok(copied >= 2 * chunk.length + 4 && copied < 4 * MiB, `copied ${copied} bytes of data`);
  assert.ok(readFileSync(dst).equals(readFileSync(src)), 'same bytes');
  assert.equal(lstatSync(dst).size, 64 * MiB);
  assert.ok(lstatSync(dst).blocks * 512 < 4 * MiB, `holes kept (${lstatSync(dst).blocks * 512} bytes allocated)`);
  assert.throws(() => native.copySparse(src, dst), { code: 'EEXIST' });
});
