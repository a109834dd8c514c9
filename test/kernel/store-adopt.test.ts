import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstat, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { checkRouting, primePath } from '../../node-agent/store/routing.js';
import { listRoots } from '../../node-agent/store/store-records.js';
import { StoreError } from '../../node-agent/store/store-errors.js';
import { makeSampleTree, openTestStore, scratch, snapshotStore, snapshotTree } from './store-fixtures.js';

test('adoption moves the tree into a generation and routes the host path through live/', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const before = snapshotTree(host) as { digest: string; manifest: unknown };

  const root = await adoptRoot(store, { name: 'project', hostPath: host, objectUid: 'uid-1' });
  assert.equal(root.state, 'Ready');
  assert.equal(root.objectUid, 'uid-1', 'the record names the Root object it was adopted for');
  assert.equal(root.nodePath, host);
  assert.equal(root.generation, 1);
  assert.equal(root.digest, before.digest);

  const hostLink = await lstat(host);
  assert.ok(hostLink.isSymbolicLink());
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'));
  const liveTarget = await readlink(join(store.dir, 'live', 'project'));
  assert.match(liveTarget, /^\.\.\/generations\/project_g1_[0-9a-f]{16}\/payload$/);

  const prime = await primePath(store, 'project');
  assert.equal(prime, join(store.dir, liveTarget.slice(3)));
  const after = snapshotTree(prime) as { digest: string; manifest: unknown };
  assert.deepEqual(after.manifest, before.manifest, 'owners, modes, links and content arrive unchanged');
  assert.equal((await stat(join(prime, 'tool'))).mode & 0o7777, 0o4755);
  assert.equal((await stat(join(prime, 'src/owned'))).uid, 1000);
  assert.equal(await readFile(join(host, 'src/main.ts'), 'utf8'), 'export const x = 1;\n', 'the host path still reads the content');

  const marker = JSON.parse(await readFile(join(prime, '..', 'marker.json'), 'utf8'));
  assert.deepEqual(marker, { format: 'worldline.generation/v1', rootKey: 'project', generation: 1, digest: root.digest });
  for (const d of ['generations', 'staging', 'worlds', 'candidates', join('generations', liveTarget.split('/')[2]!)]) {
    const st = await lstat(join(store.dir, d));
    assert.equal(st.mode & 0o7777, 0o700, `${d} is 0700`);
    assert.equal(st.uid, 0);
  }
  // The ways to the owner's view: passed through by exact name, never listed (owner-view.ts).
  for (const d of ['', 'live', 'views']) {
    const st = await lstat(join(store.dir, d));
    assert.equal(st.mode & 0o7777, 0o711, `${d || 'store'} is 0711`);
    assert.equal(st.uid, 0);
  }
  assert.equal((await checkRouting(store, 'project')).generationId, liveTarget.split('/')[2]);

  await t.test('adopting again is idempotent', async () => {
    const again = await adoptRoot(store, { name: 'project', hostPath: host });
    assert.deepEqual(again, root);
    assert.equal(listRoots(store.db).length, 1);
  });
});

test('two identical trees adopt to the same digest; one changed byte or owner does not', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  for (const name of ['a', 'b', 'c', 'd']) await makeSampleTree(join(s.dir, name));
  await writeFile(join(s.dir, 'c', 'empty'), 'x');
  const { chown } = await import('node:fs/promises');
  await chown(join(s.dir, 'd', 'README.md'), 1000, 0);
  const digests = [];
  for (const name of ['a', 'b', 'c', 'd']) digests.push((await adoptRoot(store, { name, hostPath: join(s.dir, name) })).digest);
  assert.equal(digests[0], digests[1]);
  assert.notEqual(digests[0], digests[2], 'content is measured');
  assert.notEqual(digests[0], digests[3], 'ownership is measured');
});

test('adoption across filesystems copies, verifies, and removes the original', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await s.mountTmpfs(join(s.dir, 'other-fs'));
  const host = join(s.dir, 'other-fs', 'project');
  await makeSampleTree(host);
  const before = snapshotTree(host) as { digest: string; manifest: unknown };
  const root = await adoptRoot(store, { name: 'project', hostPath: host });
  assert.equal(root.digest, before.digest);
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'));
  assert.deepEqual((snapshotTree(await primePath(store, 'project')) as { manifest: unknown }).manifest, before.manifest);
  const { readdir } = await import('node:fs/promises');
  assert.deepEqual(await readdir(join(s.dir, 'other-fs')), ['project'], 'the detached original is gone');
});

test('a tree that changes between the walk and the move is put back and refused', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  const storeBefore = snapshotStore(store);
  const { readdir } = await import('node:fs/promises');
  await assert.rejects(
    adoptRoot(store, { name: 'project', hostPath: host }, {
      afterStep: async (step) => {
        if (step !== 'moved') return;
        const [staged] = await readdir(store.layout.staging);
        await writeFile(join(store.layout.staging, staged!, 'README.md'), 'late write\n');
      },
    }),
    (e: unknown) => e instanceof StoreError && e.code === 'ROOT_CHANGED_DURING_ADOPTION',
  );
  assert.ok((await lstat(host)).isDirectory(), 'the directory is back at the host path');
  assert.equal(await readFile(join(host, 'README.md'), 'utf8'), 'late write\n');
  assert.deepEqual(snapshotStore(store), storeBefore);
});
