// A collapse of several Roots commits them in one exchange of live/ or not at all: both host paths show
// the change after it; a refusal at the boundary, or a crash before the exchange, leaves both at their
// bases; a crash after the exchange is rolled forward for both. Nothing is left behind in any case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { collapseRoots } from '../../node-agent/collapses/collapse-root.js';
import { CollapseError } from '../../node-agent/collapses/collapse-errors.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { storeCandidate } from '../../node-agent/store/candidates.js';
import { leftovers, rootChangeOf } from './collapse-fixtures.js';
import { makeSampleTree, openTestStore, scratch } from './store-fixtures.js';
import type { TestContext } from 'node:test';

async function twoRoots(t: TestContext): Promise<{ store: Store; hosts: [string, string]; reqs: Parameters<typeof collapseRoots>[1] }> {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const hosts: [string, string] = [join(s.dir, 'app'), join(s.dir, 'lib')];
  for (const [name, host] of [['app', hosts[0]], ['lib', hosts[1]]] as const) {
    await makeSampleTree(host);
    await adoptRoot(store, { name, hostPath: host });
  }
  const app = await rootChangeOf(t, store, 'app', (next) => writeFile(join(next, 'README.md'), 'app changed\n'));
  const lib = await rootChangeOf(t, store, 'lib', (next) => writeFile(join(next, 'README.md'), 'lib changed\n'));
  const candidate = await storeCandidate(store.layout.candidates, [app.change, lib.change]);
  return {
    store,
    hosts,
    reqs: [
      { rootName: 'app', candidateDir: candidate.dir, base: app.base },
      { rootName: 'lib', candidateDir: candidate.dir, base: lib.base },
    ],
  };
}

const readme = (host: string): Promise<string> => readFile(join(host, 'README.md'), 'utf8');

test('two Roots move together in one exchange', async (t) => {
  const { store, hosts, reqs } = await twoRoots(t);
  const before = await readme(hosts[0]);
  let liveAtAuthorize: string[] = [];
  const results = await collapseRoots(store, reqs, {}, async (h) => {
    assert.deepEqual([...h.prime.keys()], ['app', 'lib'], 'the boundary re-hashes every Root');
    assert.deepEqual([...h.staged.keys()], ['app', 'lib']);
    liveAtAuthorize = [await readlink(join(store.layout.live, getRoot(store.db, 'app')!.rootKey)), await readlink(join(store.layout.live, getRoot(store.db, 'lib')!.rootKey))];
  });
  assert.deepEqual(results.map((r) => [r.root.name, r.fromGeneration, r.toGeneration]), [['app', 1, 2], ['lib', 1, 2]]);
  assert.notEqual(before, 'app changed\n');
  assert.equal(await readme(hosts[0]), 'app changed\n');
  assert.equal(await readme(hosts[1]), 'lib changed\n');
  assert.ok(liveAtAuthorize.every((l) => l.includes('generations/')), 'links existed before');
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  assert.deepEqual(await leftovers(store), []);
});

test('a refusal at the boundary leaves both Roots at their bases', async (t) => {
  const { store, hosts, reqs } = await twoRoots(t);
  const before = [await readme(hosts[0]), await readme(hosts[1])];
  await assert.rejects(collapseRoots(store, reqs, {}, () => {
    throw new CollapseError('STAGED_UNTESTED', 'refused by the test');
  }), /refused by the test/);
  assert.deepEqual([await readme(hosts[0]), await readme(hosts[1])], before);
  assert.equal(getRoot(store.db, 'app')!.generation, 1);
  assert.equal(getRoot(store.db, 'lib')!.generation, 1);
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  assert.deepEqual(await leftovers(store), []);
});

for (const [step, moved] of [['before-exchange', false], ['after-exchange', true]] as const) {
  test(`a failure at "${step}" settles both Roots the same way (${moved ? 'rolled forward' : 'rolled back'})`, async (t) => {
    const { store, hosts, reqs } = await twoRoots(t);
    const before = [await readme(hosts[0]), await readme(hosts[1])];
    const run = collapseRoots(store, reqs, {
      afterStep: (s) => {
        if (s === step) throw new Error(`stopped at ${s}`);
      },
    });
    if (moved) {
      const results = await run; // settled by the same recovery a restart runs
      assert.deepEqual(results.map((r) => r.toGeneration), [2, 2]);
      assert.deepEqual([await readme(hosts[0]), await readme(hosts[1])], ['app changed\n', 'lib changed\n']);
    } else {
      await assert.rejects(run, /stopped at before-exchange/);
      assert.deepEqual([await readme(hosts[0]), await readme(hosts[1])], before);
    }
    assert.equal(getRoot(store.db, 'app')!.generation, moved ? 2 : 1);
    assert.equal(getRoot(store.db, 'lib')!.generation, moved ? 2 : 1);
    assert.deepEqual(listIntents(store.db, 'collapse'), []);
    assert.deepEqual(await leftovers(store), []);
  });
}
