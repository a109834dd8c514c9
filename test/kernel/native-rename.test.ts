// renameat2 (EXCHANGE swaps two directories atomically, NOREPLACE never overwrites) and fsync helpers,
// syncPaths among them (its syscalls seen by strace).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AT_FDCWD, RENAME_EXCHANGE, RENAME_NOREPLACE, fsyncFd, fsyncPath, renameat2, syncPaths } from '../../native/index.js';
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

// syncPaths: what it asks of the kernel, seen by strace from outside the process (-y names each fd's path).
function tracedSyncPaths(paths: string[]): { calls: { call: string; path: string }[]; stderr: string } {
  const out = join(base, `strace-${process.hrtime.bigint()}.txt`);
  const script = `import(${JSON.stringify(nativeIndex)}).then((n) => n.syncPaths(JSON.parse(process.argv[1])))`;
  const r = spawnSync('strace', ['-f', '-y', '-qq', '-e', 'trace=sync_file_range,fsync', '-o', out, process.execPath, '-e', script, JSON.stringify(paths)], { encoding: 'utf8' });
  assert.equal(r.error, undefined, `strace could not run (the Debian package strace): ${String(r.error)}`);
  assert.equal(r.status, 0, r.stderr);
  const calls: { call: string; path: string }[] = [];
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /^\d+\s+(sync_file_range|fsync)\(\d+<([^>]*)>/.exec(line);
    if (m) calls.push({ call: m[1]!, path: m[2]! });
  }
  return { calls, stderr: r.stderr };
}
const nativeIndex = new URL('../../native/index.js', import.meta.url).href;

test('syncPaths fsyncs every path once, after starting writeback on every file of the batch; 300 paths, a chunk at a time', () => {
  const dir = join(base, 'sync');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  const files = Array.from({ length: 298 }, (_, i) => join(dir, i % 2 ? 'sub' : '', `f${i}`));
  for (const f of files) writeFileSync(f, `bytes of ${f}\n`);
  const paths = [...files, join(dir, 'sub'), dir];
  const { calls } = tracedSyncPaths(paths);
  const fsyncs = calls.filter((c) => c.call === 'fsync').map((c) => c.path);
  assert.deepEqual(fsyncs.slice().sort(), paths.slice().sort(), 'each path fsynced once');
  const ranged = calls.filter((c) => c.call === 'sync_file_range').map((c) => c.path);
  assert.deepEqual(ranged.slice().sort(), files.slice().sort(), 'writeback started on each regular file, no directory');
  // Within the first batch, every file's writeback is started before the first fsync.
  const firstFsync = calls.findIndex((c) => c.call === 'fsync');
  assert.equal(calls.slice(0, firstFsync).filter((c) => c.call === 'sync_file_range').length, 256, 'the first 256 paths (all files) started before any fsync');
});

test('syncPaths rejects with the first failure, naming its path and syscall; a symbolic link is refused; bad arguments throw at once', async () => {
  const dir = join(base, 'sync-errors');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'file'), 'x');
  symlinkSync('file', join(dir, 'link'));
  await syncPaths([]);
  await syncPaths([join(dir, 'file'), dir]);
  await assert.rejects(syncPaths([join(dir, 'file'), join(dir, 'missing')]), { code: 'ENOENT', syscall: 'open', path: join(dir, 'missing') });
  await assert.rejects(syncPaths([join(dir, 'link')]), { code: 'ELOOP', syscall: 'open', path: join(dir, 'link') });
  assert.throws(() => syncPaths(['relative/path']), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.throws(() => syncPaths('not an array' as unknown as string[]), TypeError);
});
