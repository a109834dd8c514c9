// Generations as stacks of immutable layers (node-agent/store/generation-stack.ts, collapses/stage-layer.ts):
// a collapse writes only what the candidate changes, the payload is a read-only overlay of the stack, the
// stacked payload walks to exactly the digest the commit derived for it, older generations keep their
// bytes, the stack is compacted at its depth limit, every full payload (adopted or compacted) is sealed
// read-only, a restarted node mounts PRIME's stack and every seal again, and an older generation's stack is
// mounted only while a reader holds it (payload-holds.ts).
import assert from 'node:assert/strict';
import { lstatSync, readdirSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, readFile, rename, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { MNT_DETACH, bindMount, umount2 } from '../../native/index.js';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { isCollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { storeSettled } from '../../node-agent/store/store-serial.js';
import { readMarker } from '../../node-agent/store/generation-marker.js';
import { MAX_STACK_DEPTH, layerDir } from '../../node-agent/store/generation-stack.js';
import { mountPoints } from '../../node-agent/store/mount-table.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { payloadDir } from '../../node-agent/store/store-layout.js';
import { getGeneration, getRoot } from '../../node-agent/store/store-records.js';
import { holdPayload, withPayload } from '../../node-agent/store/payload-holds.js';
import { recoverCollapses } from '../../node-agent/collapses/recover-collapses.js';
import { candidateDiff } from '../../node-agent/content/world-diff.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { manifestDigest } from '../../core/manifest.js';
import { adoptSample, makeCandidate, sampleChange } from './collapse-fixtures.js';
import { openTestStore, scratch } from './store-fixtures.js';

const walkDigest = (path: string): string => manifestDigest(walkTreeSync(path).manifest);

/** Every entry under a directory, relative, in any order (a layer is small). */
function listTree(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((d) => {
    const path = rel === '' ? d.name : `${rel}/${d.name}`;
    return d.isDirectory() ? [path, ...listTree(dir, path)] : [path];
  });
}

async function collapse(t: import('node:test').TestContext, store: Store, change: (next: string) => Promise<void>): Promise<{ generationId: string; digest: string }> {
  const made = await makeCandidate(t, store, 'project', change);
  const r = await collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base });
  assert.equal(r.digest, made.nextDigest);
  await storeSettled(store.dir); // the unmounts of what the commit replaced have run
  return { generationId: r.generationId, digest: r.digest };
}

test('a collapse writes only the change as a layer, and PRIME is a read-only stack that walks to its digest', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  const base = getGeneration(store.db, getRoot(store.db, 'project')!.rootKey, 1)!;
  const next = await collapse(t, store, sampleChange);

  assert.deepEqual(readMarker(store.layout, next.generationId)?.layers, [next.generationId, base.id]);
  // The layer: the changed paths, the directories on their way, a whiteout per removed path; nothing else.
  const layer = layerDir(store.layout, next.generationId);
  assert.deepEqual(listTree(layer).sort(), ['README.md', 'docs', 'docs/guide.md', 'empty', 'shared', 'src', 'src/lib', 'src/lib/util.ts', 'src/main.ts'].sort());
  for (const gone of ['shared', 'src/lib/util.ts']) {
    const st = lstatSync(join(layer, gone));
    assert.ok(st.isCharacterDevice() && st.rdev === 0, `${gone} is a whiteout`);
  }
  const route = await checkRouting(store, 'project');
  assert.ok(mountPoints().includes(route.payloadPath), 'the payload is a mount of the stack');
  assert.equal(walkDigest(host), next.digest, 'the host path shows the stack, which walks to the derived digest');
  await assert.rejects(appendFile(join(store.layout.live, 'project', 'README.md'), 'foreign\n'), { code: 'EROFS' });
  assert.equal(walkDigest(payloadDir(store.layout, base.id)), base.digest, 'the base generation is untouched');
});

test('deltas of every kind stack to exactly the manifest the collapse recorded, collapse after collapse', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  const changes: ((next: string) => Promise<void>)[] = [
    sampleChange,
    async (next) => {
      await rm(join(next, 'src'), { recursive: true }); // a directory with its whole subtree
      await writeFile(join(next, 'src'), 'now a file\n'); // ... replaced by a file
      await chmod(next, 0o750); // the Root's own mode
    },
    async (next) => {
      await rm(join(next, 'src'));
      await mkdir(join(next, 'src/lib'), { recursive: true }); // a file replaced by a directory
      await writeFile(join(next, 'src/lib/util.ts'), 'back again\n'); // a path removed two layers below
      await symlink('../README.md', join(next, 'src/readme-link'));
      await chown(join(next, 'docs'), 1000, 1000);
      await chmod(join(next, 'docs'), 0o700); // a directory's owner and mode, its content kept
    },
    async (next) => {
      await rm(join(next, 'docs'), { recursive: true });
      await mkdir(join(next, 'docs')); // removed and created again: nothing of the old one shows
      await writeFile(join(next, 'docs/new.md'), 'new\n');
    },
  ];
  const published: { generationId: string; digest: string }[] = [];
  for (const change of changes) {
    published.push(await collapse(t, store, change));
    assert.equal(walkDigest(host), published.at(-1)!.digest);
    assert.deepEqual(walkTreeSync(host).problems, []);
  }
  assert.equal(await readFile(join(host, 'src/lib/util.ts'), 'utf8'), 'back again\n');
  assert.deepEqual(readdirSync(join(host, 'docs')), ['new.md']);
  // Snapshots: every generation still walks to the digest it was published with.
  for (const g of published) assert.equal(await withPayload(store, g.generationId, walkDigest), g.digest, `${g.generationId} kept its bytes`);
});

test('FOREIGN_WRITE: a byte written into a layer under PRIME is found at the commit boundary', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptSample(store, s.dir);
  const first = await collapse(t, store, sampleChange);
  const made = await makeCandidate(t, store, 'project', (next) => writeFile(join(next, 'tool'), '#!/bin/sh\necho 2\n'));
  await appendFile(join(layerDir(store.layout, first.generationId), 'README.md'), 'foreign\n');
  await assert.rejects(collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }), (e) => isCollapseError(e, 'FOREIGN_WRITE'));
  assert.equal(getRoot(store.db, 'project')!.generation, 2);
});

test('STAGED_UNTESTED: a layer changed after it was verified is found at the commit boundary', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptSample(store, s.dir);
  const made = await makeCandidate(t, store, 'project', sampleChange);
  let generationId = '';
  const refused = collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }, {
    afterStep: async (step) => {
      if (step !== 'after-marker-sync') return;
      generationId = readdirSync(store.layout.generations).find((id) => id.includes('_g2_'))!;
      await writeFile(join(layerDir(store.layout, generationId), 'docs/guide.md'), 'substituted\n');
    },
  });
  await assert.rejects(refused, (e) => isCollapseError(e, 'STAGED_UNTESTED'));
  assert.equal(getRoot(store.db, 'project')!.generation, 1);
  assert.ok(!readdirSync(store.layout.generations).includes(generationId), 'the refused generation is removed (unmounted first)');
});

test(`the stack is compacted into a full generation at ${MAX_STACK_DEPTH} layers, with the same bytes`, async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  let last = { generationId: '', digest: '' };
  for (let n = 1; n <= MAX_STACK_DEPTH; n++) last = await collapse(t, store, (next) => writeFile(join(next, `file-${n}`), `${n}\n`));
  const compacted = readMarker(store.layout, last.generationId);
  assert.equal(compacted?.layers, undefined, 'the generation at the depth limit is a full one');
  assert.equal(walkDigest(host), last.digest);
  // Sealed like every payload: its files share inodes with the layers below, and the live link cannot write them.
  assert.ok(mountPoints().includes(payloadDir(store.layout, last.generationId)), 'the compaction is sealed by a read-only bind mount');
  await assert.rejects(appendFile(join(store.layout.live, 'project', 'file-1'), 'foreign\n'), { code: 'EROFS' });
  assert.equal(walkDigest(payloadDir(store.layout, last.generationId)), last.digest);
  const after = await collapse(t, store, (next) => writeFile(join(next, 'after'), 'x\n'));
  assert.deepEqual(readMarker(store.layout, after.generationId)?.layers, [after.generationId, last.generationId], 'the next stack starts on it');
  assert.equal(walkDigest(host), after.digest);
});

test(`a return to a checkpoint ${MAX_STACK_DEPTH} layers deep compacts it: no return publishes a deeper stack than a collapse`, async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  let checkpoint = { generationId: '', digest: '' };
  for (let n = 1; n < MAX_STACK_DEPTH; n++) checkpoint = await collapse(t, store, (next) => writeFile(join(next, `file-${n}`), `${n}\n`));
  assert.equal(readMarker(store.layout, checkpoint.generationId)?.layers?.length, MAX_STACK_DEPTH, 'the checkpoint is as deep as collapses stack');
  const checkpointGeneration = getRoot(store.db, 'project')!.generation;
  const moved = await collapse(t, store, (next) => writeFile(join(next, 'later'), 'x\n'));
  assert.equal(readMarker(store.layout, moved.generationId)?.layers, undefined, 'the collapse over it compacted');
  const prime = getRoot(store.db, 'project')!;
  const back = await collapseRoot(store, { rootName: 'project', candidateDir: '', base: { generation: prime.generation, digest: prime.digest }, returnTo: checkpointGeneration });
  assert.equal(back.digest, checkpoint.digest);
  assert.equal(readMarker(store.layout, back.generationId)?.layers, undefined, 'the return is a full generation, not the checkpoint\'s stack under one more layer');
  assert.ok(mountPoints().includes(payloadDir(store.layout, back.generationId)), 'sealed like every full generation');
  assert.equal(walkDigest(host), checkpoint.digest);
  assert.equal(await withPayload(store, checkpoint.generationId, walkDigest), checkpoint.digest, 'the checkpoint keeps its bytes');
  await assert.rejects(appendFile(join(store.layout.live, 'project', 'file-1'), 'foreign\n'), { code: 'EROFS' });
});

test('a restarted node mounts PRIME\'s stack and the adopted tree\'s seal again when the store opens; an older stack when it is read', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const first = await openStore({ dir });
  const host = await adoptSample(first.store, s.dir);
  const adopted = getGeneration(first.store.db, getRoot(first.store.db, 'project')!.rootKey, 1)!;
  const published = [await collapse(t, first.store, sampleChange), await collapse(t, first.store, (next) => writeFile(join(next, 'tool'), 'v3\n'))];
  assert.ok(!mountPoints().includes(payloadDir(first.store.layout, published[0]!.generationId)), 'PRIME moved past the older stack: not mounted');
  for (const id of [adopted.id, published[1]!.generationId]) umount2(payloadDir(first.store.layout, id), MNT_DETACH); // what a reboot leaves
  // An empty payload directory is never taken for PRIME.
  await assert.rejects(checkRouting(first.store, 'project'), (e) => (e as { code?: string }).code === 'LIVE_MAPPING_BROKEN');
  first.store.close();
  const again = await openTestStore(t, dir);
  assert.equal(walkDigest(payloadDir(again.layout, published[1]!.generationId)), published[1]!.digest, 'PRIME\'s stack is mounted again');
  assert.ok(!mountPoints().includes(payloadDir(again.layout, published[0]!.generationId)), 'the older stack is not');
  assert.equal(await withPayload(again, published[0]!.generationId, walkDigest), published[0]!.digest, 'read through a hold, it has its bytes');
  assert.ok(mountPoints().includes(payloadDir(again.layout, adopted.id)), 'the adopted tree is sealed again');
  await assert.rejects(writeFile(join(payloadDir(again.layout, adopted.id), 'foreign.txt'), 'x'), { code: 'EROFS' });
  await checkRouting(again, 'project');
  assert.equal(walkDigest(host), published[1]!.digest);
});

test('only PRIME\'s stack stays mounted: an older generation\'s is mounted while a reader holds it, and the table does not grow with collapses', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const store = await openTestStore(t, dir);
  const host = await adoptSample(store, s.dir);
  const below = (): string[] => mountPoints().filter((p) => p.startsWith(`${store.dir}/`)).sort();
  const g2 = await collapse(t, store, sampleChange);
  const g3 = await collapse(t, store, (next) => writeFile(join(next, 'tool'), 'v3\n'));
  const atThree = below();
  const g4 = await collapse(t, store, (next) => writeFile(join(next, 'tool'), 'v4\n'));
  const payload = (g: { generationId: string }): string => payloadDir(store.layout, g.generationId);
  assert.ok(atThree.includes(payload(g3)) && !atThree.includes(payload(g2)), 'PRIME\'s stack is mounted, the one it moved past is not');
  assert.equal(below().length, atThree.length, 'a collapse adds no mount to the node: its stack replaces PRIME\'s');
  assert.ok(below().includes(payload(g4)) && !below().includes(payload(g3)));

  // Two readers of an older generation: mounted until the last one is done.
  const a = holdPayload(store, g2.generationId);
  const b = holdPayload(store, g2.generationId);
  assert.equal(a.path, payload(g2));
  assert.equal(walkDigest(a.path), g2.digest, 'an older generation read through a hold has its bytes');
  a.release();
  a.release(); // a second call releases nothing more
  assert.ok(below().includes(payload(g2)), 'still held by the other reader');
  b.release();
  assert.ok(!below().includes(payload(g2)), 'unmounted with its last reader');

  // A reader of PRIME keeps it mounted while a collapse moves PRIME past it.
  const reader = holdPayload(store, g4.generationId);
  const g5 = await collapse(t, store, (next) => writeFile(join(next, 'tool'), 'v5\n'));
  assert.ok(below().includes(payload(g4)), 'held: the collapse leaves it mounted');
  assert.equal(walkDigest(reader.path), g4.digest);
  reader.release();
  assert.ok(!below().includes(payload(g4)) && below().includes(payload(g5)), 'released: only PRIME\'s stack is left');
  assert.equal(walkDigest(host), g5.digest);

  // What an agent before this one left mounted goes once recovery has settled PRIME at the next start.
  bindMount(layerDir(store.layout, g3.generationId), payload(g3), { readonly: true, recursive: false, nosuid: true, nodev: true });
  assert.ok(below().includes(payload(g3)));
  assert.ok((await recoverCollapses(store)).length === 0);
  assert.ok(!below().includes(payload(g3)), 'an idle older stack is unmounted after recovery');
  assert.ok(below().includes(payload(g5)), 'PRIME\'s stays');
  // And a seal PRIME reads that is missing (the adopted tree at the bottom of its stack) is made again.
  const adopted = payloadDir(store.layout, getGeneration(store.db, getRoot(store.db, 'project')!.rootKey, 1)!.id);
  umount2(adopted, MNT_DETACH);
  await recoverCollapses(store);
  assert.ok(below().includes(adopted), 'the bottom of PRIME\'s stack is sealed again');
  await assert.rejects(writeFile(join(adopted, 'foreign.txt'), 'x'), { code: 'EROFS' });
});

test('a World\'s diff over a base PRIME has moved past reads that base through a hold, and leaves it unmounted', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptSample(store, s.dir);
  const g2 = await collapse(t, store, sampleChange); // README.md: '# sample, changed'
  const made = await makeCandidate(t, store, 'project', (next) => writeFile(join(next, 'README.md'), 'third\n'));
  await collapse(t, store, (next) => writeFile(join(next, 'tool'), 'v3\n'));
  const payload = payloadDir(store.layout, g2.generationId);
  assert.ok(!mountPoints().includes(payload), 'the candidate\'s base is no longer PRIME: its stack is not mounted');
  const patch = candidateDiff(store, made.candidate.digest, 'patch').text;
  assert.match(patch, /--- a\/project\/README\.md\n\+\+\+ b\/project\/README\.md\n@@ -1 \+1 @@\n-# sample, changed\n\+third\n/, 'the old side is read from the base');
  assert.ok(!mountPoints().includes(payload), 'released after the diff');
});

test('an adopted Root is sealed: its live link refuses every kind of write, and an unsealed payload is no route', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptSample(store, s.dir);
  const host = join(store.layout.live, 'project'); // PRIME as the store links it (the host path shows the owner's view)
  const adopted = getGeneration(store.db, getRoot(store.db, 'project')!.rootKey, 1)!;
  const payload = payloadDir(store.layout, adopted.id);
  assert.ok(mountPoints().includes(payload), 'the adopted tree is a read-only bind mount of itself');
  const attempts: [string, () => Promise<unknown>][] = [
    ['append', () => appendFile(join(host, 'README.md'), 'foreign\n')],
    ['create', () => writeFile(join(host, 'foreign.txt'), 'x')],
    ['truncate', () => truncate(join(host, 'README.md'), 0)],
    ['remove', () => unlink(join(host, 'README.md'))],
    ['rename', () => rename(join(host, 'README.md'), join(host, 'moved.md'))],
    ['mkdir', () => mkdir(join(host, 'newdir'))],
    ['chmod', () => chmod(join(host, 'README.md'), 0o777)],
    ['chown', () => chown(join(host, 'README.md'), 4242, 4242)],
    ['symlink', () => symlink('/etc/passwd', join(host, 'link'))],
  ];
  for (const [what, attempt] of attempts) await assert.rejects(attempt(), { code: 'EROFS' }, what);
  assert.equal(walkDigest(host), adopted.digest, 'the adopted tree kept its bytes, owners and modes');
  await checkRouting(store, 'project');
  // Without its seal the payload is writable through the live link: the route check refuses it by name.
  umount2(payload, MNT_DETACH);
  await assert.rejects(checkRouting(store, 'project'), (e) => (e as { code?: string; message?: string }).code === 'LIVE_MAPPING_BROKEN' && /not sealed read-only/.test((e as Error).message));
});
