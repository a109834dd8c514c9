// Worlds doing ordinary work on a real stack (kube-apiserver + etcd, controller, node-agent as root):
// the fork of a Root is private, the candidate is what the agent did, files keep their owners, the
// credential and HOME are what they should be, failures and deletion are recorded and cleaned up, and
// a Root that cannot be adopted is refused without touching the host path or the store.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { candidateDiff } from '../../node-agent/content/world-diff.js';
import { layoutOf } from '../../node-agent/store/store-layout.js';
import { startStack, type Stack } from '../support/stack.js';
import { kc } from '../support/wait.js';
import {
  applyRoot,
  describeRun,
  hashTree,
  mountsBelow,
  outputLogPath,
  ownedDir,
  ownedFile,
  processesInRange,
  rootKeyOf,
  runWorld,
  shWorld,
  storeSnapshot,
  worldCgroupExists,
  worldIdRange,
  worldManifest,
} from '../support/worlds.js';

const OWNER = 1000;
const OTHER = 1001;

describe('worlds on a real stack: ordinary behaviour', () => {
  let s: Stack;
  let projPath: string;
  let rootKey: string;

  before(async () => {
    s = await startStack({ nodeName: 'run-node' });
    projPath = join(s.scratch, 'proj');
    ownedDir(projPath);
    ownedFile(join(projPath, 'a.txt'), 'alpha\n');
    ownedFile(join(projPath, 'b.txt'), 'bravo\n');
    ownedDir(join(projPath, 'sub'));
    ownedFile(join(projPath, 'sub', 'c.txt'), 'charlie\n');
    ownedFile(join(projPath, 'sub', 'd.txt'), 'delta\n');
    ownedFile(join(projPath, 'other.txt'), 'owned by someone else\n', OTHER);
    const root = await applyRoot(s, 'proj', projPath);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    rootKey = rootKeyOf(projPath);
  });

  after(async () => {
    await s?.stop();
  });

  test('the fork is visible and writable inside while the host path and PRIME stay byte-identical; the candidate counts what the agent did', async () => {
    const prime = join(s.storeDir, 'live', rootKey);
    const hostBefore = hashTree(projPath);
    const primeBefore = hashTree(prime);
    const rootBefore = await s.get('root', 'proj');
    const r = await runWorld(
      s,
      'fork-write',
      shWorld(['proj'], [
        'set -e',
        'echo "pwd=$(pwd)"',
        'echo "a=$(cat a.txt)"',
        'echo more >> a.txt', // modified: a.txt
        'rm b.txt', // deleted: b.txt
        'rm -r sub', // deleted: sub, sub/c.txt, sub/d.txt
        'mkdir -p new/deep && echo n > new/deep/n.txt', // added: new, new/deep, new/deep/n.txt
        'echo t > top.txt', // added: top.txt
        'echo "after=$(cat a.txt | tr "\\n" " ")"',
      ].join('\n')),
    );
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, new RegExp(`^pwd=${projPath}$`, 'm'), 'the agent starts in the first Root, at its own path');
    assert.match(r.output, /^a=alpha$/m, 'the Root content is visible in the world');
    assert.match(r.output, /^after=alpha more $/m, 'the world sees its own write');
    assert.deepEqual(
      { added: r.status.candidate.added, modified: r.status.candidate.modified, deleted: r.status.candidate.deleted },
      { added: 4, modified: 1, deleted: 4 },
    );
    // Status lists what changed, path by path, so `kubectl describe world` shows it without the node.
    assert.deepEqual(r.status.candidate.changes, [
      { root: 'proj', path: 'a.txt', change: 'Modified', type: 'file', size: 11, previousSize: 6 },
      { root: 'proj', path: 'b.txt', change: 'Deleted', type: 'file', size: 6 },
      { root: 'proj', path: 'new', change: 'Added', type: 'dir' },
      { root: 'proj', path: 'new/deep', change: 'Added', type: 'dir' },
      { root: 'proj', path: 'new/deep/n.txt', change: 'Added', type: 'file', size: 2 },
      { root: 'proj', path: 'sub', change: 'Deleted', type: 'dir' },
      { root: 'proj', path: 'sub/c.txt', change: 'Deleted', type: 'file', size: 8 },
      { root: 'proj', path: 'sub/d.txt', change: 'Deleted', type: 'file', size: 6 },
      { root: 'proj', path: 'top.txt', change: 'Added', type: 'file', size: 2 },
    ]);
    assert.equal(r.status.candidate.changesTruncated, false);
    // The node-agent renders the same change as a diff from its store (what `kubectl worldline diff` will
    // read). The store's database is the agent's alone while it runs, so it is read between a stop and a start.
    const digest = r.status.candidate.digest as string;
    let names = '';
    let patch = '';
    let stat = '';
    await s.restartAgent({
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'), { readonly: true, fileMustExist: true });
        try {
          const store = { layout: layoutOf(s.storeDir), db };
          names = candidateDiff(store, digest, 'name-only').text;
          patch = candidateDiff(store, digest, 'patch').text;
          stat = candidateDiff(store, digest, 'stat').text;
        } finally {
          db.close();
        }
      },
    });
    assert.deepEqual(names.trim().split('\n'), r.status.candidate.changes.map((c: { root: string; path: string }) => `${c.root}/${c.path}`));
    assert.match(patch, /--- a\/proj\/a\.txt\n\+\+\+ b\/proj\/a\.txt\n@@ -1 \+1,2 @@\n alpha\n\+more\n/);
    assert.match(patch, /deleted file mode 100644\n--- a\/proj\/sub\/c\.txt\n\+\+\+ \/dev\/null\n@@ -1 \+0,0 @@\n-charlie\n/);
    assert.match(patch, /diff --worldline a\/proj\/new b\/proj\/new\nnew directory mode 040[0-7]{3}\n/);
    assert.match(stat, / 9 paths changed, 3 insertions\(\+\), 3 deletions\(-\)\n$/);

    // The host path (read through its link) and PRIME are exactly as before, metadata included.
    assert.equal(readlinkSync(projPath), join(s.storeDir, 'live', `${rootKey}_view`), "the host path still routes through live/ (the owner's view)");
    assert.equal(hashTree(projPath), hostBefore, 'the host path changed');
    assert.equal(hashTree(prime), primeBefore, 'PRIME changed');
    assert.equal(readFileSync(join(projPath, 'a.txt'), 'utf8'), 'alpha\n');
    assert.ok(existsSync(join(projPath, 'b.txt')) && existsSync(join(projPath, 'sub', 'c.txt')));
    const rootAfter = await s.get('root', 'proj');
    assert.equal(rootAfter?.status?.generation, rootBefore?.status?.generation);
    assert.equal(rootAfter?.status?.digest, rootBefore?.status?.digest);

    // The candidate holds exactly the new bytes, in store-owned storage.
    const cand = join(s.storeDir, 'candidates', r.status.candidate.digest.slice('sha256:'.length), 'roots', rootKey);
    assert.equal(readFileSync(join(cand, 'a.txt'), 'utf8'), 'alpha\nmore\n');
    assert.equal(readFileSync(join(cand, 'new', 'deep', 'n.txt'), 'utf8'), 'n\n');
    assert.equal(readFileSync(join(cand, 'top.txt'), 'utf8'), 't\n');
    assert.ok(!existsSync(join(cand, 'sub')) && !existsSync(join(cand, 'b.txt')) && !existsSync(join(cand, 'other.txt')), 'only changed paths are copied');
    // The candidate stores the delta only, never the next manifest.
    assert.ok(!existsSync(`${cand}.manifest.json`), 'the candidate stores a full next manifest');
    const delta = JSON.parse(readFileSync(`${cand}.delta.json`, 'utf8')) as { upsert: { path: string }[]; deleted: string[] };
    assert.deepEqual(delta.deleted, ['b.txt', 'sub', 'sub/c.txt', 'sub/d.txt']);
    assert.deepEqual(delta.upsert.map((e) => e.path), ['a.txt', 'new', 'new/deep', 'new/deep/n.txt', 'top.txt']);
  });

  test('files show their real owners inside; the agent runs as the first Root\'s owner; upper and candidate owners translate back', async () => {
    await s.apply(worldManifest('owners', shWorld(['proj'], [
      'stat -c "STAT %u:%g %n" . a.txt other.txt sub/c.txt',
      'echo "ID $(id -u):$(id -g)"',
      'echo mine > mine.txt',
      'stat -c "STAT %u:%g %n" mine.txt',
      '(echo y >> other.txt) 2>/dev/null && echo OTHER-WRITTEN || echo OTHER-DENIED',
      'sleep 3',
    ].join('\n'))));
    // While it runs: the file it wrote sits in the upper layer owned by the world's host id, never the real 1000.
    const running = await s.waitWorld('owners', ['Running']);
    const range = worldIdRange(running.status);
    assert.ok(range.base >= 65536, `the world's ids start at host id ${range.base}, overlapping real users`);
    const upperFile = join(s.storeDir, 'worlds', running.metadata.uid, 'layers', rootKey, 'upper', 'mine.txt');
    const st = await s.waitFor('mine.txt in the upper layer', async () => (existsSync(upperFile) ? lstatSync(upperFile) : undefined), 10_000);
    assert.equal(st.uid, range.base + OWNER, 'upper-layer file is not owned by the world\'s host id for 1000');
    assert.equal(st.gid, range.base + OWNER);

    const w = await s.waitWorld('owners', ['Captured', 'Failed']);
    const out = readFileSync(outputLogPath(s, w.metadata.uid), 'utf8');
    assert.equal(w.status.phase, 'Captured', out);
    assert.match(out, new RegExp(`^STAT ${OWNER}:${OWNER} \\.$`, 'm'));
    assert.match(out, new RegExp(`^STAT ${OWNER}:${OWNER} a\\.txt$`, 'm'));
    assert.match(out, new RegExp(`^STAT ${OTHER}:${OTHER} other\\.txt$`, 'm'));
    assert.match(out, new RegExp(`^STAT ${OWNER}:${OWNER} sub/c\\.txt$`, 'm'));
    assert.match(out, new RegExp(`^ID ${OWNER}:${OWNER}$`, 'm'), 'the agent does not run as the Root owner by default');
    assert.match(out, new RegExp(`^STAT ${OWNER}:${OWNER} mine\\.txt$`, 'm'));
    assert.match(out, /^OTHER-DENIED$/m, 'a file of another owner (mode 0644) was writable: ownership is not real inside');
    assert.equal(w.status.isolation.observation.uid.effective, OWNER);

    const cand = join(s.storeDir, 'candidates', w.status.candidate.digest.slice('sha256:'.length), 'roots', rootKey);
    const cst = lstatSync(join(cand, 'mine.txt'));
    assert.deepEqual([cst.uid, cst.gid], [OWNER, OWNER], 'the candidate file is not owned by the translated uid');
    const delta = JSON.parse(readFileSync(`${cand}.delta.json`, 'utf8')) as { upsert: { path: string; uid: number; gid: number }[] };
    const entry = delta.upsert.find((e) => e.path === 'mine.txt');
    assert.ok(entry, 'mine.txt is not in the candidate delta');
    assert.deepEqual([entry.uid, entry.gid], [OWNER, OWNER], 'the manifest records the host-range owner, not the translated one');
    assert.equal(w.status.candidate.added, 1);
    assert.equal(w.status.candidate.modified, 0);
  });

  test('runAsUser overrides the owner: the agent then acts with that uid\'s rights', async () => {
    const r = await runWorld(s, 'run-as-other', shWorld(['proj'], 'echo "ID $(id -u)"; echo more >> other.txt && echo OTHER-WRITTEN; (echo x >> a.txt) 2>/dev/null || echo A-DENIED', { agent: { runAsUser: OTHER } }));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, new RegExp(`^ID ${OTHER}$`, 'm'));
    assert.match(r.output, /^OTHER-WRITTEN$/m);
    assert.match(r.output, /^A-DENIED$/m);
    assert.equal(r.status.candidate.modified, 1);
  });

  test('a credential from a Secret is readable at credentials.path and read-only; it is not captured', async () => {
    const value = `tok-${randomBytes(12).toString('hex')}`;
    await kc(s.cp, ['create', 'secret', 'generic', 'agent-cred', '-n', 'default', `--from-literal=token=${value}`]);
    const path = '/run/worldline/token';
    const r = await runWorld(s, 'cred', shWorld(['proj'], [
      `echo "VALUE=$(cat ${path})"`,
      `stat -c "MODE %a %u:%g" ${path}`,
      `(echo overwrite > ${path}) 2>/dev/null && echo WRITE-OK || echo WRITE-DENIED`,
      `(chmod 600 ${path}) 2>/dev/null && echo CHMOD-OK || echo CHMOD-DENIED`,
      `rm -f ${path} 2>/dev/null; [ -e ${path} ] && echo RM-DENIED || echo RM-OK`,
      `(echo x > /run/worldline/other) 2>/dev/null && echo NEIGHBOUR-OK || echo NEIGHBOUR-DENIED`,
      `echo "AGAIN=$(cat ${path})"`,
    ].join('\n'), { agent: { credentials: { secretName: 'agent-cred', key: 'token', path } } }));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, new RegExp(`^VALUE=${value}$`, 'm'), 'the credential is not readable at its path');
    assert.match(r.output, new RegExp(`^MODE 400 ${OWNER}:${OWNER}$`, 'm'));
    for (const denied of ['WRITE-DENIED', 'CHMOD-DENIED', 'RM-DENIED', 'NEIGHBOUR-DENIED']) assert.match(r.output, new RegExp(`^${denied}$`, 'm'), `${denied} missing:\n${r.output}`);
    assert.match(r.output, new RegExp(`^AGAIN=${value}$`, 'm'));
    assert.deepEqual([r.status.candidate.added, r.status.candidate.modified, r.status.candidate.deleted], [0, 0, 0]);
    // The node-agent tears the world down right after its final status: the credential's host copy goes with it.
    await s.waitFor('the world directory (holding the credential copy) removed', async () => !existsSync(join(s.storeDir, 'worlds', r.uid)), 10_000);
  });

  test('a missing Secret refuses the World (CREDENTIALS_UNAVAILABLE); a credential path inside a Root refuses it (CREDENTIALS_PATH_CONFLICT)', async () => {
    const missing = await runWorld(s, 'cred-missing', shWorld(['proj'], 'echo ran', { agent: { credentials: { secretName: 'no-such-secret', key: 'token', path: '/run/worldline/token' } } }));
    assert.equal(missing.status.phase, 'Refused');
    assert.equal(missing.status.reason, 'CREDENTIALS_UNAVAILABLE');
    assert.doesNotMatch(missing.output, /ran/);
    const inside = await runWorld(s, 'cred-in-root', shWorld(['proj'], 'echo ran', { agent: { credentials: { secretName: 'agent-cred', key: 'token', path: `${projPath}/token` } } }));
    assert.equal(inside.status.phase, 'Refused');
    assert.equal(inside.status.reason, 'CREDENTIALS_PATH_CONFLICT');
  });

  test('HOME is an empty, private, writable directory; nothing of the host\'s home directories is there', async () => {
    const r = await runWorld(s, 'home', shWorld(['proj'], [
      'echo "HOME=$HOME"',
      'echo "ENTRIES=$(ls -A "$HOME" | wc -l)"',
      'stat -c "HOMEMODE %a %u" "$HOME"',
      'echo hi > "$HOME/scratch" && echo HOME-WRITABLE',
      'ls /root >/dev/null 2>&1 && echo ROOT-HOME-VISIBLE || echo ROOT-HOME-ABSENT',
      'ls -A /home',
    ].join('\n')));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, /^HOME=\/home\/agent$/m);
    assert.match(r.output, /^ENTRIES=0$/m, 'HOME is not empty');
    assert.match(r.output, new RegExp(`^HOMEMODE 700 ${OWNER}$`, 'm'));
    assert.match(r.output, /^HOME-WRITABLE$/m);
    assert.match(r.output, /^ROOT-HOME-ABSENT$/m);
    assert.match(r.output, /^agent$/m);
    assert.deepEqual([r.status.candidate.added, r.status.candidate.modified, r.status.candidate.deleted], [0, 0, 0], 'a HOME write was captured as a Root change');
  });

  test('a nonzero exit ends in Failed with exit.code (its changes still captured)', async () => {
    const r = await runWorld(s, 'exit-3', shWorld(['proj'], 'echo partial > partial.txt; echo bye; exit 3'));
    assert.equal(r.status.phase, 'Failed', describeRun(r));
    assert.equal(r.status.reason, 'AGENT_EXIT_NONZERO');
    assert.equal(r.status.exit.code, 3);
    assert.equal(r.status.exit.reason, 'Completed');
    assert.equal(r.status.candidate.added, 1);
    assert.match(r.output, /^bye$/m);
  });

  test('deleting a finished World removes its output log and world directory and releases the finalizer', async () => {
    const r = await runWorld(s, 'to-delete', shWorld(['proj'], 'echo something-to-keep'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.ok(existsSync(outputLogPath(s, r.uid)), 'the output log is not kept after the run');
    assert.ok((r.world.metadata.finalizers ?? []).length > 0, 'a bound World carries the node-cleanup finalizer');
    await kc(s.cp, ['delete', 'world', 'to-delete', '-n', 'default', '--wait=false']);
    await s.waitFor('World to-delete gone', async () => (await s.get('world', 'to-delete', 'default')) === undefined, 30_000);
    assert.ok(!existsSync(outputLogPath(s, r.uid)), 'the output log outlived the World');
    assert.ok(!existsSync(join(s.storeDir, 'worlds', r.uid)), 'the world directory outlived the World');
    assert.ok(!worldCgroupExists(r.uid), 'the world cgroup outlived the World');
  });

  test('deleting a running World kills it, unmounts and removes everything it had, then the object goes', async () => {
    await s.apply(worldManifest('delete-running', shWorld(['proj'], 'echo started; sleep 300')));
    const w = await s.waitWorld('delete-running', ['Running']);
    const uid = w.metadata.uid as string;
    const range = worldIdRange(w.status);
    const worldDir = join(s.storeDir, 'worlds', uid);
    await s.waitFor('the world\'s sleep on the host', async () => processesInRange(range).some((p) => p.cmdline.join(' ') === 'sleep 300'), 10_000);
    assert.ok(mountsBelow(worldDir).length > 0, 'a running world has its mounts');
    await kc(s.cp, ['delete', 'world', 'delete-running', '-n', 'default', '--wait=false']);
    await s.waitFor('World delete-running gone', async () => (await s.get('world', 'delete-running', 'default')) === undefined, 30_000);
    assert.deepEqual(processesInRange(range).map((p) => `${p.pid} ${p.cmdline.join(' ')}`), [], 'processes of the deleted world survive on the host');
    assert.deepEqual(mountsBelow(worldDir), [], 'mounts of the deleted world remain');
    assert.ok(!existsSync(worldDir), 'the world directory remains');
    assert.ok(!existsSync(outputLogPath(s, uid)), 'the output log remains');
    assert.ok(!worldCgroupExists(uid), 'the world cgroup remains');
  });

  describe('a Root that cannot be adopted is Broken by name; the host path and the store are unchanged', () => {
    test('a path that does not exist: ROOT_PATH_MISSING', async () => {
      const path = join(s.scratch, 'does-not-exist');
      const store = storeSnapshot(s.storeDir);
      const root = await applyRoot(s, 'bad-missing', path);
      assert.equal(root.status.phase, 'Broken');
      assert.equal(root.status.reason, 'ROOT_PATH_MISSING');
      assert.ok(!existsSync(path), 'something was created at the missing path');
      assert.deepEqual(storeSnapshot(s.storeDir), store);
    });

    test('a path that is a file: ROOT_PATH_NOT_DIRECTORY', async () => {
      const path = join(s.scratch, 'a-file');
      ownedFile(path, 'just a file\n');
      const before = hashTree(path);
      const store = storeSnapshot(s.storeDir);
      const root = await applyRoot(s, 'bad-file', path);
      assert.equal(root.status.phase, 'Broken');
      assert.equal(root.status.reason, 'ROOT_PATH_NOT_DIRECTORY');
      assert.ok(lstatSync(path).isFile(), 'the file was replaced');
      assert.equal(hashTree(path), before);
      assert.deepEqual(storeSnapshot(s.storeDir), store);
    });

    test('a directory holding an escaping symlink: EXTERNAL_SYMLINK', async () => {
      const path = join(s.scratch, 'with-escape');
      ownedDir(path);
      ownedFile(join(path, 'ok.txt'), 'fine\n');
      symlinkSync('/etc/passwd', join(path, 'passwd-link'));
      const before = hashTree(path);
      const store = storeSnapshot(s.storeDir);
      const root = await applyRoot(s, 'bad-symlink', path);
      assert.equal(root.status.phase, 'Broken');
      assert.equal(root.status.reason, 'EXTERNAL_SYMLINK');
      assert.match(root.status.message, /passwd-link/);
      assert.ok(lstatSync(path).isDirectory(), 'the host directory was replaced (by a link?)');
      assert.equal(hashTree(path), before);
      assert.deepEqual(storeSnapshot(s.storeDir), store);
    });
  });
});
