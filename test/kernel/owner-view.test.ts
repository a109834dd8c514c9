// Owners keep their Root (node-agent/store/owner-view.ts, collapses/owner-edits.ts): after adoption the
// directory's non-root owner reads and edits it through its host path; what they write lands in their
// view's upper layer, never in PRIME or an older generation, and is published as PRIME's next generation
// with their owners and modes. A candidate from before such an edit is refused PRIME_MOVED; a collapse
// replaces the view in its own exchange, refused while the owner has edits not yet published or a file
// open for writing; the replaced view is read-only. Views survive a restart; a release gives back what
// the owner sees.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants as fsc, existsSync, lstatSync, openSync, readlinkSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { MNT_DETACH, umount2 } from '../../native/index.js';
import { manifestDigest } from '../../core/manifest.js';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { isCollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { OwnerEditSync, publishOwnerEdits } from '../../node-agent/collapses/owner-edits.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { currentViewId, mountView, viewPaths, viewWatchKey } from '../../node-agent/store/owner-view.js';
import { storeSettled } from '../../node-agent/store/store-serial.js';
import { unpublishedEdits } from '../../node-agent/store/view-measure.js';
import { releaseRoot } from '../../node-agent/store/release-root.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { liveLinkPath, payloadDir, viewLinkPath } from '../../node-agent/store/store-layout.js';
import { getGeneration, getRoot } from '../../node-agent/store/store-records.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { makeCandidate } from './collapse-fixtures.js';
import { openTestStore, scratch } from './store-fixtures.js';

const OWNER = 1000;
const walkDigest = (path: string): string => manifestDigest(walkTreeSync(path).manifest);

/** Runs a small fs program as the owner (uid and gid 1000, no supplementary groups): its exit status and stderr. */
function asOwner(program: string, ...args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, ['--input-type=commonjs', '-e', `const fs = require('node:fs'); const a = process.argv.slice(1); ${program}`, ...args], { uid: OWNER, gid: OWNER, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}
const ownerWrites = (path: string, text: string): void => assert.equal(asOwner('fs.writeFileSync(a[0], a[1]);', path, text).status, 0, `the owner writes ${path}`);

/** A Root owned by the owner (a 0750 top, a 0640 file, a subdirectory) adopted as "repo"; its host path. */
async function adoptOwned(t: TestContext): Promise<{ store: Store; host: string; dir: string }> {
  const s = await scratch(t);
  await chmod(s.dir, 0o755); // the owner reaches their directory, as from their home
  const host = join(s.dir, 'repo');
  await mkdir(join(host, 'src'), { recursive: true });
  await writeFile(join(host, 'README.md'), 'hello\n');
  await writeFile(join(host, 'src/main.c'), 'int main(void) { return 0; }\n');
  await writeFile(join(host, 'notes.txt'), 'mine\n');
  for (const p of ['', 'README.md', 'src', 'src/main.c', 'notes.txt']) await chown(join(host, p), OWNER, OWNER);
  await chmod(host, 0o750);
  await chmod(join(host, 'notes.txt'), 0o640);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptRoot(store, { name: 'repo', hostPath: host });
  return { store, host, dir: s.dir };
}

test('the owner reads and edits their adopted Root through its host path; each edit becomes the next generation, with their owner and mode', async (t) => {
  const { store, host } = await adoptOwned(t);
  const first = getRoot(store.db, 'repo')!;
  const gen1 = getGeneration(store.db, first.rootKey, 1)!;
  assert.equal(readlinkSync(host), viewLinkPath(store.layout, first.rootKey), 'the host path links to the view');
  assert.equal(asOwner('process.stdout.write(fs.readFileSync(a[0], "utf8"));', join(host, 'notes.txt')).stdout, 'mine\n', 'the owner reads their file');

  ownerWrites(join(host, 'README.md'), 'hello, edited\n');
  ownerWrites(join(host, 'src/new.h'), '#pragma once\n');
  assert.equal(asOwner('fs.rmSync(a[0]);', join(host, 'notes.txt')).status, 0);
  // Nothing of it is in PRIME or its generation until it is published.
  const route = await checkRouting(store, 'repo');
  assert.equal(await readFile(join(route.payloadPath, 'README.md'), 'utf8'), 'hello\n');
  assert.equal(walkDigest(route.payloadPath), gen1.digest);

  const published = await publishOwnerEdits(store, 'repo');
  assert.deepEqual({ generation: published.generation, added: published.added, modified: published.modified, deleted: published.deleted }, { generation: 2, added: 1, modified: 1, deleted: 1 });
  const after = await checkRouting(store, 'repo');
  assert.equal(after.viewId, route.viewId, "publishing keeps the owner's view");
  assert.equal(await readFile(join(after.payloadPath, 'README.md'), 'utf8'), 'hello, edited\n');
  const made = lstatSync(join(after.payloadPath, 'src/new.h'));
  assert.deepEqual([made.uid, made.gid], [OWNER, OWNER], 'a file the owner made is theirs in PRIME');
  assert.equal(walkDigest(after.payloadPath), getRoot(store.db, 'repo')!.digest, 'PRIME walks to the recorded digest');
  assert.equal(walkDigest(after.payloadPath), walkDigest(host), 'PRIME holds exactly what the owner sees');
  assert.equal(walkDigest(payloadDir(store.layout, gen1.id)), gen1.digest, 'the adopted generation keeps its bytes');

  // A second edit publishes only what changed since the first; the mode and the top's mode are kept.
  assert.equal(asOwner('fs.chmodSync(a[0], 0o600); fs.mkdirSync(a[1]); fs.writeFileSync(a[2], "x");', join(host, 'README.md'), join(host, 'docs'), join(host, 'docs/a.md')).status, 0);
  const second = await publishOwnerEdits(store, 'repo');
  assert.deepEqual({ generation: second.generation, added: second.added, modified: second.modified, deleted: second.deleted }, { generation: 3, added: 2, modified: 1, deleted: 0 });
  const third = await checkRouting(store, 'repo');
  assert.equal(lstatSync(join(third.payloadPath, 'README.md')).mode & 0o7777, 0o600);
  assert.equal(lstatSync(third.payloadPath).mode & 0o7777, 0o750, "the Root's top keeps its mode");
  assert.equal(walkDigest(third.payloadPath), walkDigest(host));
  assert.equal((await publishOwnerEdits(store, 'repo')).generation, undefined, 'nothing more to publish');
});

test("a candidate from before an owner's edit is refused PRIME_MOVED, and so is a collapse while an edit is not yet published", async (t) => {
  const { store, host } = await adoptOwned(t);
  const before = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'from an agent\n'));
  ownerWrites(join(host, 'README.md'), 'owner first\n');

  // Not yet published: the collapse finds it at its boundary and is refused; PRIME and the view are as they were.
  await assert.rejects(collapseRoot(store, { rootName: 'repo', candidateDir: before.candidate.dir, base: before.base }), (e: unknown) => {
    assert.ok(isCollapseError(e, 'PRIME_MOVED'), String(e));
    assert.match((e as Error).message, /not yet published/);
    return true;
  });
  assert.equal(getRoot(store.db, 'repo')!.generation, 1);
  ownerWrites(join(host, 'README.md'), 'owner, still writable\n');

  await publishOwnerEdits(store, 'repo');
  await assert.rejects(collapseRoot(store, { rootName: 'repo', candidateDir: before.candidate.dir, base: before.base }), (e: unknown) => isCollapseError(e, 'PRIME_MOVED'));
  assert.equal(await readFile(join(host, 'README.md'), 'utf8'), 'owner, still writable\n');
});

test('a collapse replaces the view in its exchange; refused while the owner holds a file open for writing; the replaced view is read-only', async (t) => {
  const { store, host } = await adoptOwned(t);
  const old = (await checkRouting(store, 'repo')).viewId;
  const made = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'from an agent\n'));

  const open = openSync(join(host, 'README.md'), 'r+');
  try {
    await assert.rejects(collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base }), (e: unknown) => {
      assert.ok(isCollapseError(e, 'PRIME_MOVED'), String(e));
      assert.match((e as Error).message, /open for writing/);
      return true;
    });
  } finally {
    closeSync(open);
  }
  const inside = openSync(viewPaths(store.layout, old).merged, fsc.O_RDONLY | fsc.O_DIRECTORY); // a shell's working directory
  t.after(() => closeSync(inside));
  const done = await collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base });
  const now = await checkRouting(store, 'repo');
  assert.notEqual(now.viewId, old, 'a new view, of the new generation');
  assert.equal(currentViewId(store.layout, now.root.rootKey), now.viewId);
  assert.equal(walkDigest(host), done.digest, 'the host path shows the new generation');
  assert.equal(await readFile(join(host, 'agent.txt'), 'utf8'), 'from an agent\n');
  // The old view, reached from inside: the generation it showed, read-only.
  assert.equal(readFileSync(`/proc/self/fd/${inside}/README.md`, 'utf8'), 'hello\n');
  assert.throws(() => readFileSync(`/proc/self/fd/${inside}/agent.txt`), { code: 'ENOENT' });
  await assert.rejects(writeFile(`/proc/self/fd/${inside}/late.txt`, 'late\n'), { code: 'EROFS' });
  ownerWrites(join(host, 'after.txt'), 'in the new view\n');
  assert.equal((await publishOwnerEdits(store, 'repo')).generation, 3);
});

test("an edit that cannot be published is named, refuses collapses, and publishes once it is undone", async (t) => {
  const { store, host } = await adoptOwned(t);
  assert.equal(asOwner('fs.symlinkSync("/etc/passwd", a[0]);', join(host, 'escape')).status, 0);
  await assert.rejects(publishOwnerEdits(store, 'repo'), (e: unknown) => {
    assert.equal((e as { code?: string }).code, 'OWNER_EDIT_UNPUBLISHABLE');
    assert.match((e as Error).message, /escape.*EXTERNAL_SYMLINK/);
    return true;
  });
  const made = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'x\n'));
  await assert.rejects(collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base }), (e: unknown) => isCollapseError(e, 'PRIME_MOVED') && /EXTERNAL_SYMLINK/.test((e as Error).message));
  assert.equal(asOwner('fs.unlinkSync(a[0]);', join(host, 'escape')).status, 0);
  assert.equal((await publishOwnerEdits(store, 'repo')).generation, undefined);
  assert.equal((await collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base })).toGeneration, 2);
});

test('the store is traversable to the views only: the owner cannot list it or read its records, and others cannot enter the view', async (t) => {
  const { store, host } = await adoptOwned(t);
  for (const p of [store.dir, store.layout.live, store.layout.views]) assert.equal(statSync(p).mode & 0o777, 0o711, p);
  assert.notEqual(asOwner('fs.readdirSync(a[0]);', store.dir).status, 0, 'the store cannot be listed');
  for (const p of [store.layout.database, store.layout.generations, store.layout.staging]) {
    assert.equal(statSync(p).mode & 0o077, 0, `${p} is root's alone`);
    assert.notEqual(asOwner('fs.statSync(a[0]); fs.readdirSync(a[0]);', p).status, 0, `the owner cannot reach ${p}`);
  }
  const route = await checkRouting(store, 'repo');
  assert.notEqual(asOwner('fs.readFileSync(a[0]);', join(route.payloadPath, 'README.md')).status, 0, 'PRIME itself is not reachable');
  // A user outside the Root's group is kept out of the view, even when the Root's top lets others read.
  assert.equal(asOwner('fs.chmodSync(a[0], 0o755);', host).status, 0);
  const other = spawnSync(process.execPath, ['-e', 'require("node:fs").readFileSync(process.argv[1])', join(host, 'README.md')], { uid: 2000, gid: 2000, encoding: 'utf8' });
  assert.match(other.stderr, /EACCES/, 'uid 2000 cannot pass through views/<id>');
  assert.notEqual(asOwner('fs.readdirSync(a[0]);', viewPaths(store.layout, route.viewId).upper).status, 0, 'nor the upper layer beneath the view');
});

test('a restarted node mounts the view again with what the owner wrote, and a host path linked the older way is relinked', async (t) => {
  const { store, host, dir } = await adoptOwned(t);
  ownerWrites(join(host, 'README.md'), 'written before the restart\n');
  const rootKey = getRoot(store.db, 'repo')!.rootKey;
  store.close();
  for (const m of mountsUnder(join(dir, 'store'))) umount2(m, MNT_DETACH); // the node restarted
  // An agent before views linked the host path to live/<root key>.
  const { unlink } = await import('node:fs/promises');
  await unlink(host);
  await symlink(liveLinkPath(store.layout, rootKey), host);

  const { store: again } = await openStore({ dir: join(dir, 'store') });
  t.after(() => again.close());
  assert.equal(readlinkSync(host), viewLinkPath(again.layout, rootKey));
  assert.equal(await readFile(join(host, 'README.md'), 'utf8'), 'written before the restart\n');
  assert.equal((await publishOwnerEdits(again, 'repo')).generation, 2);
});

test('a release gives back what the owner sees, an edit not yet published included, with their owners', async (t) => {
  const { store, host } = await adoptOwned(t);
  ownerWrites(join(host, 'late.txt'), 'never published\n');
  await releaseRoot(store, 'repo');
  assert.ok(lstatSync(host).isDirectory());
  assert.equal(await readFile(join(host, 'late.txt'), 'utf8'), 'never published\n');
  assert.deepEqual([lstatSync(join(host, 'late.txt')).uid, lstatSync(host).mode & 0o7777], [OWNER, 0o750]);
  assert.deepEqual(mountsUnder(store.layout.views), [], 'no view is mounted any more');
});

test('with the PRIME watcher, an owner edit is observed and published in the background', async (t) => {
  const s = await scratch(t);
  await chmod(s.dir, 0o755);
  const host = join(s.dir, 'repo');
  await mkdir(host);
  await writeFile(join(host, 'a.txt'), 'a\n');
  await chown(join(host, 'a.txt'), OWNER, OWNER);
  await chown(host, OWNER, OWNER);
  const { store } = await openStore({ dir: join(s.dir, 'store'), watchPrime: true });
  t.after(() => store.close());
  assert.ok(store.primeMeasures.watcher, 'the watcher started');
  await adoptRoot(store, { name: 'repo', hostPath: host });
  const published: number[] = [];
  const sync = new OwnerEditSync(store, { intervalMs: 20, onPublished: (p) => published.push(p.generation!) });
  sync.start();
  t.after(() => sync.stop());
  ownerWrites(join(host, 'a.txt'), 'edited in place\n');
  for (const deadline = Date.now() + 20_000; getRoot(store.db, 'repo')!.generation < 2; ) {
    assert.ok(Date.now() < deadline, 'the edit was published within 20 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  await sync.stop();
  assert.deepEqual(published, [2]);
  const route = await checkRouting(store, 'repo');
  assert.equal(await readFile(join(route.payloadPath, 'a.txt'), 'utf8'), 'edited in place\n');
  // A commit prunes the watcher's trees PRIME no longer needs, never an owner's view.
  ownerWrites(join(host, 'a.txt'), 'again\n');
  assert.equal((await publishOwnerEdits(store, 'repo')).generation, 3);
  assert.ok(store.primeMeasures.watcher.watchedKeys().includes(viewWatchKey(route.viewId)), "the view's upper layer is still watched");
  assert.equal(await unpublishedEdits(store, getRoot(store.db, 'repo')!, route.viewId), undefined);
});

test('the background sync takes no view a commit has linked but not yet recorded for a broken mapping', async (t) => {
  const { store } = await adoptOwned(t);
  const errors: string[] = [];
  const sync = new OwnerEditSync(store, { intervalMs: 60_000, onError: (_root, e) => errors.push((e as Error).message) });
  t.after(() => sync.stop());
  const made = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'from an agent\n'));
  let look: Promise<void> | undefined;
  await collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base }, {
    afterStep: async (step) => {
      if (step !== 'after-exchange') return;
      // The view link names the new generation's view; its record is written after this step.
      look = sync.pass();
      await new Promise((r) => setTimeout(r, 100));
    },
  });
  assert.ok(look, 'the look ran while the commit was in flight');
  await look;
  assert.deepEqual(errors, [], 'nothing reported');
  assert.equal(sync.problem('repo'), undefined);
  assert.equal(await unpublishedEdits(store, getRoot(store.db, 'repo')!, currentViewId(store.layout, getRoot(store.db, 'repo')!.rootKey)!), undefined, 'the new view shows PRIME');
});

test('the background sync names an edit it cannot publish until the owner undoes it, and reports the Root clean again', async (t) => {
  const { store, host } = await adoptOwned(t);
  const seen: string[] = [];
  const sync = new OwnerEditSync(store, { intervalMs: 20, onPublished: (p) => seen.push(`published ${p.generation ?? 'nothing'}`), onError: (_root, e) => seen.push(`error ${(e as { code?: string }).code}`) });
  sync.start();
  t.after(() => sync.stop());
  const waitFor = async (what: string, done: () => boolean): Promise<void> => {
    for (const deadline = Date.now() + 20_000; !done(); ) {
      assert.ok(Date.now() < deadline, `${what} within 20 s (seen: ${seen.join('; ')})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  assert.equal(asOwner('fs.symlinkSync("/etc/shadow", a[0]);', join(host, 'escape')).status, 0);
  await waitFor('the problem named', () => sync.problem('repo') !== undefined);
  assert.equal(sync.problem('repo')?.code, 'OWNER_EDIT_UNPUBLISHABLE');
  assert.match(sync.problem('repo')!.message, /escape/);
  assert.equal(asOwner('fs.unlinkSync(a[0]);', join(host, 'escape')).status, 0);
  await waitFor('the problem lifted', () => sync.problem('repo') === undefined);
  await sync.stop();
  assert.deepEqual(seen, ['error OWNER_EDIT_UNPUBLISHABLE', 'published nothing'], 'one error reported once, then clean again');
  assert.equal(getRoot(store.db, 'repo')!.generation, 1);
});

test('the replaced view is unmounted in the store\'s order after the commit; one an agent left mounted is unmounted at the next open and removed at the one after', async (t) => {
  const { store, dir } = await adoptOwned(t);
  const old = (await checkRouting(store, 'repo')).viewId;
  const merged = viewPaths(store.layout, old).merged;
  const made = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'from an agent\n'));
  await collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base });
  await storeSettled(store.dir);
  assert.ok(!mountsUnder(store.dir).includes(merged), 'unmounted once the store\'s queue has run');
  // An agent stopped between the commit and that unmount leaves the view mounted: what the next open finds.
  mountView(store, old);
  store.close();
  const { store: second } = await openStore({ dir: join(dir, 'store') });
  assert.ok(!mountsUnder(second.dir).includes(merged), 'unmounted at the next open');
  assert.ok(existsSync(viewPaths(second.layout, old).dir), 'kept while a process may still be inside it');
  second.close();
  const { store: third } = await openStore({ dir: join(dir, 'store') });
  t.after(() => third.close());
  assert.ok(!existsSync(viewPaths(third.layout, old).dir), 'removed at the open after');
});

test('a replaced view is removed when the store next opens; the current one stays with what the owner wrote', async (t) => {
  const { store, host, dir } = await adoptOwned(t);
  const old = (await checkRouting(store, 'repo')).viewId;
  const made = await makeCandidate(t, store, 'repo', (next) => writeFile(join(next, 'agent.txt'), 'from an agent\n'));
  await collapseRoot(store, { rootName: 'repo', candidateDir: made.candidate.dir, base: made.base });
  const current = (await checkRouting(store, 'repo')).viewId;
  ownerWrites(join(host, 'pending.txt'), 'not yet published\n');
  assert.ok(existsSync(viewPaths(store.layout, old).dir), 'the replaced view is kept while this agent runs');
  store.close();
  const { store: again } = await openStore({ dir: join(dir, 'store') });
  t.after(() => again.close());
  assert.ok(!existsSync(viewPaths(again.layout, old).dir), 'removed at the next open');
  assert.ok(existsSync(viewPaths(again.layout, current).upper));
  assert.equal(await readFile(join(host, 'pending.txt'), 'utf8'), 'not yet published\n');
});
