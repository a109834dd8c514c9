import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstat, readdir, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../node-agent/store/open-store.js';
import { primePath } from '../../node-agent/store/routing.js';
import { getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { makeSampleTree, scratch, snapshotTree } from './store-fixtures.js';

const child = fileURLToPath(new URL('./store-child.js', import.meta.url));

/** Run an adoption in another process that is SIGKILLed right after `step`. */
function adoptAndCrash(dir: string, host: string, step: string): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, 'adopt', dir, 'project', host, step], (err) => resolve((err as { signal?: NodeJS.Signals } | null)?.signal ?? null));
  });
}

const completes = ['moved', 'verified', 'promoted', 'live-published', 'host-linked'];

for (const step of completes) {
  test(`a crash after "${step}" is completed at the next open`, async (t) => {
    const s = await scratch(t);
    const dir = join(s.dir, 'store');
    const host = join(s.dir, 'project');
    await makeSampleTree(host);
    const before = snapshotTree(host) as { digest: string; manifest: unknown };
    assert.equal(await adoptAndCrash(dir, host, step), 'SIGKILL');

    const { store, recovered } = await openStore({ dir });
    t.after(() => store.close());
    assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), [['project', 'completed']]);
    assert.deepEqual(listIntents(store.db, 'adopt-root'), []);
    const root = getRoot(store.db, 'project')!;
    assert.equal(root.state, 'Ready');
    assert.equal(root.digest, before.digest);
    assert.equal(root.objectUid, 'uid-of-project', 'the completed record is bound to the Root object the intent named');
    assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'));
    assert.deepEqual((snapshotTree(await primePath(store, 'project')) as { manifest: unknown }).manifest, before.manifest);
    assert.deepEqual(await readdir(store.layout.staging), [], 'staging is empty');
  });
}

test('a crash before the move is rolled back: the host directory never left', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const before = snapshotTree(host);
  assert.equal(await adoptAndCrash(dir, host, 'intent-recorded'), 'SIGKILL');
  const { store, recovered } = await openStore({ dir });
  t.after(() => store.close());
  assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), [['project', 'rolled-back']]);
  assert.equal(getRoot(store.db, 'project'), undefined);
  assert.deepEqual(listIntents(store.db, 'adopt-root'), []);
  assert.deepEqual(snapshotTree(host), before);
});

test('a tree changed while it sat in staging is moved back, not adopted', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  assert.equal(await adoptAndCrash(dir, host, 'moved'), 'SIGKILL');
  const staged = join(dir, 'staging');
  const [entry] = await readdir(staged);
  await writeFile(join(staged, entry!, 'README.md'), 'tampered\n'); // e.g. a writer that kept an open descriptor
  const { store, recovered } = await openStore({ dir });
  t.after(() => store.close());
  assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), [['project', 'rolled-back']]);
  assert.ok((await lstat(host)).isDirectory());
  assert.equal(getRoot(store.db, 'project'), undefined);
  assert.deepEqual(await readdir(store.layout.staging), []);
  assert.deepEqual(await readdir(store.layout.generations), []);
});

test('recovery of a crashed cross-filesystem copy puts the original back', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  await s.mountTmpfs(join(s.dir, 'fs2'));
  const host = join(s.dir, 'fs2', 'project');
  await makeSampleTree(host);
  const before = snapshotTree(host) as { manifest: unknown };
  assert.equal(await adoptAndCrash(dir, host, 'live-published'), 'SIGKILL');
  const { store, recovered } = await openStore({ dir });
  t.after(() => store.close());
  assert.deepEqual(recovered.map((r) => [r.name, r.outcome]), [['project', 'rolled-back']]);
  assert.deepEqual((snapshotTree(host) as { manifest: unknown }).manifest, before.manifest);
  assert.deepEqual(await readdir(join(s.dir, 'fs2')), ['project']);
  assert.deepEqual(await readdir(store.layout.live), []);
  assert.deepEqual(await readdir(store.layout.generations), []);
});
