// Mounts through the addon: thin mount/umount2, bindMount whose read-only flag covers the whole bound
// tree, tmpfs options, overlayfs (writes land in upper, lower unchanged, paths with ':' and ',' work as
// lowerdir+ layers) and reading overlayfs whiteouts and opaque markers with lgetxattr/llistxattr.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AT_FDCWD, AT_SYMLINK_NOFOLLOW, MNT_DETACH, bindMount, lgetxattr, llistxattr, mount, mountOverlay, mountTmpfs,
  statx, umount2,
} from '../../native/index.js';
import { Cleanup } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('mount');

function mountinfo(target: string): string | undefined {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === target);
}

test('mount/umount2 are thin: a tmpfs via mount(2) appears and goes', () => {
  const t = join(base, 'thin');
  mkdirSync(t);
  mount('tmpfs', t, 'tmpfs', 0, 'size=1m,mode=0700');
  cleanup.mounted(t);
  assert.match(mountinfo(t) ?? '', / - tmpfs tmpfs rw,size=1024k,mode=700/);
  umount2(t, 0);
  assert.equal(mountinfo(t), undefined);
  assert.throws(() => umount2(t, 0), { code: 'EINVAL', syscall: 'umount2' });
  assert.throws(() => mount(null, join(base, 'missing'), 'tmpfs', 0), { code: 'ENOENT', syscall: 'mount' });
});

test('mountTmpfs applies size, mode, owner and nosuid/nodev/noexec', () => {
  const t = join(base, 'tmpfs');
  mkdirSync(t);
  mountTmpfs(t, { size: '2m', mode: 0o750, uid: 1234, gid: 5678, nosuid: true, nodev: true, noexec: true });
  cleanup.mounted(t);
  const sx = statx(AT_FDCWD, t, 0);
  assert.equal(sx.mode & 0o7777, 0o750);
  assert.equal(sx.uid, 1234);
  assert.equal(sx.gid, 5678);
  const line = mountinfo(t) ?? '';
  assert.match(line, / rw,nosuid,nodev,noexec,/);
  assert.match(line, /size=2048k/);
  assert.throws(() => mountTmpfs(t, { size: '2 m', nosuid: true, nodev: true, noexec: true }), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('bindMount readonly+recursive makes every mount of the bound tree read-only', () => {
  const src = join(base, 'bind-src');
  const sub = join(src, 'sub');
  mkdirSync(sub, { recursive: true });
  mountTmpfs(sub, { nosuid: true, nodev: true, noexec: false });
  cleanup.mounted(sub);
  writeFileSync(join(sub, 'f'), 'writable at the source');
  const dst = join(base, 'bind-dst');
  mkdirSync(dst);
  bindMount(src, dst, { readonly: true, recursive: true, nosuid: true, nodev: true });
  cleanup.mounted(dst);
  cleanup.mounted(join(dst, 'sub'));
  assert.equal(readFileSync(join(dst, 'sub', 'f'), 'utf8'), 'writable at the source');
  assert.throws(() => writeFileSync(join(dst, 'top'), 'x'), { code: 'EROFS' });
  assert.throws(() => writeFileSync(join(dst, 'sub', 'f'), 'x'), { code: 'EROFS' }, 'the submount must be read-only too');
  writeFileSync(join(sub, 'f'), 'still writable at the source');
  assert.match(mountinfo(join(dst, 'sub')) ?? '', / ro,nosuid,nodev,/);
  umount2(join(dst, 'sub'), MNT_DETACH);
  umount2(dst, MNT_DETACH);
});

interface Overlay {
  lower: string;
  upper: string;
  work: string;
  merged: string;
}

function makeOverlay(name: string, lowerName = 'lower'): Overlay {
  const dir = join(base, name);
  const o = { lower: join(dir, lowerName), upper: join(dir, 'upper'), work: join(dir, 'work'), merged: join(dir, 'merged') };
  for (const d of Object.values(o)) mkdirSync(d, { recursive: true });
  writeFileSync(join(o.lower, 'kept'), 'lower kept\n');
  writeFileSync(join(o.lower, 'deleted'), 'lower deleted\n');
  mkdirSync(join(o.lower, 'dir'));
  writeFileSync(join(o.lower, 'dir', 'old'), 'old\n');
  mountOverlay(o.merged, { lower: [o.lower], upper: o.upper, work: o.work });
  cleanup.mounted(o.merged);
  return o;
}

test('overlay: a write through merged lands in upper; lower is unchanged', () => {
  const o = makeOverlay('ovl');
  writeFileSync(join(o.merged, 'kept'), 'changed\n', { flag: 'a' });
  writeFileSync(join(o.merged, 'new'), 'new\n');
  assert.equal(readFileSync(join(o.upper, 'kept'), 'utf8'), 'lower kept\nchanged\n');
  assert.equal(readFileSync(join(o.upper, 'new'), 'utf8'), 'new\n');
  assert.equal(readFileSync(join(o.lower, 'kept'), 'utf8'), 'lower kept\n');
  assert.equal(existsSync(join(o.lower, 'new')), false);
  assert.match(mountinfo(o.merged) ?? '', / - overlay overlay rw,.*lowerdir\+?=/);
});

test('overlay: whiteouts and opaque directories are readable in upper', () => {
  const o = makeOverlay('ovl-xattr');
  rmSync(join(o.merged, 'deleted'));
  rmSync(join(o.merged, 'dir'), { recursive: true });
  mkdirSync(join(o.merged, 'dir'));
  assert.equal(existsSync(join(o.merged, 'deleted')), false);
  assert.deepEqual(readdirSync(join(o.merged, 'dir')), []);

  const wh = statx(AT_FDCWD, join(o.upper, 'deleted'), AT_SYMLINK_NOFOLLOW);
  const whiteout = (wh.type === 'chr' && wh.rdevMajor === 0 && wh.rdevMinor === 0) || lgetxattr(join(o.upper, 'deleted'), 'trusted.overlay.whiteout') !== null;
  assert.ok(whiteout, `upper/deleted must be a whiteout, got ${wh.type} ${wh.rdevMajor}:${wh.rdevMinor}`);

  assert.ok(llistxattr(join(o.upper, 'dir')).includes('trusted.overlay.opaque'));
  assert.deepEqual(lgetxattr(join(o.upper, 'dir'), 'trusted.overlay.opaque'), Buffer.from('y'));
});

test('xattr: a missing attribute is null, a missing file is ENOENT', () => {
  const f = join(base, 'plain');
  writeFileSync(f, '');
  assert.equal(lgetxattr(f, 'trusted.overlay.opaque'), null);
  assert.deepEqual(llistxattr(f), []);
  assert.throws(() => lgetxattr(join(base, 'nope'), 'user.x'), { code: 'ENOENT', syscall: 'lgetxattr' });
  assert.throws(() => llistxattr(join(base, 'nope')), { code: 'ENOENT', syscall: 'llistxattr' });
});

test('overlay: several lowerdir+ layers, topmost first, with ":" and "," in their paths', () => {
  const dir = join(base, 'multi');
  const top = join(dir, 'top:a,b');
  const bottom = join(dir, 'bottom');
  const upper = join(dir, 'upper');
  const work = join(dir, 'work');
  const merged = join(dir, 'merged');
  for (const d of [top, bottom, upper, work, merged]) mkdirSync(d, { recursive: true });
  writeFileSync(join(top, 'both'), 'top\n');
  writeFileSync(join(bottom, 'both'), 'bottom\n');
  writeFileSync(join(bottom, 'only-bottom'), 'bottom only\n');
  mountOverlay(merged, { lower: [top, bottom], upper, work, extra: ['index=off'] });
  cleanup.mounted(merged);
  assert.equal(readFileSync(join(merged, 'both'), 'utf8'), 'top\n');
  assert.equal(readFileSync(join(merged, 'only-bottom'), 'utf8'), 'bottom only\n');
});

test('overlay: a bad option fails with the kernel reason attached', () => {
  const o = join(base, 'bad');
  mkdirSync(join(o, 'l'), { recursive: true });
  mkdirSync(join(o, 'm'));
  assert.throws(
    () => mountOverlay(join(o, 'm'), { lower: [join(o, 'l')], upper: join(o, 'missing-upper'), work: join(o, 'w') }),
    (e: NodeJS.ErrnoException) => {
      assert.equal(e.code, 'ENOENT');
      assert.equal(e.syscall, 'fsconfig');
      return true;
    },
  );
  assert.throws(() => mountOverlay(join(o, 'm'), { lower: [], upper: '/x', work: '/y' }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => mountOverlay(join(o, 'm'), { lower: ['rel'], upper: '/x', work: '/y' }), { code: 'ERR_INVALID_ARG_VALUE' });
});
