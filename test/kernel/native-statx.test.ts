// statx: every field agrees with fs.lstatSync (bigint), the mount id and mount roots agree with
// /proc/self/mountinfo (and so does isMountPoint, which the store asks instead of reading mountinfo).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, type BigIntStats } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { AT_FDCWD, AT_SYMLINK_NOFOLLOW, bindMount, MNT_DETACH, mountTmpfs, statx, umount2, type FileType } from '../../native/index.js';
import { isMountPoint, mountPoints } from '../../node-agent/store/mount-table.js';
import { Cleanup } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('statx');
writeFileSync(join(base, 'file'), 'x'.repeat(12345));
mkdirSync(join(base, 'dir'));
symlinkSync('file', join(base, 'link'));
execFileSync('mkfifo', [join(base, 'fifo')]);

// Linux dev_t encoding as Node reports it.
const major = (dev: bigint): number => Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
const minor = (dev: bigint): number => Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));

function expectMatches(path: string, type: FileType): void {
  const sx = statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
  const st: BigIntStats = lstatSync(path, { bigint: true });
  assert.equal(sx.type, type, path);
  assert.equal(BigInt(sx.mode), st.mode, `${path} mode`);
  assert.equal(BigInt(sx.uid), st.uid);
  assert.equal(BigInt(sx.gid), st.gid);
  assert.equal(BigInt(sx.size), st.size);
  assert.equal(typeof sx.size, 'number', 'small sizes are numbers');
  assert.equal(BigInt(sx.nlink), st.nlink);
  assert.equal(sx.ino, st.ino);
  assert.equal(sx.devMajor, major(st.dev));
  assert.equal(sx.devMinor, minor(st.dev));
  assert.equal(sx.rdevMajor, major(st.rdev));
  assert.equal(sx.rdevMinor, minor(st.rdev));
  assert.equal(sx.mtimeNs, st.mtimeNs);
}

test('statx matches lstat for file, dir, symlink, fifo and a char device', () => {
  expectMatches(join(base, 'file'), 'file');
  expectMatches(join(base, 'dir'), 'dir');
  expectMatches(join(base, 'link'), 'symlink');
  expectMatches(join(base, 'fifo'), 'fifo');
  expectMatches('/dev/null', 'chr');
  assert.equal(statx(AT_FDCWD, '/dev/null', 0).rdevMajor, 1);
  assert.equal(statx(AT_FDCWD, '/dev/null', 0).rdevMinor, 3);
});

test('without AT_SYMLINK_NOFOLLOW statx follows the link', () => {
  assert.equal(statx(AT_FDCWD, join(base, 'link'), 0).type, 'file');
});

test('mntId is the mount id of /proc/self/mountinfo', () => {
  const ids = new Map<string, number>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n')) {
    const f = line.split(' ');
    ids.set(f[4]!, Number(f[0]));
  }
  assert.equal(statx(AT_FDCWD, '/proc', 0).mntId, ids.get('/proc'));
  assert.equal(statx(AT_FDCWD, '/', 0).mntId, ids.get('/'));
  assert.notEqual(ids.get('/proc'), ids.get('/'));
});

test('errors carry code, negative errno, syscall and path', () => {
  assert.throws(() => statx(AT_FDCWD, join(base, 'missing'), 0), (e: NodeJS.ErrnoException) => {
    assert.equal(e.code, 'ENOENT');
    assert.equal(e.errno, -2);
    assert.equal(e.syscall, 'statx');
    assert.equal(e.path, join(base, 'missing'));
    assert.ok(e instanceof Error);
    return true;
  });
});

test('mountRoot and isMountPoint say what mountinfo says: a tmpfs, a directory bound onto itself, its contents, a link to it, nothing', () => {
  const mnt = join(base, 'mnt');
  const sealed = join(base, 'sealed');
  mkdirSync(mnt);
  mkdirSync(join(sealed, 'inner'), { recursive: true });
  symlinkSync(mnt, join(base, 'to-mnt'));
  const paths = [mnt, sealed, join(sealed, 'inner'), join(base, 'to-mnt'), join(base, 'dir'), join(base, 'file'), '/', '/proc'];
  const agree = (label: string): void => {
    const table = new Set(mountPoints());
    for (const p of paths) {
      assert.equal(isMountPoint(p), table.has(p), `${label}: ${p}`);
      assert.equal(statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW).mountRoot, table.has(p), `${label}: statx of ${p}`);
    }
  };
  agree('before');
  assert.equal(isMountPoint(mnt), false);
  mountTmpfs(mnt, { size: '1m', mode: 0o755, nosuid: true, nodev: true, noexec: true });
  cleanup.mounted(mnt);
  bindMount(sealed, sealed, { readonly: true, recursive: false, nosuid: true, nodev: true });
  cleanup.mounted(sealed);
  agree('mounted');
  assert.equal(isMountPoint(mnt), true, 'a tmpfs');
  assert.equal(isMountPoint(sealed), true, 'a directory bound onto itself');
  assert.equal(isMountPoint(join(sealed, 'inner')), false, 'inside a mount is not a mount point');
  assert.equal(isMountPoint(join(base, 'to-mnt')), false, 'a link to a mount point is not followed');
  umount2(mnt, MNT_DETACH);
  umount2(sealed, MNT_DETACH);
  agree('unmounted');
  assert.equal(isMountPoint(mnt), false);
  assert.equal(isMountPoint(join(base, 'missing', 'deeper')), false, 'a path that does not exist');
  assert.equal(isMountPoint(join(base, 'file', 'below')), false, 'a path through a file');
});
