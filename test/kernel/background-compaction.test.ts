// Compaction off the collapse's path (node-agent/collapses/background-compaction.ts): a deep PRIME is
// compacted into a sealed full tree without changing PRIME, the next collapse stacks over it (shallow again)
// and is still judged against the same generation; a compaction changed beneath its seal is caught at the
// commit boundary; a crash at every step leaves either nothing (removed at open) or a published compaction.
// Everything runs on a fresh ext4 filesystem on a loop device: nothing else on the machine writes there, so
// what the watcher vouches for does not depend on the machine (prime-measures.test.ts does the same).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { manifestDigest } from '../../core/manifest.js';
import { COMPACTION_STEPS, compactPrime, enableBackgroundCompaction, type BackgroundCompactor } from '../../node-agent/collapses/background-compaction.js';
import { isCollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { storeSettled } from '../../node-agent/store/store-serial.js';
import { getCompaction } from '../../node-agent/store/compaction-records.js';
import { readMarker } from '../../node-agent/store/generation-marker.js';
import { compactionIdFor, withBeneath } from '../../node-agent/store/generation-stack.js';
import { mountPoints } from '../../node-agent/store/mount-table.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { beginRelease, releaseRoot } from '../../node-agent/store/release-root.js';
import { layoutOf, payloadDir } from '../../node-agent/store/store-layout.js';
import { holdPayload, withPayload } from '../../node-agent/store/payload-holds.js';
import { MNT_DETACH, umount2 } from '../../native/index.js';
import { getGeneration, getRoot } from '../../node-agent/store/store-records.js';
import { cachedManifest } from '../../node-agent/store/manifest-cache.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { adoptSample, makeCandidate, type MadeCandidate } from './collapse-fixtures.js';
import { requireRoot } from '../support/require-root.js';
import { loopExt4 } from './loop-ext4.js';

requireRoot('background compaction (overlay and bind mounts, fanotify, loop devices, ext4 mounts)');
const fs = loopExt4('wl-compaction-');
before(() => fs.mount());
after(() => fs.unmount());

let serial = 0;
/** A fresh directory on the test filesystem, for a store and the Root's host tree. */
function scratch(): { dir: string } {
  const dir = join(fs.mnt, `case${++serial}`);
  mkdirSync(dir);
  return { dir };
}

const walkDigest = (path: string): string => manifestDigest(walkTreeSync(path).manifest);
const child = fileURLToPath(new URL('./compaction-child.js', import.meta.url));

async function open(t: TestContext, dir: string, watchPrime: boolean): Promise<Store> {
  const { store, watcherError } = await openStore({ dir, watchPrime });
  assert.equal(watcherError, undefined, 'the PRIME watcher starts here (root, ext4)');
  t.after(() => store.close());
  return store;
}

const writeOne = (n: number) => (next: string) => writeFile(join(next, `file-${n}`), `${n}\n`);

async function collapse(store: Store, made: MadeCandidate, o: { settle: boolean } = { settle: true }): Promise<string> {
  const r = await collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base });
  assert.equal(r.digest, made.nextDigest);
  if (o.settle) await storeSettled(store.dir); // the unmounts of what the commit replaced have run
  return r.generationId;
}

/** Adopts the sample and collapses `n` one-file changes: PRIME is then a stack of n + 1. */
async function deepen(t: TestContext, store: Store, dir: string, n: number): Promise<string> {
  const host = await adoptSample(store, dir);
  for (let k = 1; k <= n; k++) await collapse(store, await makeCandidate(t, store, 'project', writeOne(k)));
  return host;
}

test('a deep PRIME is compacted without moving PRIME; a candidate forked before it collapses over the compaction, two layers deep', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), true);
  const host = await deepen(t, store, s.dir, 4);
  const before = await checkRouting(store, 'project');
  assert.equal(before.layers.length, 5);
  const early = await makeCandidate(t, store, 'project', (next) => writeFile(join(next, 'early'), 'forked before the compaction\n'));

  const o = await compactPrime(store, 'project', { atDepth: 5 });
  assert.equal(o.outcome, 'compacted', JSON.stringify(o));
  const id = compactionIdFor(before.generationId);
  assert.ok(getCompaction(store.db, before.generationId), 'the row publishes it');
  assert.ok(mountPoints().includes(payloadDir(store.layout, id)), 'sealed by a read-only bind mount');
  await assert.rejects(appendFile(join(payloadDir(store.layout, id), 'README.md'), 'x'), { code: 'EROFS' });
  assert.equal(walkDigest(payloadDir(store.layout, id)), before.root.digest, 'the same bytes as the generation it compacts');
  const after = await checkRouting(store, 'project');
  assert.deepEqual([after.generationId, after.root.generation, after.root.digest, after.layers], [before.generationId, before.root.generation, before.root.digest, before.layers], 'PRIME did not move');
  assert.equal(store.primeMeasures.vouchCompaction(before.generationId), before.root.digest, 'the watcher vouches for the walk of it');

  const walked = store.primeMeasures.counts.walked;
  const next = await collapse(store, early); // not PRIME_MOVED: the generation it was forked from is still PRIME
  assert.deepEqual(readMarker(store.layout, next)?.layers, [next, id], 'stacked over the compaction');
  assert.equal(store.primeMeasures.counts.walked, walked, 'the compaction left PRIME measured (its links change no byte, owner or mode of PRIME): this boundary did not walk it');
  assert.equal(walkDigest(host), early.nextDigest);
  assert.equal(await withPayload(store, before.generationId, walkDigest), before.root.digest, 'the compacted generation keeps its own stack and bytes');
  // PRIME now reads the compaction, not the adopted tree below the old stack: that seal goes, the compaction's stays.
  const adopted = payloadDir(store.layout, getGeneration(store.db, after.root.rootKey, 1)!.id);
  assert.ok(mountPoints().includes(payloadDir(store.layout, id)) && !mountPoints().includes(adopted), 'only the seal PRIME reads is mounted');
  const held = holdPayload(store, getGeneration(store.db, after.root.rootKey, 1)!.id);
  assert.ok(mountPoints().includes(adopted), 'a reader\'s hold seals it again');
  await assert.rejects(appendFile(join(adopted, 'README.md'), 'x'), { code: 'EROFS' });
  assert.equal(walkDigest(adopted), getGeneration(store.db, after.root.rootKey, 1)!.digest, 'with the bytes it was adopted with');
  held.release();
  assert.ok(!mountPoints().includes(adopted), 'and its release unseals it');
  // And it is shallow from there on: one more collapse is three deep.
  const third = await collapse(store, await makeCandidate(t, store, 'project', writeOne(9)));
  assert.deepEqual(readMarker(store.layout, third)?.layers, [third, next, id]);
  // A return to the compacted generation is its compaction under an empty layer: two deep, not six.
  const now = getRoot(store.db, 'project')!;
  const back = await collapseRoot(store, { rootName: 'project', candidateDir: '', base: { generation: now.generation, digest: now.digest }, returnTo: before.root.generation });
  assert.equal(back.digest, before.root.digest);
  assert.deepEqual(readMarker(store.layout, back.generationId)?.layers, [back.generationId, id]);
  assert.equal(walkDigest(host), before.root.digest);
});

test('a compaction changed beneath its seal is caught at the boundary: the stack over it is walked and refused STAGED_UNTESTED', async (t) => {
  for (const watchPrime of [true, false]) {
    const s = scratch();
    const store = await open(t, join(s.dir, `store-${watchPrime}`), watchPrime);
    await deepen(t, store, s.dir, 3);
    const prime = await checkRouting(store, 'project');
    assert.equal((await compactPrime(store, 'project', { atDepth: 4 })).outcome, 'compacted');
    const made = await makeCandidate(t, store, 'project', writeOne(7));
    await withBeneath(store.dir, (beneath) => writeFile(join(beneath(payloadDir(store.layout, compactionIdFor(prime.generationId))), 'planted'), 'x\n'));
    await assert.rejects(collapseRoot(store, { rootName: 'project', candidateDir: made.candidate.dir, base: made.base }), (e) => isCollapseError(e, 'STAGED_UNTESTED'), `watcher ${watchPrime}`);
    assert.equal(getRoot(store.db, 'project')!.generation, prime.root.generation, 'PRIME did not move');
  }
});

test('with no watcher a stack over a compaction is walked at the boundary, and commits when it has the digest', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), false);
  const host = await deepen(t, store, s.dir, 3);
  assert.equal((await compactPrime(store, 'project', { atDepth: 4 })).outcome, 'compacted');
  const made = await makeCandidate(t, store, 'project', writeOne(7));
  const next = await collapse(store, made);
  assert.equal(readMarker(store.layout, next)?.layers?.length, 2);
  assert.equal(walkDigest(host), made.nextDigest);
});

test('nothing to compact is skipped by name: a shallow stack, a full generation, a compacted one', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), false);
  await adoptSample(store, s.dir);
  assert.match(JSON.stringify(await compactPrime(store, 'project', { atDepth: 2 })), /is a full generation/);
  await collapse(store, await makeCandidate(t, store, 'project', writeOne(1)));
  assert.match(JSON.stringify(await compactPrime(store, 'project', { atDepth: 3 })), /is 2 deep, under 3/);
  assert.equal((await compactPrime(store, 'project', { atDepth: 2 })).outcome, 'compacted');
  assert.match(JSON.stringify(await compactPrime(store, 'project', { atDepth: 2 })), /compacted already/);
  assert.match(JSON.stringify(await compactPrime(store, 'nothing', { atDepth: 2 })), /not in the store/);
});

test('a Root with nothing to compact costs no read of its manifest (at agent start the upkeep asks about every Root)', async (t) => {
  const s = scratch();
  const dir = join(s.dir, 'store');
  const first = await openStore({ dir });
  await adoptSample(first.store, s.dir);
  await collapse(first.store, await makeCandidate(t, first.store, 'project', writeOne(1)));
  const { rootKey, generation } = getRoot(first.store.db, 'project')!;
  first.store.close();
  const store = await open(t, dir, false); // a new connection: nothing is cached
  const gen = getGeneration(store.db, rootKey, generation)!;
  assert.equal(cachedManifest(store.db, gen.id), undefined, 'opening the store read no manifest');
  assert.match(JSON.stringify(await compactPrime(store, 'project', { atDepth: 3 })), /is 2 deep, under 3/);
  assert.equal(cachedManifest(store.db, gen.id), undefined, 'the skip read the manifest');
  assert.equal((await compactPrime(store, 'project', { atDepth: 2 })).outcome, 'compacted');
  assert.ok(cachedManifest(store.db, gen.id), 'the compaction reads it');
});

test('the background compactor compacts after the collapse that makes PRIME deep enough, and stops when closed', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), true);
  const outcomes: string[] = [];
  const backlog: number[] = [];
  const compactor = enableBackgroundCompaction(store, { atDepth: 4, onOutcome: (_, o) => outcomes.push(o.outcome), onBacklog: (n) => backlog.push(n) });
  await deepen(t, store, s.dir, 3); // the third collapse makes a stack of 4
  assert.ok(backlog.some((n) => n > 0), `the backlog showed the requests: ${backlog.join(', ')}`);
  await compactor.idle();
  assert.equal(backlog.at(-1), 0, `the backlog is empty once idle: ${backlog.join(', ')}`);
  assert.equal(compactor.backlog(), 0);
  const prime = await checkRouting(store, 'project');
  assert.ok(getCompaction(store.db, prime.generationId), `compacted: ${outcomes.join(', ')}`);
  assert.equal(outcomes.filter((o) => o === 'compacted').length, 1);
  const next = await collapse(store, await makeCandidate(t, store, 'project', writeOne(8)));
  assert.equal(readMarker(store.layout, next)?.layers?.length, 2);
  await compactor.idle();
  const seen = outcomes.length;
  await compactor.close();
  compactor.request('project');
  await compactor.idle();
  assert.equal(outcomes.length, seen, 'a closed compactor takes no more requests');
});

test('a Root asked for just as the upkeep finishes its last one is not dropped', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), true);
  await adoptSample(store, s.dir);
  const seen: string[] = [];
  let again = true;
  const compactor: BackgroundCompactor = enableBackgroundCompaction(store, {
    onOutcome: (root) => {
      seen.push(root);
      // After the drain's last look at what waits, before it has ended.
      if (again) queueMicrotask(() => compactor.request(root));
      again = false;
    },
  });
  compactor.request('project');
  await compactor.idle();
  assert.deepEqual(seen, ['project', 'project'], 'the second request was served');
  assert.equal(compactor.backlog(), 0);
});

test('closing the upkeep takes the Roots it drops off the backlog at once', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), true);
  await adoptSample(store, s.dir);
  const backlog: number[] = [];
  const compactor = enableBackgroundCompaction(store, { onBacklog: (n) => backlog.push(n) });
  compactor.request('project'); // taken at once: the upkeep works on it
  compactor.request('another'); // waits behind it
  assert.equal(backlog.at(-1), 2);
  const closing = compactor.close();
  assert.equal(backlog.at(-1), 1, `the waiting Root left the backlog when it was dropped: ${backlog.join(', ')}`);
  await closing;
  assert.equal(backlog.at(-1), 0, `nothing is left once closed: ${backlog.join(', ')}`);
});

test('the upkeep measures a freshly adopted PRIME in the background: the first collapse\'s boundary does not walk it', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), true);
  const host = await adoptSample(store, s.dir);
  const upkeep = enableBackgroundCompaction(store, { atDepth: 0 }); // measuring only: compaction off
  upkeep.request('project'); // what the agent does after an adoption, and for every Root when it starts
  await upkeep.idle();
  const made = await makeCandidate(t, store, 'project', writeOne(1));
  await collapse(store, made, { settle: false }); // counted before the upkeep the collapse requests measures the new PRIME
  assert.deepEqual(store.primeMeasures.counts, { walked: 0, vouched: 1 }, 'the boundary took PRIME from the background measurement');
  assert.equal(walkDigest(host), made.nextDigest);
  for (let k = 2; k <= 3; k++) await collapse(store, await makeCandidate(t, store, 'project', writeOne(k)));
  await upkeep.idle();
  const prime = await checkRouting(store, 'project');
  assert.equal(prime.layers.length, 4);
  assert.equal(getCompaction(store.db, prime.generationId), undefined, 'with compaction off, nothing is compacted in the background');
});

test('a released Root takes its compaction\'s seal with it; a compaction finishing after the release starts publishes nothing', async (t) => {
  const s = scratch();
  const store = await open(t, join(s.dir, 'store'), false);
  const host = await deepen(t, store, s.dir, 2);
  const prime = await checkRouting(store, 'project');
  assert.equal((await compactPrime(store, 'project', { atDepth: 3 })).outcome, 'compacted');
  const id = compactionIdFor(prime.generationId);
  assert.ok(mountPoints().includes(payloadDir(store.layout, id)));
  await collapse(store, await makeCandidate(t, store, 'project', writeOne(3)));
  // A compaction whose build ends after the release began: its publication finds the Root no longer Ready.
  const next = await checkRouting(store, 'project');
  const late = compactPrime(store, 'project', { atDepth: 2, afterStep: async (step) => void (step === 'after-build' && (await beginRelease(store, 'project'))) });
  assert.match(JSON.stringify(await late), /no longer Ready/);
  assert.ok(!readdirSync(store.layout.generations).includes(compactionIdFor(next.generationId)), 'nothing of it is left in generations/');
  assert.equal((await releaseRoot(store, 'project')).state, 'Released');
  assert.ok(!mountPoints().includes(payloadDir(store.layout, id)), 'the compaction is unmounted with the Root\'s payloads');
  assert.equal(walkDigest(host), next.root.digest, 'the host path has PRIME back as a plain directory');
});

function compactAndCrash(args: string[]): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, ...args], (err) => resolve((err as { signal?: NodeJS.Signals } | null)?.signal ?? null));
  });
}

for (const step of COMPACTION_STEPS) {
  test(`a crash at "${step}" of a compaction leaves ${step === 'after-row' ? 'it published and sealed again at open' : 'nothing once the store opens'}; PRIME never moved`, async (t) => {
    const s = scratch();
    const dir = join(s.dir, 'store');
    const first = await openStore({ dir });
    const host = await deepen(t, first.store, s.dir, 3);
    const prime = await checkRouting(first.store, 'project');
    first.store.close();
    assert.equal(await compactAndCrash([dir, 'project', '4', step]), 'SIGKILL');
    // What a reboot leaves of a published compaction: its directory and row, not its seal.
    if (step === 'after-row') umount2(payloadDir(layoutOf(dir), compactionIdFor(prime.generationId)), MNT_DETACH);

    const store = await open(t, dir, false);
    const id = compactionIdFor(prime.generationId);
    const route = await checkRouting(store, 'project');
    assert.deepEqual([route.generationId, route.root.digest], [prime.generationId, prime.root.digest], 'PRIME is the generation it was');
    assert.equal(walkDigest(host), prime.root.digest);
    assert.deepEqual(readdirSync(store.layout.staging).filter((n) => n.startsWith('compact-')), [], 'no staging left');
    if (step === 'after-row') {
      assert.ok(getCompaction(store.db, prime.generationId));
      assert.ok(mountPoints().includes(payloadDir(store.layout, id)), 'sealed again at open');
      assert.equal(walkDigest(payloadDir(store.layout, id)), prime.root.digest);
    } else {
      assert.equal(getCompaction(store.db, prime.generationId), undefined);
      assert.ok(!readdirSync(store.layout.generations).includes(id), 'the unpublished compaction is removed');
      assert.ok(!mountPoints().includes(payloadDir(store.layout, id)));
    }
    const made = await makeCandidate(t, store, 'project', writeOne(5));
    const next = await collapse(store, made);
    const beneath = step === 'after-row' ? [id] : readMarker(store.layout, prime.generationId)!.layers!;
    assert.deepEqual(readMarker(store.layout, next)?.layers, [next, ...beneath], 'over the compaction only when it was published');
    assert.equal(walkDigest(host), made.nextDigest);
  });
}
