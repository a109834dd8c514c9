// unmountAllUnder: every mount at or below a directory goes, whatever its shape — a sandbox's real root
// filesystem (a tmpfs holding a dozen mounts), mounts nested inside mounts, sibling mounts, two mounts
// stacked on one point — and nothing outside the directory is touched. unmountRootfs: the same for a
// sandbox's root filesystem, whether it is mounted (detached as one tree) or not (the table is asked).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bindMount, mountTmpfs } from '../../native/index.js';
import { mountSystemTree, unmountAllUnder, unmountRootfs } from '../../node-agent/sandbox/rootfs.js';
import type { WorldPaths } from '../../node-agent/sandbox/run-paths.js';
import { isMountPoint, mountPoints, mountsUnder } from '../../node-agent/store/mount-table.js';
import { Cleanup } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());

const tmpfs = (dir: string): void => {
  mkdirSync(dir, { recursive: true });
  mountTmpfs(dir, { size: '1m', mode: 0o755, nosuid: true, nodev: true, noexec: true });
  cleanup.mounted(dir);
};

test('a sandbox root filesystem, nested, sibling and stacked mounts all go; a mount beside the directory stays', () => {
  const base = cleanup.tempDir('unmount-tree');
  const dir = join(base, 'run');
  const rf = join(dir, 'rootfs');
  mkdirSync(rf, { recursive: true });
  mountSystemTree(rf, '1m');
  cleanup.mounted(rf);
  // Inside the root filesystem: a bind of a directory that then gets a mount of its own inside it.
  const src = join(base, 'src');
  mkdirSync(join(src, 'inner'), { recursive: true });
  mkdirSync(join(rf, 'tmp', 'work'));
  bindMount(src, join(rf, 'tmp', 'work'), { readonly: false, recursive: false, nosuid: true, nodev: true });
  tmpfs(join(rf, 'tmp', 'work', 'inner'));
  // Beside it: two siblings, and two mounts stacked on one point.
  tmpfs(join(dir, 'layers', 'a'));
  tmpfs(join(dir, 'layers', 'b'));
  tmpfs(join(dir, 'layers', 'b'));
  // Outside the directory, with a name that starts the same.
  const beside = join(base, 'run-beside');
  tmpfs(beside);

  const before = mountsUnder(dir);
  assert.ok(before.length >= 12, `the tree holds many mounts (${before.length})`);
  assert.equal(before.filter((m) => m === join(dir, 'layers', 'b')).length, 2, 'two mounts stacked on one point');

  assert.deepEqual(unmountAllUnder(dir), [], 'nothing is left');
  assert.deepEqual(mountsUnder(dir), []);
  assert.deepEqual(mountsUnder(beside), [beside], 'the mount beside the directory is untouched');
  assert.deepEqual(unmountAllUnder(dir), [], 'again: nothing to do');
});

test('unmountRootfs: a mounted root filesystem goes with everything inside it; under an unmounted one, what the table shows goes', () => {
  const base = cleanup.tempDir('unmount-rootfs');
  const rootfs = join(base, 'rootfs');
  mkdirSync(rootfs);
  const paths = { rootfs } as WorldPaths; // the only field unmountRootfs reads
  mountSystemTree(rootfs, '1m');
  cleanup.mounted(rootfs);
  mkdirSync(join(rootfs, 'tmp', 'inner'));
  tmpfs(join(rootfs, 'tmp', 'inner'));
  assert.ok(mountsUnder(rootfs).length >= 10, 'a real system tree');
  assert.deepEqual(unmountRootfs(paths), []);
  assert.deepEqual(mountsUnder(rootfs), []);
  assert.equal(isMountPoint(rootfs), false);
  assert.deepEqual(unmountRootfs(paths), [], 'again: nothing to do');

  // Not a mount point itself, yet something mounted below it: found in the table and detached.
  mkdirSync(join(rootfs, 'stray'));
  tmpfs(join(rootfs, 'stray'));
  assert.deepEqual(unmountRootfs(paths), []);
  assert.deepEqual(mountsUnder(rootfs), []);

  // A mount stacked on the root filesystem's own point: the one detach leaves the one below, and that goes too.
  mountSystemTree(rootfs, '1m');
  tmpfs(rootfs);
  assert.equal(mountPoints().filter((m) => m === rootfs).length, 2, 'two mounts stacked on the rootfs');
  assert.deepEqual(unmountRootfs(paths), []);
  assert.deepEqual(mountsUnder(rootfs), []);
  assert.equal(isMountPoint(rootfs), false);
});
