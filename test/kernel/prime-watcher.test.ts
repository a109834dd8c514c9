// The PRIME watcher (node-agent/store/prime-watcher.ts) on a real ext4 filesystem (a fresh image on a loop
// device, as the store is in production): every kind of change under a watched tree is reported by its
// relative path, nothing outside a tree is, tree boundaries are compared with a trailing '/', and every
// gap in observation (overflow, a drain stopped at its bound, an unresolvable directory, a restart, a hard-linked file, a moved tree)
// is reported as a gap instead of a list. The mmap test pins down exactly what fanotify reports for a
// write through a shared writable mapping on this kernel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync, chownSync, linkSync, mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, symlinkSync, truncateSync, unlinkSync,
  utimesSync, writeFileSync, openSync, writeSync, fchmodSync, closeSync, constants as fsConstants,
} from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { PrimeWatcher, type ChangesSince } from '../../node-agent/store/prime-watcher.js';
import { requireRoot } from '../support/require-root.js';
import { loopExt4, PATH_ENV } from './loop-ext4.js';

requireRoot('the PRIME watcher tests (fanotify filesystem marks, loop devices, ext4 mounts)');
const fs = loopExt4('wl-primewatch-');
const store = join(fs.mnt, 'store');
const watchers: PrimeWatcher[] = [];

before(() => {
  fs.mount();
  mkdirSync(store, { mode: 0o700 });
});

after(() => {
  for (const w of watchers) w.close();
  fs.unmount();
});

function watcher(intervalMs = 0): PrimeWatcher {
  const w = new PrimeWatcher(store, { intervalMs });
  watchers.push(w);
  return w;
}

let serial = 0;
/** A fresh tree under the store, watched under a fresh key. */
function tree(w: PrimeWatcher, name = `t${++serial}`): { key: string; root: string } {
  const root = join(store, 'generations', name, 'payload');
  mkdirSync(root, { recursive: true });
  w.watch(name, root);
  return { key: name, root };
}

function paths(r: ChangesSince): string[] {
  assert.equal(r.gap, false, r.gap ? `unexpected gap: ${r.reason}: ${r.detail}` : '');
  return (r as { paths: string[] }).paths;
}

test('every kind of change under a watched tree is reported by its relative path', async (t) => {
  const w = watcher();
  const outside = join(store, 'outside');
  mkdirSync(outside, { recursive: true });
  const cases: { name: string; setup?: (root: string) => void; change: (root: string) => void; want: string[] | ((p: string[]) => void) }[] = [
    { name: 'write', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => writeFileSync(join(r, 'a'), 'changed', { flag: 'r+' }), want: ['a'] },
    { name: 'truncate', setup: (r) => writeFileSync(join(r, 'a'), 'xyz'), change: (r) => truncateSync(join(r, 'a'), 1), want: ['a'] },
    { name: 'chmod', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => chmodSync(join(r, 'a'), 0o600), want: ['a'] },
    { name: 'chown', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => chownSync(join(r, 'a'), 1234, 1234), want: ['a'] },
    { name: 'utimes', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => utimesSync(join(r, 'a'), 1, 1), want: ['a'] },
    { name: 'create', change: (r) => writeFileSync(join(r, 'new'), 'x'), want: ['new'] },
    { name: 'unlink', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => unlinkSync(join(r, 'a')), want: ['a'] },
    {
      name: 'rename in',
      setup: () => writeFileSync(join(outside, 'in'), 'x'),
      change: (r) => renameSync(join(outside, 'in'), join(r, 'in')),
      want: ['in'],
    },
    {
      name: 'rename out',
      setup: (r) => writeFileSync(join(r, 'a'), 'x'),
      change: (r) => renameSync(join(r, 'a'), join(outside, `out-${++serial}`)),
      want: ['a'],
    },
    { name: 'rename within', setup: (r) => writeFileSync(join(r, 'a'), 'x'), change: (r) => renameSync(join(r, 'a'), join(r, 'b')), want: ['a', 'b'] },
    { name: 'mkdir', change: (r) => mkdirSync(join(r, 'd')), want: ['d'] },
    { name: 'rmdir', setup: (r) => mkdirSync(join(r, 'd')), change: (r) => rmdirSync(join(r, 'd')), want: ['d'] },
    { name: 'chmod of the tree directory', change: (r) => chmodSync(r, 0o750), want: ['.'] },
    {
      name: 'hard link',
      setup: (r) => writeFileSync(join(r, 'a'), 'x'),
      change: (r) => linkSync(join(r, 'a'), join(r, 'b')),
      // The new name, and the link count change of the file, attributed to one of its (now two) names.
      want: (p) => {
        assert.ok(p.includes('b'), p.join());
        assert.ok(p.every((x) => x === 'a' || x === 'b'), p.join());
      },
    },
    { name: 'symlink', change: (r) => symlinkSync('target', join(r, 's')), want: ['s'] },
    { name: 'nested write', setup: (r) => mkdirSync(join(r, 'sub/deep'), { recursive: true }), change: (r) => writeFileSync(join(r, 'sub/deep/f'), 'x'), want: ['sub/deep/f'] },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const { key, root } = tree(w);
      c.setup?.(root);
      const token = w.mark(key);
      assert.deepEqual(paths(w.changesSince(key, token)), [], 'nothing changed yet');
      const generation = w.generation;
      c.change(root);
      const got = paths(w.changesSince(key, token));
      if (typeof c.want === 'function') c.want(got);
      else assert.deepEqual(got, c.want);
      assert.ok(w.generation > generation, 'the generation increased');
      // A token taken after the change sees nothing more.
      assert.deepEqual(paths(w.changesSince(key, w.mark(key))), []);
    });
  }
});

test('changes outside every watched tree are not reported, and /x/ab does not contain /x/abc', () => {
  const w = watcher();
  const x = join(store, 'x');
  mkdirSync(join(x, 'ab'), { recursive: true });
  mkdirSync(join(x, 'abc'), { recursive: true });
  w.watch('ab', join(x, 'ab'));
  w.watch('abc', join(x, 'abc'));
  const ab = w.mark('ab');
  const abc = w.mark('abc');
  const generation = w.generation;
  writeFileSync(join(x, 'abd'), 'x'); // a sibling whose name starts with "ab"
  mkdirSync(join(x, 'abcd'));
  writeFileSync(join(x, 'abcd', 'f'), 'x');
  writeFileSync(join(store, 'elsewhere'), 'x');
  chmodSync(x, 0o711); // metadata of an ancestor does not change the tree
  assert.deepEqual(paths(w.changesSince('ab', ab)), []);
  assert.deepEqual(paths(w.changesSince('abc', abc)), []);
  assert.equal(w.generation, generation, 'nothing relevant to a watched tree was observed');
  writeFileSync(join(x, 'abc', 'f'), 'x');
  assert.deepEqual(paths(w.changesSince('ab', ab)), []);
  assert.deepEqual(paths(w.changesSince('abc', abc)), ['f']);
  assert.ok(w.generation > generation);
});

test('a writer in another process is observed', async () => {
  const w = watcher();
  const { key, root } = tree(w);
  const token = w.mark(key);
  const child = spawn(process.execPath, ['-e', 'require("node:fs").writeFileSync(process.argv[1], "from the child")', join(root, 'child-wrote')], { stdio: 'inherit' });
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
  assert.deepEqual(paths(w.changesSince(key, token)), ['child-wrote']);
});

test('the background timer drains: 2 x 12000 events with a pause between do not overflow the 16384-event queue', async () => {
  const w = watcher(20);
  const { key, root } = tree(w);
  const token = w.mark(key);
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 12000; i++) writeFileSync(join(root, `r${round}-${i}`), '');
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.equal(paths(w.changesSince(key, token)).length, 24000);
});

test('a queue overflow is a gap for every key; a token taken after it is clean again', () => {
  const w = watcher();
  const a = tree(w);
  const b = tree(w);
  const ta = w.mark(a.key);
  const tb = w.mark(b.key);
  const bulk = join(store, 'bulk');
  mkdirSync(bulk);
  // One event per new file (create, modify and close merge); more than the default 16384 without a drain.
  for (let i = 0; i < 20000; i++) writeFileSync(join(bulk, String(i)), '');
  for (const [key, token] of [[a.key, ta], [b.key, tb]] as const) {
    const r = w.changesSince(key, token);
    assert.equal(r.gap, true);
    assert.equal(r.gap && r.reason, 'overflow');
  }
  const after = w.mark(a.key);
  writeFileSync(join(a.root, 'later'), 'x');
  assert.deepEqual(paths(w.changesSince(a.key, after)), ['later']);
  rmSync(bulk, { recursive: true });
});

const QUEUE_SYSCTL = '/proc/sys/fs/fanotify/max_queued_events';

/** Runs fn with fs.fanotify.max_queued_events at n (a group copies it when it is made), then restores it. */
function withQueueLimit<T>(n: number, fn: () => T): T {
  const old = readFileSync(QUEUE_SYSCTL, 'utf8').trim();
  writeFileSync(QUEUE_SYSCTL, String(n));
  try {
    return fn();
  } finally {
    writeFileSync(QUEUE_SYSCTL, old);
  }
}

/** 32000 new files with 250-character names (32 directories of 1000) outside every tree: ~340 bytes of events each, ~10 MiB in all. */
function bulkOfLongNames(): string {
  const bulk = join(store, `bulk-${++serial}`);
  const pad = 'n'.repeat(246);
  for (let d = 0; d < 32; d++) {
    mkdirSync(join(bulk, String(d)), { recursive: true });
    for (let i = 0; i < 1000; i++) writeFileSync(join(bulk, String(d), `${pad}${String(i).padStart(4, '0')}`), '');
  }
  return bulk;
}

test('native: a read stops at an empty queue, at more events than the queue holds, or at 8 MiB, and says which', () => {
  const fd = withQueueLimit(100000, () => native.fanotifyOpen());
  let bulk = '';
  try {
    native.fanotifyMarkFilesystem(fd, store);
    bulk = bulkOfLongNames();
    const capped = native.fanotifyRead(fd, 100000);
    assert.equal(capped.complete, false, 'the 8 MiB bound came first: events queued before the call may be left');
    assert.ok(capped.events.length > 20000 && capped.events.length < 32000, `read ${capped.events.length} of the bulk's events`);
    // A group whose queue holds 1000 events cannot have had more than 1001 queued when a read began.
    const counted = native.fanotifyRead(fd, 1000);
    assert.equal(counted.complete, true);
    assert.ok(counted.events.length >= 1001 && capped.events.length + counted.events.length < 32000, `stopped after ${counted.events.length} events, with more queued`);
    const rest = native.fanotifyRead(fd);
    assert.equal(rest.complete, true);
    assert.equal(capped.events.length + counted.events.length + rest.events.length, 32000 + 32 + 1, 'one event per new file and directory, none lost');
    assert.throws(() => native.fanotifyRead(fd, 0), { code: 'ERR_OUT_OF_RANGE' });
  } finally {
    native.closeFd(fd);
    if (bulk !== '') rmSync(bulk, { recursive: true });
  }
});

test('a drain that stops at its bound before reading every event queued when it began is a gap, never a clean answer', () => {
  const w = withQueueLimit(100000, () => watcher());
  const { key, root } = tree(w);
  const token = w.mark(key);
  const bulk = bulkOfLongNames();
  try {
    writeFileSync(join(root, 'behind-the-bulk'), 'x'); // its event is queued after ~10 MiB of others
    const r = w.changesSince(key, token);
    assert.equal(r.gap, true, `the write behind the bulk was not read, and the drain answered as if nothing happened: ${JSON.stringify(r)}`);
    assert.equal(r.gap && r.reason, 'read-bounded');
    // Later drains read the rest: the token before stays a gap, and a token taken now is clean.
    const later = w.mark(key);
    assert.equal(w.changesSince(key, token).gap, true);
    writeFileSync(join(root, 'after'), 'y');
    assert.deepEqual(paths(w.changesSince(key, later)), ['after']);
  } finally {
    rmSync(bulk, { recursive: true }); // the loop image is small: a leftover bulk would fill it for the tests after
  }
});

test('a directory removed before the drain is located by its own removal event; one that also moved is a gap for every key', () => {
  const w = watcher();
  const { key, root } = tree(w);
  const other = tree(w);
  // Created, written and removed between two drains: every handle in the batch is stale, and still each
  // event is placed by the DELETE of its directory.
  const t1 = w.mark(key);
  mkdirSync(join(root, 'd/e'), { recursive: true });
  writeFileSync(join(root, 'd/e/f'), 'x');
  rmSync(join(root, 'd'), { recursive: true });
  assert.deepEqual(paths(w.changesSince(key, t1)), ['d', 'd/e', 'd/e/f']);

  // A directory outside every tree, written, moved and then removed (a collapse's staging): placed where
  // it was removed, outside; no tree changed and none has a gap.
  const t2 = w.mark(key);
  const t3 = w.mark(other.key);
  const gone = join(store, 'gone');
  mkdirSync(gone);
  writeFileSync(join(gone, 'f'), 'x');
  renameSync(gone, `${gone}-moved`);
  rmSync(`${gone}-moved`, { recursive: true });
  for (const [k, t] of [[key, t2], [other.key, t3]] as const) assert.deepEqual(w.changesSince(k, t), { gap: false, paths: [] });

  // A directory inside the tree, written, moved out and removed: its events are placed outside (where it
  // was removed), and the move out is what reports the tree changed.
  const t4 = w.mark(key);
  const t5 = w.mark(other.key);
  mkdirSync(join(root, 'leaving'));
  writeFileSync(join(root, 'leaving/f'), 'x');
  renameSync(join(root, 'leaving'), join(store, 'left'));
  rmSync(join(store, 'left'), { recursive: true });
  assert.deepEqual(paths(w.changesSince(key, t4)), ['leaving']);
  assert.deepEqual(w.changesSince(other.key, t5), { gap: false, paths: [] });
});

test('a directory removed after a move placed it elsewhere: every tree the move crossed is changed', () => {
  const w = watcher();
  const a = tree(w);
  const b = tree(w);
  mkdirSync(join(a.root, 'd'));
  const ta = w.mark(a.key);
  const tb = w.mark(b.key);
  // Written while in tree a, moved into tree b, then removed there: all between two drains.
  writeFileSync(join(a.root, 'd/f'), 'x');
  renameSync(join(a.root, 'd'), join(b.root, 'd'));
  rmSync(join(b.root, 'd'), { recursive: true });
  assert.deepEqual(paths(w.changesSince(a.key, ta)), ['d'], 'the move out of a reports a changed');
  assert.ok(paths(w.changesSince(b.key, tb)).includes('d'), 'the move into b and the removal report b changed');
});

test('a name that is not valid UTF-8 is a gap, not a wrong path', () => {
  const w = watcher();
  const { key, root } = tree(w);
  const token = w.mark(key);
  writeFileSync(Buffer.concat([Buffer.from(`${root}/bad-`), Buffer.from([0xff, 0xfe])]), 'x');
  const r = w.changesSince(key, token);
  assert.equal(r.gap && r.reason, 'unattributed', JSON.stringify(r));
});

test('a file outside every tree that loses a second name and is then removed is no gap', () => {
  const w = watcher();
  const { key } = tree(w);
  const token = w.mark(key);
  const outside = join(store, `linked-${++serial}`);
  mkdirSync(outside);
  writeFileSync(join(outside, 'f'), 'x');
  w.drain(); // the write is placed while the file has one name
  linkSync(join(outside, 'f'), join(outside, 'g'));
  w.drain(); // the link is seen; what follows reaches the watcher only after the file is gone
  rmSync(join(outside, 'g')); // the link count drops: an event with the object's handle and no name
  writeFileSync(join(outside, 'f'), 'y'); // other events of the object between (no merge with what follows)
  chmodSync(join(outside, 'f'), 0o600);
  rmSync(join(outside, 'f'));
  assert.deepEqual(w.changesSince(key, token), { gap: false, paths: [] });
});

test('changes to a file that never had a name (O_TMPFILE, as overlayfs copies up) are no gap', () => {
  const w = watcher();
  const { key } = tree(w);
  const token = w.mark(key);
  const O_TMPFILE = 0o20200000; // __O_TMPFILE | O_DIRECTORY (x86-64, arm64)
  const fd = openSync(store, O_TMPFILE | fsConstants.O_RDWR, 0o600);
  writeSync(fd, 'x');
  fchmodSync(fd, 0o640); // reported with the object's handle and no name
  closeSync(fd); // and gone before the watcher drains
  assert.deepEqual(w.changesSince(key, token), { gap: false, paths: [] });
});

test('an overlayfs copy-up in an upper directory outside every tree, removed before the drain, is no gap', () => {
  const w = watcher();
  const { key } = tree(w);
  const base = join(store, `ovl-${++serial}`);
  for (const d of ['lower', 'upper', 'work', 'merged']) mkdirSync(join(base, d), { recursive: true });
  writeFileSync(join(base, 'lower/f'), 'x');
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${base}/lower,upperdir=${base}/upper,workdir=${base}/work`, join(base, 'merged')], { env: PATH_ENV });
  try {
    const token = w.mark(key);
    // The copy-up builds the upper file nameless (O_TMPFILE in work/), sets its owner, mode and times,
    // then links it into upper/: some of those events carry the object's handle and no name.
    chmodSync(join(base, 'merged/f'), 0o600);
    utimesSync(join(base, 'merged/f'), 1, 1);
    rmSync(join(base, 'upper/f')); // gone before the watcher drains
    assert.deepEqual(w.changesSince(key, token), { gap: false, paths: [] });
  } finally {
    execFileSync('umount', [join(base, 'merged')], { env: PATH_ENV });
  }
});

test('a closed watcher answers only gaps', () => {
  const w = watcher();
  const { key, root } = tree(w);
  const token = w.mark(key);
  w.close();
  writeFileSync(join(root, 'after-close'), 'x');
  const r = w.changesSince(key, token);
  assert.equal(r.gap && r.reason, 'not-observing');
  assert.throws(() => w.mark(key));
});

test('a read failure is a gap; the watcher reopens its fd, which is a restart, and observes again', () => {
  const w = watcher();
  const { key, root } = tree(w);
  const token = w.mark(key);
  // Pull the fd out from under it: the next read fails with EBADF.
  native.closeFd((w as unknown as { fd: number }).fd);
  writeFileSync(join(root, 'unseen'), 'x');
  const r = w.changesSince(key, token);
  assert.equal(r.gap && r.reason, 'read-failed', JSON.stringify(r));
  const again = w.mark(key); // reopens: a restart gap for every token before it
  const r2 = w.changesSince(key, token);
  assert.equal(r2.gap && r2.reason, 'restart', JSON.stringify(r2));
  writeFileSync(join(root, 'seen'), 'x');
  assert.deepEqual(paths(w.changesSince(key, again)), ['seen']);
});

test('native: events decode to fid records (fsid, handle type, handle, name); errors carry code, errno and syscall', () => {
  const fd = native.fanotifyOpen();
  const mountFd = native.openat2(native.AT_FDCWD, store, { flags: native.O_RDONLY | native.O_DIRECTORY, resolve: 0 });
  try {
    assert.throws(() => native.fanotifyMarkFilesystem(fd, 'relative'), { code: 'ERR_INVALID_ARG_VALUE' });
    native.fanotifyMarkFilesystem(fd, store);
    const d = join(store, `native-${++serial}`);
    mkdirSync(d);
    const { events, complete } = native.fanotifyRead(fd);
    assert.equal(complete, true, 'an empty queue ends the read');
    const created = events.find((e) => e.dir?.name === d.slice(store.length + 1));
    assert.ok(created !== undefined, JSON.stringify(events));
    assert.equal(created.kind, 'event');
    assert.equal(created.mask, native.FAN_CREATE | native.FAN_ONDIR);
    assert.deepEqual(created.records.map((r) => r.type).sort(), [1, 2], 'DFID_NAME of the parent and FID of the new directory');
    assert.match(created.dir!.fsid!, /^[0-9a-f]{8}:[0-9a-f]{8}$/);
    assert.equal(created.fid!.fsid, created.dir!.fsid);
    assert.equal(native.resolveHandle(mountFd, created.dir!), store);
    assert.equal(native.resolveHandle(mountFd, created.fid!), d);
    assert.deepEqual(native.fanotifyRead(fd), { events: [], complete: true }, 'drained: nothing left');
    rmdirSync(d);
    assert.equal(native.resolveHandle(mountFd, created.fid!), null, 'a removed directory resolves to null (ESTALE), not a throw');
    assert.throws(() => native.openByHandle(mountFd, created.fid!.handleType!, created.fid!.handle!, native.O_PATH), { code: 'ESTALE', syscall: 'open_by_handle_at' });
  } finally {
    native.closeFd(fd);
    native.closeFd(mountFd);
  }
  assert.throws(() => native.fanotifyRead(fd), (err: NodeJS.ErrnoException) => err.code === 'EBADF' && err.errno === -9 && err.syscall === 'read(fanotify)');
});

test('native: handleTarget gives a handle\'s path and link count in one call; gone, or unlinked and still open, has no path', () => {
  const fd = native.fanotifyOpen();
  const mountFd = native.openat2(native.AT_FDCWD, store, { flags: native.O_RDONLY | native.O_DIRECTORY, resolve: 0 });
  const d = join(store, `target-${++serial}`);
  mkdirSync(d);
  let held: number | undefined;
  try {
    native.fanotifyMarkFilesystem(fd, store);
    writeFileSync(join(d, 'one'), 'x');
    writeFileSync(join(d, 'kept-open'), 'x');
    writeFileSync(join(d, 'removed'), 'x');
    const made = new Map(native.fanotifyRead(fd).events.filter((e) => e.mask & native.FAN_CREATE).map((e) => [e.dir!.name!, e]));
    const fidOf = (name: string): native.FanotifyRecord => {
      const e = made.get(name);
      assert.ok(e?.fid !== undefined, `no CREATE event with a fid for ${name}: ${JSON.stringify([...made.keys()])}`);
      return e.fid;
    };
    assert.deepEqual(native.handleTarget(mountFd, made.get('one')!.dir!), { path: d, nlink: 2 }, 'the directory: its path, and . and its entry');
    assert.deepEqual(native.handleTarget(mountFd, fidOf('one')), { path: join(d, 'one'), nlink: 1 });
    linkSync(join(d, 'one'), join(d, 'two'));
    const linked = native.handleTarget(mountFd, fidOf('one'));
    assert.equal(linked.nlink, 2, 'a second name shows in the link count');
    assert.ok(linked.path === join(d, 'one') || linked.path === join(d, 'two'), `a hard-linked file resolves to one of its names (the kernel picks which): ${linked.path}`);
    held = openSync(join(d, 'kept-open'), 'r');
    unlinkSync(join(d, 'kept-open'));
    assert.deepEqual(native.handleTarget(mountFd, fidOf('kept-open')), { path: null, nlink: 0 }, 'unlinked, still open: "(deleted)", no path');
    unlinkSync(join(d, 'removed'));
    assert.deepEqual(native.handleTarget(mountFd, fidOf('removed')), { path: null, nlink: 0 }, 'gone (ESTALE): no path, not a throw');
    assert.equal(native.resolveHandle(mountFd, made.get('one')!.dir!), d, 'resolveHandle is its path');
    assert.throws(() => native.handleTarget(mountFd, { ...fidOf('one'), handle: Buffer.alloc(0) }), { code: 'ERR_INVALID_ARG_VALUE' });
    assert.throws(() => native.handleTarget(-1, fidOf('one')), { code: 'ERR_OUT_OF_RANGE' });
  } finally {
    if (held !== undefined) closeSync(held);
    native.closeFd(fd);
    native.closeFd(mountFd);
    rmSync(d, { recursive: true, force: true });
  }
});

test('a fresh watcher has a gap for any token from before it existed; a token older than watch() is a gap', () => {
  const first = watcher();
  const { key, root } = tree(first);
  const old = first.mark(key);
  first.close();
  watchers.splice(watchers.indexOf(first), 1);
  const second = watcher();
  second.watch(key, root);
  const r = second.changesSince(key, old);
  assert.equal(r.gap, true);
  assert.equal(r.gap && r.reason, 'restart');
  const fresh = second.mark(key);
  assert.deepEqual(paths(second.changesSince(key, fresh)), []);
  const late = tree(second);
  const r2 = second.changesSince(late.key, fresh);
  assert.equal(r2.gap && r2.reason, 'before-watch');
  assert.equal(second.changesSince('never-watched', fresh).gap, true);
});

test('moving the tree directory away, or one above it, is a gap for that tree only', () => {
  const w = watcher();
  const a = tree(w);
  const b = tree(w);
  const ta = w.mark(a.key);
  const tb = w.mark(b.key);
  renameSync(join(a.root, '..'), join(store, 'generations', `${a.key}-moved`));
  const r = w.changesSince(a.key, ta);
  assert.equal(r.gap && r.reason, 'tree-moved');
  assert.deepEqual(paths(w.changesSince(b.key, tb)), []);
});

test('a write to a file with another name (generations share files by hard link) is a gap', () => {
  const w = watcher();
  const prime = tree(w);
  const other = join(store, 'generations', `other-${++serial}`);
  mkdirSync(other);
  writeFileSync(join(prime.root, 'shared'), 'x');
  linkSync(join(prime.root, 'shared'), join(other, 'shared'));
  const token = w.mark(prime.key);
  writeFileSync(join(other, 'shared'), 'written through the other name', { flag: 'r+' });
  const r = w.changesSince(prime.key, token);
  assert.equal(r.gap && r.reason, 'hard-linked', JSON.stringify(r));
});

test('a write through a shared writable mmap: nothing while it is mapped, FAN_CLOSE_WRITE when the mapping goes', async () => {
  const w = watcher();
  const { key, root } = tree(w);
  const file = join(root, 'mapped');
  const children: ChildProcess[] = [];
  writeFileSync(file, Buffer.alloc(4096));
  // A raw fanotify fd too, to see exactly which events the kernel queues for the file.
  const raw = native.fanotifyOpen();
  const mountFd = native.openat2(native.AT_FDCWD, store, { flags: native.O_RDONLY | native.O_DIRECTORY, resolve: 0 });
  try {
    native.fanotifyMarkFilesystem(raw, store);
    const token = w.mark(key);
    // Node has no mmap: python3 maps the file MAP_SHARED, closes the fd, writes through the mapping, msyncs,
    // then waits for a line before munmap and another before exiting.
    const script = [
      'import mmap, os, sys',
      'fd = os.open(sys.argv[1], os.O_RDWR)',
      'm = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)',
      'os.close(fd)',
      "m[0:5] = b'hello'",
      'm.flush()',
      "print('written', flush=True)",
      'sys.stdin.readline()',
      'm.close()',
      "print('unmapped', flush=True)",
      'sys.stdin.readline()',
    ].join('\n');
    const child = spawn('python3', ['-c', script, file], { stdio: ['pipe', 'pipe', 'inherit'], env: PATH_ENV });
    children.push(child);
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const rawFor = (): string[] =>
      native.fanotifyRead(raw)
        .events.filter((e) => e.dir !== undefined && e.dir.name === 'mapped' && native.resolveHandle(mountFd, e.dir) === root)
        .map((e) => `0x${e.mask.toString(16)}`);

    assert.equal((await lines.next()).value, 'written');
    assert.equal(readFileSync(file).subarray(0, 5).toString(), 'hello', 'the bytes are in the file');
    assert.deepEqual(rawFor(), [], 'no event at all while the mapping lives (the fd is already closed)');
    assert.deepEqual(paths(w.changesSince(key, token)), [], 'so the watcher cannot report it yet');

    child.stdin.write('\n');
    assert.equal((await lines.next()).value, 'unmapped');
    assert.deepEqual(rawFor(), [`0x${native.FAN_CLOSE_WRITE.toString(16)}`], 'exactly FAN_CLOSE_WRITE at munmap: no FAN_MODIFY, no FAN_ATTRIB');
    assert.deepEqual(paths(w.changesSince(key, token)), ['mapped']);
    child.stdin.end('\n');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  } finally {
    native.closeFd(raw);
    native.closeFd(mountFd);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  }
});

test('a sealed payload (a read-only bind mount of itself) is watched, and a write beneath its seal is reported; another directory bound in its place is refused', () => {
  const w = watcher();
  const root = join(store, 'generations', `sealed${++serial}`, 'payload');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'f'), 'one\n');
  native.bindMount(root, root, { readonly: true, recursive: false, nosuid: true, nodev: true });
  try {
    w.watch('sealed', root);
    const token = w.mark('sealed');
    const beneath = native.openDetachedTree(store);
    try {
      writeFileSync(join(`/proc/self/fd/${beneath}`, 'generations', root.split('/').at(-2)!, 'payload', 'f'), 'two\n');
    } finally {
      native.closeFd(beneath);
    }
    assert.deepEqual(paths(w.changesSince('sealed', token)), ['f']);
    assert.equal(readFileSync(join(root, 'f'), 'utf8'), 'two\n', 'the seal shows the very directory written beneath it');
  } finally {
    native.umount2(root, native.MNT_DETACH);
  }
  // Another directory bound at a tree's path: events inside it would be placed under its own path, never the tree's.
  const elsewhere = join(store, `bound-elsewhere${serial}`);
  const impostor = join(store, 'generations', `impostor${++serial}`, 'payload');
  mkdirSync(elsewhere, { recursive: true });
  mkdirSync(impostor, { recursive: true });
  native.bindMount(elsewhere, impostor, { readonly: true, recursive: false, nosuid: true, nodev: true });
  try {
    assert.throws(() => w.watch('impostor', impostor), /on another mount than the store/);
  } finally {
    native.umount2(impostor, native.MNT_DETACH);
  }
});
