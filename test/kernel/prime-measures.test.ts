// The PRIME watcher in the collapse (node-agent/store/prime-measures.ts): after a measured walk, a commit
// boundary re-hashes PRIME only when the watcher observed something under its layers, or lost sight of
// them. Everything here runs on a fresh ext4 filesystem on a loop device, so that nothing else on the
// machine writes to the filesystem the watcher marks (a write elsewhere to a hard-linked file is a gap,
// which would make a "vouched" assertion depend on the machine).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { isCollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { layerDir } from '../../node-agent/store/generation-stack.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { getRoot } from '../../node-agent/store/store-records.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { cleanDigests } from '../../node-agent/store/store-walk.js';
import { setTimeout as delay } from 'node:timers/promises';
import { manifestDigest } from '../../core/manifest.js';
import { adoptSample, makeCandidate, sampleChange } from './collapse-fixtures.js';
import { requireRoot } from '../support/require-root.js';
import { loopExt4 } from './loop-ext4.js';

requireRoot('the PRIME watcher in the collapse (fanotify filesystem marks, loop devices, ext4 mounts)');
const fs = loopExt4('wl-primemeasure-');
const mnt = fs.mnt;

before(() => fs.mount());
after(() => fs.unmount());

let serial = 0;
/** A store (and a directory beside it) on the test filesystem; its stacks are unmounted after the test. */
async function openWatched(t: TestContext, watchPrime = true): Promise<{ store: Store; dir: string }> {
  const d = join(mnt, `case${++serial}`);
  mkdirSync(d);
  const { store, watcherError } = await openStore({ dir: join(d, 'store'), watchPrime });
  assert.equal(watcherError, undefined, 'the watcher started');
  t.after(() => store.close());
  return { store, dir: d };
}

async function collapse(t: TestContext, store: Store, change: (next: string) => Promise<void>): Promise<{ generationId: string; digest: string }> {
  const made = await makeCandidate(t, store, 'project', change);
  const r = await collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base });
  assert.equal(r.digest, made.nextDigest);
  return { generationId: r.generationId, digest: r.digest };
}

const addFile = (name: string) => (next: string) => writeFile(join(next, name), `${name}\n`);
const livePrimeDigest = async (store: Store): Promise<string> => manifestDigest(walkTreeSync((await checkRouting(store, 'project')).payloadPath).manifest);

test('after one measured walk, commit boundaries take PRIME from the watcher, and the result still walks to the recorded digests', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  const counts = store.primeMeasures.counts;
  await collapse(t, store, sampleChange);
  assert.deepEqual(counts, { walked: 1, vouched: 0 }, 'the first boundary walked PRIME: nothing was measured before');
  for (let i = 0; i < 4; i++) {
    const made = await collapse(t, store, addFile(`file-${i}`));
    assert.equal(await livePrimeDigest(store), made.digest, 'PRIME walks to the digest the collapse recorded');
  }
  assert.deepEqual(counts, { walked: 1, vouched: 4 }, 'each later boundary was vouched for: nothing changed under PRIME');
});

test('without the watcher, every commit boundary walks PRIME', async (t) => {
  const { store, dir: d } = await openWatched(t, false);
  await adoptSample(store, d);
  for (let i = 0; i < 3; i++) await collapse(t, store, addFile(`file-${i}`));
  assert.deepEqual(store.primeMeasures.counts, { walked: 3, vouched: 0 });
});

test('a write into one of PRIME\'s layers is observed: the boundary walks again and refuses FOREIGN_WRITE', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  const first = await collapse(t, store, sampleChange);
  await collapse(t, store, addFile('second'));
  assert.deepEqual(store.primeMeasures.counts, { walked: 1, vouched: 1 });
  const made = await makeCandidate(t, store, 'project', addFile('third'));
  // Below the top: the first collapse's layer is still in PRIME's stack.
  await appendFile(join(layerDir(store.layout, first.generationId), 'README.md'), 'foreign\n');
  await assert.rejects(collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }), (e) => isCollapseError(e, 'FOREIGN_WRITE'));
  assert.deepEqual(store.primeMeasures.counts, { walked: 2, vouched: 1 }, 'not vouched for: walked');
  assert.equal(getRoot(store.db, 'project')!.generation, 3, 'PRIME stayed where it was');
});

test('a write during the measuring walk is not vouched for afterwards', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  const first = await collapse(t, store, sampleChange);
  const made = await makeCandidate(t, store, 'project', addFile('second'));
  // At the boundary of the second collapse the watcher's state of the new stack is taken first; this
  // write into the stack after that moment must make the next boundary walk.
  await collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }, {
    afterStep: async (step) => {
      if (step === 'before-exchange') await appendFile(join(layerDir(store.layout, first.generationId), 'README.md'), 'late\n');
    },
  });
  assert.deepEqual(store.primeMeasures.counts, { walked: 1, vouched: 1 });
  const third = await makeCandidate(t, store, 'project', addFile('third'));
  await assert.rejects(collapseRoot(store, { rootName: 'project', candidateDir: third.candidate.dir, base: third.base }), (e) => isCollapseError(e, 'FOREIGN_WRITE'));
  assert.deepEqual(store.primeMeasures.counts, { walked: 2, vouched: 1 }, 'the write after the state was taken made the next boundary walk');
});

test('writes outside PRIME\'s layers (another directory of the same filesystem) do not cost a walk', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  await collapse(t, store, sampleChange);
  for (let i = 0; i < 50; i++) await writeFile(join(d, `elsewhere-${i}`), 'x'.repeat(i));
  await collapse(t, store, addFile('second'));
  assert.deepEqual(store.primeMeasures.counts, { walked: 1, vouched: 1 });
});

test('a restarted store has a new watcher: its first boundary walks PRIME (the restart is a gap)', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  await collapse(t, store, sampleChange);
  await collapse(t, store, addFile('second'));
  store.close();
  const { store: again } = await openStore({ dir: store.dir, watchPrime: true });
  t.after(() => again.close());
  await collapse(t, again, addFile('third'));
  await collapse(t, again, addFile('fourth'));
  assert.deepEqual(again.primeMeasures.counts, { walked: 1, vouched: 1 }, 'walked once after the restart, then vouched');
  assert.equal(await livePrimeDigest(again), getRoot(again.db, 'project')!.digest);
});

test('a watcher that stops observing vouches for nothing: the boundary walks', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  await collapse(t, store, sampleChange);
  store.primeMeasures.watcher!.close();
  await collapse(t, store, addFile('second'));
  assert.deepEqual(store.primeMeasures.counts, { walked: 2, vouched: 0 });
});

test('a walk of PRIME recorded outside a commit never replaces the measurement of a newer generation', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  const old = await checkRouting(store, 'project');
  const start = store.primeMeasures.begin(old.layers); // a background walk of generation 1 begins
  await collapse(t, store, sampleChange); // meanwhile a commit records generation 2's measurement
  const now = await checkRouting(store, 'project');
  assert.equal(store.primeMeasures.recordIfCurrent(old.root.rootKey, old.generationId, start, old.root.digest), false, 'the older walk is dropped');
  assert.equal(store.primeMeasures.vouch(now.root.rootKey, now.generationId)?.digest, now.root.digest, "the commit's measurement is kept");
  const again = store.primeMeasures.begin(now.layers);
  assert.equal(store.primeMeasures.recordIfCurrent(now.root.rootKey, now.generationId, again, now.root.digest), true, 'a walk of the generation measured is recorded');
  assert.equal(store.primeMeasures.vouch(now.root.rootKey, now.generationId)?.digest, now.root.digest);
});

test('a re-hash of PRIME waits for a measurement of the same generation already running, and is vouched for by it', async (t) => {
  const { store, dir: d } = await openWatched(t);
  await adoptSample(store, d);
  const route = await checkRouting(store, 'project');
  const start = store.primeMeasures.begin(route.layers);
  let release = (): void => undefined;
  const gate = new Promise<void>((r) => (release = r));
  // A measurement as the background upkeep makes it (background-compaction.ts remeasurePrime), held open.
  const measured = (async (): Promise<void> => {
    await gate;
    const [digest] = await cleanDigests([route.payloadPath], store.dir);
    store.primeMeasures.recordIfCurrent(route.root.rootKey, route.generationId, start, digest);
  })();
  void store.primeMeasures.walkingPrime(route.root.rootKey, route.generationId, measured);
  const rehash = store.primeMeasures.rehash([route], store.dir);
  await delay(50);
  assert.deepEqual(store.primeMeasures.counts, { walked: 0, vouched: 0 }, 'the re-hash has not walked while the measurement runs');
  release();
  const [r] = await rehash;
  assert.equal(r?.source.by, 'watcher');
  assert.equal(r?.digest, route.root.digest);
  assert.deepEqual(store.primeMeasures.counts, { walked: 0, vouched: 1 });
});
