// The private evaluator's frozen input on the real kernel: a candidate tree copied into ordinary
// directories and singly linked regular files owned by one principal, its source measured exactly as the
// store measures a tree, every disposable copy checked to be the frozen identity; and each kind of entry
// the frozen tree does not accept refused by name, the path in the message.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, linkSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { manifestDigest } from '../../core/manifest.js';
import { mountTmpfs } from '../../native/index.js';
import { BoundaryFailed } from '../../node-agent/private-evaluator/check-principals.js';
import { copyFrozen, freezeTree, identityOf, InputRefused } from '../../node-agent/private-evaluator/freeze-tree.js';
import { overlayFrozen } from '../../node-agent/private-evaluator/session-view.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the private evaluator frozen input');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('freeze');
const HOST = 3_300_000;
let n = 0;

/** A small candidate tree: nested directories, files of several modes and owners. */
function candidate(): string {
  const src = join(base, `src-${++n}`);
  mkdirSync(join(src, 'pkg', 'deep'), { recursive: true });
  writeFileSync(join(src, 'README'), 'hello\n');
  writeFileSync(join(src, 'pkg', 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  writeFileSync(join(src, 'pkg', 'deep', 'secret'), 'x'.repeat(3 * 1024 * 1024), { mode: 0o600 });
  writeFileSync(join(src, 'empty'), '');
  execFileSync('chown', ['-R', '1000:1000', join(src, 'pkg')]);
  chmodSync(join(src, 'pkg', 'deep'), 0o750);
  return src;
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof InputRefused) {
      assert.equal(err.code, 'PRIVATE_INPUT_REFUSED');
      return err.message;
    }
    throw err;
  }
  return 'not refused';
}

test('the frozen tree holds the candidate\'s bytes and modes, owned by one principal; its source is measured as the store measures it', () => {
  const src = candidate();
  const frozen = freezeTree(src, join(base, 'frozen-1'), HOST);
  const walked = walkTreeSync(src);
  assert.deepEqual(walked.problems, []);
  assert.equal(frozen.sourceDigest, manifestDigest(walked.manifest), 'the source digest is the store\'s manifest digest of the same tree');
  assert.deepEqual(frozen.source, walked.manifest);
  const copy = walkTreeSync(frozen.dir);
  assert.deepEqual(copy.problems, []);
  assert.equal(identityOf(copy.manifest), frozen.identity, 'the frozen tree re-measures to its identity');
  for (const e of copy.manifest.entries) assert.deepEqual([e.uid, e.gid], [HOST, HOST], e.path);
  assert.equal(statSync(join(frozen.dir, 'pkg', 'run.sh')).mode & 0o777, 0o755);
  assert.equal(statSync(join(frozen.dir, 'pkg', 'deep')).mode & 0o777, 0o750);
  assert.equal(readFileSync(join(frozen.dir, 'pkg', 'deep', 'secret'), 'utf8').length, 3 * 1024 * 1024);
  // A disposable copy for another principal: its own owner, the same identity.
  const worker = copyFrozen(frozen, join(base, 'worker-1'), HOST + 1);
  const workerWalk = walkTreeSync(worker);
  assert.equal(identityOf(workerWalk.manifest), frozen.identity);
  assert.ok(workerWalk.manifest.entries.every((e) => e.uid === HOST + 1 && e.gid === HOST + 1));
  // A frozen tree changed after freezing makes every later copy refuse.
  appendFileSync(join(frozen.dir, 'README'), 'tampered');
  assert.throws(() => copyFrozen(frozen, join(base, 'worker-2'), HOST + 1), (err: unknown) => err instanceof BoundaryFailed && err.code === 'PRIVATE_EVALUATOR_BOUNDARY_FAILED');
});

test("a candidate session's view is the frozen tree, its own: owned by the session, written only in its own layer", () => {
  const frozen = freezeTree(candidate(), join(base, 'frozen-view'), HOST);
  const views = [1, 2].map((k) => {
    const merged = overlayFrozen(frozen, join(base, `view-${k}`), join(base, `view-${k}-layers`), HOST + 2);
    cleanup.mounted(join(base, `view-${k}-layers`, 'lower'));
    cleanup.mounted(merged);
    return merged;
  });
  const [one, two] = views as [string, string];
  // Fresh, each re-measures to the frozen identity, every entry the session's.
  for (const v of views) {
    const walked = walkTreeSync(v);
    assert.deepEqual(walked.problems, []);
    assert.equal(identityOf(walked.manifest), frozen.identity, v);
    assert.ok(walked.manifest.entries.every((e) => e.uid === HOST + 2 && e.gid === HOST + 2), v);
    assert.equal(statSync(v).uid, HOST + 2);
  }
  // The session writes: an edit, a new file, a removal, a mode change.
  appendFileSync(join(one, 'README'), 'edited');
  writeFileSync(join(one, 'pkg', 'new'), 'n');
  rmSync(join(one, 'empty'));
  chmodSync(join(one, 'pkg', 'run.sh'), 0o700);
  assert.notEqual(identityOf(walkTreeSync(one).manifest), frozen.identity, 'the writes are in the view');
  // Neither the frozen tree nor the other session's view sees any of it.
  assert.equal(identityOf(walkTreeSync(frozen.dir).manifest), frozen.identity, 'the frozen tree is unchanged');
  assert.equal(identityOf(walkTreeSync(two).manifest), frozen.identity, "the other session's view is unchanged");
  assert.equal(readFileSync(join(frozen.dir, 'README'), 'utf8'), 'hello\n');
});

test('links, special files, second links, special bits, xattrs, mounts and bad names are refused by name', () => {
  const cases: [string, (src: string) => void, RegExp][] = [
    ['symlink', (s) => symlinkSync('README', join(s, 'link')), /link: is a symbolic link/],
    ['fifo', (s) => execFileSync('mkfifo', [join(s, 'pkg', 'pipe')]), /pkg\/pipe: is a special file/],
    ['hard link', (s) => linkSync(join(s, 'README'), join(s, 'pkg', 'again')), /README: has 2 links/],
    ['setuid', (s) => chmodSync(join(s, 'pkg', 'run.sh'), 0o4755), /pkg\/run.sh: has setuid, setgid or sticky bits \(mode 4755\)/],
    ['sticky dir', (s) => chmodSync(join(s, 'pkg'), 0o1777), /pkg: has setuid, setgid or sticky bits/],
    ['xattr', (s) => execFileSync('python3', ['-c', 'import os,sys; os.setxattr(sys.argv[1], "user.note", b"x")', join(s, 'empty')]), /empty: has extended attributes \(user.note\)/],
    ['mount', (s) => {
      mkdirSync(join(s, 'mnt'));
      mountTmpfs(join(s, 'mnt'), { size: '1m', nosuid: true, nodev: true, noexec: true });
      cleanup.mounted(join(s, 'mnt'));
    }, /mnt: is on another mount/],
    ['name', (s) => writeFileSync(Buffer.concat([Buffer.from(join(s, 'bad-')), Buffer.from([0xff])]), ''), /bad-\uFFFD: its name is not valid UTF-8/],
  ];
  for (const [what, make, want] of cases) {
    const src = candidate();
    make(src);
    const message = refusal(() => freezeTree(src, join(base, `frozen-${what.replace(' ', '-')}`), HOST));
    assert.match(message, want, what);
    assert.match(message, /^the candidate's input cannot be frozen: /, what);
  }
});

test('an entry changed while it is copied is refused, whatever the change', () => {
  const changes: [string, (src: string, rel: string) => void][] = [
    ['appended', (s, rel) => appendFileSync(join(s, rel), 'more')],
    ['replaced by a link', (s, rel) => {
      renameSync(join(s, rel), join(s, `${rel}.old`));
      symlinkSync('/etc/passwd', join(s, rel));
    }],
  ];
  for (const [what, change] of changes) {
    const src = candidate();
    const message = refusal(() => freezeTree(src, join(base, `frozen-changed-${what.replace(/ /g, '-')}`), HOST, { afterLstat: (rel) => rel === 'README' && change(src, rel) }));
    assert.match(message, /README: changed while it was copied/, what);
  }
  assert.ok(lstatSync(join(base, 'frozen-1')).isDirectory());
});
