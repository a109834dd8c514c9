// Collapse of a hand-made candidate: the host path shows the change, PRIME walks to applyDelta's digest,
// unchanged files share the base's inodes, and every refusal leaves PRIME and the store as they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, lstat, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { applyDelta, manifestDigest } from '../../core/manifest.js';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { isCollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { readStoredDelta, stageGeneration } from '../../node-agent/collapses/stage-generation.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { withBeneath } from '../../node-agent/store/generation-stack.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { payloadDir } from '../../node-agent/store/store-layout.js';
import { getGenerationManifest, getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { adoptSample, leftovers, makeCandidate, sampleChange } from './collapse-fixtures.js';
import { openTestStore, scratch } from './store-fixtures.js';

const walkDigest = (path: string): string => manifestDigest(walkTreeSync(path).manifest);

test('a collapse publishes the candidate: host path, digest, shared inodes, rows', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  const made = await makeCandidate(t, store, 'project', sampleChange);
  const base = await checkRouting(store, 'project');
  const delta = await readStoredDelta(made.candidate.dir, 'project');
  const expected = manifestDigest(applyDelta(getGenerationManifest(store.db, base.generationId)!, delta));
  assert.equal(expected, made.nextDigest);

  const result = await collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base });
  assert.equal(result.fromGeneration, 1);
  assert.equal(result.toGeneration, 2);
  assert.equal(result.digest, expected);
  assert.equal(await readFile(join(host, 'README.md'), 'utf8'), '# sample, changed\n');
  assert.equal(await readFile(join(host, 'docs/guide.md'), 'utf8'), 'guide\n');
  await assert.rejects(lstat(join(host, 'src/lib/util.ts')), { code: 'ENOENT' });
  assert.equal((await stat(join(host, 'empty'))).uid, 1000);

  const route = await checkRouting(store, 'project');
  assert.equal(route.root.generation, 2);
  assert.equal(route.root.digest, expected);
  assert.equal(walkDigest(route.payloadPath), expected);
  assert.deepEqual(walkTreeSync(route.payloadPath).manifest, made.nextManifest);

  const basePayload = payloadDir(store.layout, base.generationId);
  for (const unchanged of ['tool', 'src/owned']) {
    assert.equal((await stat(join(route.payloadPath, unchanged))).ino, (await stat(join(basePayload, unchanged))).ino, `${unchanged} is shared`);
  }
  for (const changed of ['README.md', 'empty', 'src/main.ts']) {
    assert.notEqual((await stat(join(route.payloadPath, changed))).ino, (await stat(join(basePayload, changed))).ino, `${changed} is a new inode`);
  }
  assert.equal(walkDigest(basePayload), made.base.digest, 'the base generation is unchanged');
  assert.equal(await readlink(host), join(store.dir, 'live', 'project_view'), "the host path links to the owner's view");
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  assert.deepEqual(await leftovers(store), []);
});

test('a second collapse builds on the first (shared inodes across generations are not a refusal)', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  const first = await makeCandidate(t, store, 'project', sampleChange);
  await collapseRoot(store, { rootName: 'project', candidateDir: first.candidate.dir, base: first.base });
  const second = await makeCandidate(t, store, 'project', (next) => writeFile(join(next, 'tool'), '#!/bin/sh\necho 2\n'));
  const result = await collapseRoot(store, { rootName: 'project', candidateDir: second.candidate.dir, base: second.base });
  assert.equal(result.toGeneration, 3);
  assert.equal(await readFile(join(host, 'tool'), 'utf8'), '#!/bin/sh\necho 2\n');
  assert.equal(walkDigest((await checkRouting(store, 'project')).payloadPath), second.nextDigest);
  assert.deepEqual(await leftovers(store), []);
});

async function refusedCollapse(t: import('node:test').TestContext, code: string, interfere: (host: string, store: Store) => Promise<void>): Promise<void> {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = await adoptSample(store, s.dir);
  const made = await makeCandidate(t, store, 'project', sampleChange);
  await interfere(host, store);
  const before = walkDigest(host);
  const generation = getRoot(store.db, 'project')!.generation;
  await assert.rejects(collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }), (e) => isCollapseError(e) && e.code === code);
  assert.equal(walkDigest(host), before, 'PRIME is untouched');
  assert.equal(getRoot(store.db, 'project')!.generation, generation);
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  assert.deepEqual(await leftovers(store), []);
  await checkRouting(store, 'project');
}

/** Writes into the adopted tree beneath its read-only seal, as root inside the store can (limit 9). */
async function beneathPrime(store: Store, write: (payload: string) => Promise<void>): Promise<void> {
  const payload = (await checkRouting(store, 'project')).payloadPath;
  await withBeneath(store.dir, (beneath) => write(beneath(payload)));
}

test('FOREIGN_WRITE: an unchanged file of PRIME written after capture (the live link refuses it; root writes it beneath the seal)', async (t) => {
  await refusedCollapse(t, 'FOREIGN_WRITE', async (_host, store) => {
    await assert.rejects(appendFile(join(store.layout.live, 'project', 'src/owned'), 'foreign\n'), { code: 'EROFS' });
    await beneathPrime(store, (payload) => appendFile(join(payload, 'src/owned'), 'foreign\n'));
  });
});

test('FOREIGN_WRITE: a file added to PRIME after capture (the live link refuses it; root adds it beneath the seal)', async (t) => {
  await refusedCollapse(t, 'FOREIGN_WRITE', async (_host, store) => {
    await assert.rejects(writeFile(join(store.layout.live, 'project', 'foreign.txt'), 'x'), { code: 'EROFS' });
    await beneathPrime(store, (payload) => writeFile(join(payload, 'foreign.txt'), 'x'));
  });
});

test('PRIME_MOVED: a candidate of a base that another collapse replaced', async (t) => {
  await refusedCollapse(t, 'PRIME_MOVED', async (_host, store) => {
    const other = await makeCandidate(t, store, 'project', (next) => writeFile(join(next, 'other.txt'), 'o'));
    await collapseRoot(store, { rootName: 'project', candidateDir: other.candidate.dir, base: other.base });
  });
});

test('STAGED_UNTESTED: a staged layer that does not hold the candidate change', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await adoptSample(store, s.dir);
  const made = await makeCandidate(t, store, 'project', sampleChange);
  const staging = join(store.layout.staging, 'collapse-test');
  await assert.rejects(
    stageGeneration(store, 'project', made.candidate.dir, 1, {
      stagingDir: staging,
      hooks: { afterStep: (step) => (step === 'after-stage' ? writeFile(join(staging, 'layer', 'README.md'), 'tampered') : undefined) },
    }),
    (e) => isCollapseError(e, 'STAGED_UNTESTED'),
  );
  assert.deepEqual(await leftovers(store), []);
});
