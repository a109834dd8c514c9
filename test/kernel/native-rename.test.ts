// renameat2 (EXCHANGE swaps two directories atomically, NOREPLACE never overwrites) and fsync helpers.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AT_FDCWD, RENAME_EXCHANGE, RENAME_NOREPLACE, fsyncFd, fsyncPath, renameat2 } from '../../native/index.js';
import { Cleanup } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('rename');

test('RENAME_EXCHANGE swaps two directories', () => {
  mkdirSync(join(base, 'a'));
  mkdirSync(join(base, 'b'));
  writeFileSync(join(base, 'a', 'which'), 'A');
  writeFileSync(join(base, 'b', 'which'), 'B');
  const inoA = statSync(join(base, 'a')).ino;
  const inoB = statSync(join(base, 'b')).ino;
  const dirFd = openSync(base, 'r');
  try {
    renameat2(dirFd, 'a', dirFd, 'b', RENAME_EXCHANGE);
  } finally {
    closeSync(dirFd);
  }
  assert.equal(readFileSync(join(base, 'a', 'which'), 'utf8'), 'B');
  assert.equal(readFileSync(join(base, 'b', 'which'), 'utf8'), 'A');
  assert.equal(statSync(join(base, 'a')).ino, inoB);
  assert.equal(statSync(join(base, 'b')).ino, inoA);
});

test('RENAME_EXCHANGE with a missing side fails ENOENT', () => {
  assert.throws(() => renameat2(AT_FDCWD, join(base, 'a'), AT_FDCWD, join(base, 'nope'), RENAME_EXCHANGE), {
    code: 'ENOENT',
    syscall: 'renameat2',
  });
});

test('RENAME_NOREPLACE refuses an existing target with EEXIST and changes nothing', () => {
  writeFileSync(join(base, 'x'), 'X');
  writeFileSync(join(base, 'y'), 'Y');
  assert.throws(() => renameat2(AT_FDCWD, join(base, 'x'), AT_FDCWD, join(base, 'y'), RENAME_NOREPLACE), (e: NodeJS.ErrnoException) => {
    assert.equal(e.code, 'EEXIST');
    assert.equal(e.errno, -17);
    assert.equal((e as NodeJS.ErrnoException & { dest: string }).dest, join(base, 'y'));
    return true;
  });
  assert.equal(readFileSync(join(base, 'x'), 'utf8'), 'X');
  assert.equal(readFileSync(join(base, 'y'), 'utf8'), 'Y');
  renameat2(AT_FDCWD, join(base, 'x'), AT_FDCWD, join(base, 'z'), RENAME_NOREPLACE);
  assert.equal(readFileSync(join(base, 'z'), 'utf8'), 'X');
});

test('fsyncPath syncs files and directories; errors name the syscall', () => {
  fsyncPath(join(base, 'z'));
  fsyncPath(base);
  assert.throws(() => fsyncPath(join(base, 'missing')), { code: 'ENOENT', syscall: 'lstat' });
  assert.throws(() => fsyncPath('relative/path'), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('fsyncFd syncs an open fd; a closed fd is EBADF', () => {
  const fd = openSync(join(base, 'z'), 'r');
  fsyncFd(fd);
  closeSync(fd);
  assert.throws(() => fsyncFd(fd), { code: 'EBADF', syscall: 'fsync' });
});
