// Releasing a Root (store/release-root.ts) on a real filesystem: PRIME goes back to the host path as a plain
// directory with the same manifest (owners, modes, setuid and sticky bits, symlinks), the history stays in
// the store, and a later adoption of the directory is a fresh one numbered after it. A SIGKILL after each
// release step is settled by recoverReleases (store/release-recovery.ts): finished once the host path is the
// directory, otherwise rolled back with the root still Releasing, and released again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { beginRelease, releaseRoot } from '../../node-agent/store/release-root.js';
import { recoverReleases } from '../../node-agent/store/release-recovery.js';
import { RELEASE_INTENT_KIND } from '../../node-agent/store/release-intent.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { isStoreError } from '../../node-agent/store/store-errors.js';
import { getGeneration, getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { makeSampleTree, openTestStore, scratch, snapshotTree } from './store-fixtures.js';

const child = fileURLToPath(new URL('./release-root-child.js', import.meta.url));

type Snap = { digest: string; manifest: unknown };

/** Adopt and release in another process that is SIGKILLed right after release step `step`. */
function releaseAndCrash(dir: string, host: string, step: string): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, 'release', dir, 'project', host, step], (err) => resolve((err as { signal?: NodeJS.Signals } | null)?.signal ?? null));
  });
}

async function refusedWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => isStoreError(e) && e.code === code);
}

/** The host path is a plain directory (not a link) holding exactly `before`. */
async function assertReleased(host: string, before: Snap): Promise<void> {
  const st = await lstat(host);
  assert.ok(st.isDirectory() && !st.isSymbolicLink(), `${host} is a plain directory`);
  assert.deepEqual((snapshotTree(host) as Snap).manifest, before.manifest, 'same entries, owners, modes and link targets');
  assert.equal((snapshotTree(host) as Snap).digest, before.digest);
  const siblings = (await readdir(join(host, '..'))).filter((n) => n.includes('worldline-release'));
  assert.deepEqual(siblings, [], 'no copy or old link is left beside the host path');
}

test('release: the host path becomes the plain directory again, the history stays, routing refuses by name', async (t) => {
  const s = await scratch(t);
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const before = snapshotTree(host) as Snap;
  const store = await openTestStore(t, join(s.dir, 'store'));
  const adopted = await adoptRoot(store, { name: 'project', hostPath: host, objectUid: 'uid-1' });
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'));

  const released = await releaseRoot(store, 'project');
  assert.equal(released.state, 'Released');
  assert.equal(released.reason, 'ROOT_RELEASED');
  assert.equal(released.generation, 1);
  await assertReleased(host, before);
  assert.ok(getGeneration(store.db, adopted.rootKey, 1), 'generation 1 is still recorded');
  const genDirs = await readdir(store.layout.generations);
  assert.equal(genDirs.length, 1, 'its payload stays in the store as history');
  assert.ok((await lstat(join(store.layout.generations, genDirs[0]!, 'payload'))).isDirectory());
  assert.deepEqual(await readdir(store.layout.live), [], 'live/project is gone');
  assert.deepEqual(listIntents(store.db, RELEASE_INTENT_KIND), []);
  await refusedWith(checkRouting(store, 'project'), 'ROOT_RELEASED');
  assert.equal((await releaseRoot(store, 'project')).state, 'Released', 'releasing again is a no-op');

  // Re-adoption: a fresh adoption of the plain directory, numbered after the released history, for the new object.
  const again = await adoptRoot(store, { name: 'project', hostPath: host, objectUid: 'uid-2' });
  assert.equal(again.state, 'Ready');
  assert.equal(again.generation, 2);
  assert.equal(again.objectUid, 'uid-2');
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'));
  assert.equal((snapshotTree((await checkRouting(store, 'project')).payloadPath) as Snap).digest, before.digest);
  assert.ok(getGeneration(store.db, adopted.rootKey, 1), 'the released generation is still history');
});

test('a Releasing root refuses forks and commits by name (ROOT_RELEASING)', async (t) => {
  const s = await scratch(t);
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptRoot(store, { name: 'project', hostPath: host, objectUid: 'uid-1' });
  assert.equal((await beginRelease(store, 'project'))?.state, 'Releasing');
  await refusedWith(checkRouting(store, 'project'), 'ROOT_RELEASING');
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'), 'nothing moved yet');
});

test('a root whose host path is not the link to the store is not released (ROOT_RELEASE_BLOCKED)', async (t) => {
  const s = await scratch(t);
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptRoot(store, { name: 'project', hostPath: host, objectUid: 'uid-1' });
  const { unlink, mkdir } = await import('node:fs/promises');
  await unlink(host);
  await mkdir(host); // someone put a directory in the link's place
  await refusedWith(releaseRoot(store, 'project'), 'ROOT_RELEASE_BLOCKED');
  assert.deepEqual(await readdir(host), [], 'the directory in its place is untouched');
  assert.deepEqual(listIntents(store.db, RELEASE_INTENT_KIND), []);
});

for (const step of ['intent-recorded', 'copied'] as const) {
  test(`a crash after "${step}" is rolled back at start (still Releasing) and the release then completes`, async (t) => {
    const s = await scratch(t);
    const dir = join(s.dir, 'store');
    const host = join(s.dir, 'project');
    await makeSampleTree(host);
    const before = snapshotTree(host) as Snap;
    assert.equal(await releaseAndCrash(dir, host, step), 'SIGKILL');

    const { store } = await openStore({ dir });
    t.after(() => store.close());
    const recovered = await recoverReleases(store);
    assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), [['project', 'rolled-back']]);
    assert.deepEqual(listIntents(store.db, RELEASE_INTENT_KIND), []);
    assert.equal(getRoot(store.db, 'project')?.state, 'Releasing', 'still closed to forks and commits');
    assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'), 'the host path is still the link');
    assert.deepEqual((await readdir(s.dir)).filter((n) => n.includes('worldline-release')), [], 'the copy is removed');

    assert.equal((await releaseRoot(store, 'project')).state, 'Released');
    await assertReleased(host, before);
  });
}

for (const step of ['exchanged', 'released'] as const) {
  test(`a crash after "${step}" is finished at start: Released, the host path the plain directory`, async (t) => {
    const s = await scratch(t);
    const dir = join(s.dir, 'store');
    const host = join(s.dir, 'project');
    await makeSampleTree(host);
    const before = snapshotTree(host) as Snap;
    assert.equal(await releaseAndCrash(dir, host, step), 'SIGKILL');

    const { store } = await openStore({ dir });
    t.after(() => store.close());
    const recovered = await recoverReleases(store);
    assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), step === 'released' ? [] : [['project', 'completed']]);
    assert.deepEqual(listIntents(store.db, RELEASE_INTENT_KIND), []);
    assert.equal(getRoot(store.db, 'project')?.state, 'Released');
    await assertReleased(host, before);
    assert.deepEqual(await readdir(store.layout.live), []);
  });
}
