// openat2 / openBeneath: a path can never leave the root directory fd, through "..", an absolute path or
// any symlink, on the openat2 path and on the per-component fallback walk alike.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AT_EMPTY_PATH, AT_FDCWD, O_DIRECTORY, O_NOFOLLOW, O_PATH, O_RDONLY, RESOLVE_IN_ROOT, forceBeneathFallback,
  closeFd, openBeneath, openat2, statx,
} from '../../native/index.js';
import { Cleanup, closeQuietly } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => {
  forceBeneathFallback(false);
  cleanup.run();
});

const base = cleanup.tempDir('openat2');
const root = join(base, 'root');
mkdirSync(join(root, 'sub'), { recursive: true });
writeFileSync(join(root, 'sub', 'file'), 'inside\n');
writeFileSync(join(base, 'secret'), 'outside\n');
symlinkSync('/etc', join(root, 'abs'));
symlinkSync('sub/file', join(root, 'rel'));
symlinkSync('../..', join(root, 'sub', 'up'));
const rootFd = openSync(root, 'r');
cleanup.add(() => closeSync(rootFd));

function readFd(fd: number): string {
  const buf = Buffer.alloc(64);
  const n = readSync(fd, buf, 0, buf.length, 0);
  return buf.subarray(0, n).toString();
}

function cloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1]!;
  return (parseInt(flags, 8) & 0o2000000) !== 0;
}

for (const mode of ['openat2', 'fallback'] as const) {
  const syscall = mode === 'openat2' ? 'openat2' : 'openat';
  const refuse = (rel: string, code: string, flags = O_RDONLY): void => {
    forceBeneathFallback(mode === 'fallback');
    assert.throws(() => openBeneath(rootFd, rel, flags), (e: NodeJS.ErrnoException) => {
      assert.equal(e.code, code, `${rel}: ${e.message}`);
      assert.equal(e.syscall, syscall, 'the error names the syscall that really ran');
      assert.equal(typeof e.errno, 'number');
      assert.ok(e.errno! < 0);
      return true;
    });
  };

  test(`${mode}: opens a plain path beneath the root, O_CLOEXEC`, () => {
    forceBeneathFallback(mode === 'fallback');
    const fd = openBeneath(rootFd, 'sub/file', O_RDONLY);
    try {
      assert.equal(readFd(fd), 'inside\n');
      assert.ok(cloexec(fd), 'fd must be O_CLOEXEC');
    } finally {
      closeSync(fd);
    }
    const dirFd = openBeneath(rootFd, './sub/', O_RDONLY | O_DIRECTORY);
    closeSync(dirFd);
  });

  test(`${mode}: refuses ".." escapes with EXDEV`, () => {
    refuse('../secret', 'EXDEV');
    refuse('sub/../../secret', 'EXDEV');
  });

  test(`${mode}: refuses absolute paths with EXDEV`, () => {
    refuse('/etc/passwd', 'EXDEV');
  });

  test(`${mode}: refuses every symlink with ELOOP (absolute, relative, upward)`, () => {
    refuse('abs/passwd', 'ELOOP');
    refuse('rel', 'ELOOP');
    refuse('sub/up/secret', 'ELOOP');
    refuse('rel', 'ELOOP', O_PATH);
  });

  test(`${mode}: O_PATH|O_NOFOLLOW on a trailing symlink gives the link itself`, () => {
    forceBeneathFallback(mode === 'fallback');
    const fd = openBeneath(rootFd, 'rel', O_PATH | O_NOFOLLOW);
    try {
      assert.equal(statx(fd, '', AT_EMPTY_PATH).type, 'symlink');
    } finally {
      closeSync(fd);
    }
  });

  test(`${mode}: missing path gives ENOENT`, () => {
    refuse('sub/missing', 'ENOENT');
  });
}

test('openat2 is a thin wrapper: RESOLVE_IN_ROOT resolves "/" to the dirfd', () => {
  const fd = openat2(rootFd, '/sub/file', { flags: O_RDONLY, resolve: RESOLVE_IN_ROOT });
  try {
    assert.equal(readFd(fd), 'inside\n');
    assert.ok(cloexec(fd));
  } finally {
    closeQuietly(fd);
  }
});

test('closeFd closes what openBeneath opened, and names a descriptor that is not open', () => {
  const fd = openBeneath(rootFd, 'sub/file', O_RDONLY);
  assert.equal(readFd(fd), 'inside\n');
  closeFd(fd);
  assert.throws(() => fstatSync(fd), { code: 'EBADF' });
  assert.throws(() => closeFd(fd), { code: 'EBADF', syscall: 'close' });
  assert.throws(() => closeFd(-1), { code: 'ERR_OUT_OF_RANGE' });
});

test('arguments are validated in TypeScript before the addon', () => {
  assert.throws(() => openBeneath(-5, 'x', O_RDONLY), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => openBeneath(rootFd, 'a\0b', O_RDONLY), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => openBeneath(rootFd, '', O_RDONLY), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => openat2(AT_FDCWD, 'x', { flags: -1, resolve: 0 }), { code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => openBeneath(rootFd, 'x', 1.5), { code: 'ERR_INVALID_ARG_TYPE' });
});
