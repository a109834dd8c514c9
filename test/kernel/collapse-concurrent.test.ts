// Two collapses at the commit boundary at the same moment, on one store (the node-agent runs its Collapses
// one at a time, so this is the concurrency the store itself must hold: the same code without the agent's
// queue). Both are prepared and staged from the same PRIME and held at a barrier until both are staged;
// then both enter the commit together. Exactly one commits; the other is refused PRIME_MOVED by name, and
// PRIME is exactly the winner's generation — the loser changed no Root, not even one it alone named — with
// no intent, staging or unrecorded generation left behind. Both on one Root, and on two Roots sharing one.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestDigest } from '../../core/manifest.js';
import { collapseRoots, type CollapseRootRequest } from '../../node-agent/collapses/collapse-root.js';
import type { CollapseStep } from '../../node-agent/collapses/collapse-intent.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { storeCandidate, type RootChange } from '../../node-agent/store/candidates.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { listIntents } from '../../node-agent/store/store-records.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { requireRoot } from '../support/require-root.js';
import { leftovers, rootChangeOf } from './collapse-fixtures.js';
import { makeSampleTree, openTestStore, scratch } from './store-fixtures.js';

requireRoot('the concurrent collapse test (a real store and renameat2 exchange)');

const REPETITIONS = 5;

/** Resolves each waiter once `n` have arrived (both collapses staged), so they enter the commit together. */
function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return () => {
    if (++arrived === n) open();
    return opened;
  };
}

interface Contender {
  name: string;
  reqs: CollapseRootRequest[];
  /** Each Root's digest after this collapse. */
  next: Map<string, string>;
}

async function setUp(t: TestContext, roots: string[], contenders: { name: string; roots: string[] }[]): Promise<{ store: Store; contenders: Contender[]; base: Map<string, string> }> {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  for (const name of roots) {
    await makeSampleTree(join(s.dir, name));
    await adoptRoot(store, { name, hostPath: join(s.dir, name) });
  }
  const base = new Map<string, string>();
  for (const name of roots) base.set(name, (await checkRouting(store, name)).root.digest);
  const out: Contender[] = [];
  for (const c of contenders) {
    const changes: RootChange[] = [];
    const reqs: Omit<CollapseRootRequest, 'candidateDir'>[] = [];
    const next = new Map<string, string>();
    for (const root of c.roots) {
      const made = await rootChangeOf(t, store, root, (dir) => writeFile(join(dir, 'README.md'), `${root} written by ${c.name}\n`));
      changes.push(made.change);
      reqs.push({ rootName: root, base: made.base });
      next.set(root, made.nextDigest);
    }
    const candidate = await storeCandidate(store.layout.candidates, changes);
    out.push({ name: c.name, reqs: reqs.map((r) => ({ ...r, candidateDir: candidate.dir })), next });
  }
  return { store, contenders: out, base };
}

/** Both collapses staged, then released into the commit at the same moment; what each ended with. */
async function race(store: Store, contenders: Contender[]): Promise<{ won: Contender[]; lost: { c: Contender; code: unknown; message: string }[]; exchanges: string[] }> {
  const staged = barrier(contenders.length);
  const exchanges: string[] = [];
  const settled = await Promise.allSettled(
    contenders.map((c) => {
      const lastStaging = `${c.reqs.length}`;
      let verified = 0;
      return collapseRoots(store, c.reqs, {
        afterStep: async (step: CollapseStep) => {
          if (step === 'after-verify' && String(++verified) === lastStaging) await staged();
          if (step === 'after-exchange') exchanges.push(c.name);
        },
      });
    }),
  );
  const won: Contender[] = [];
  const lost: { c: Contender; code: unknown; message: string }[] = [];
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') won.push(contenders[i]!);
    else lost.push({ c: contenders[i]!, code: (r.reason as { code?: unknown }).code, message: (r.reason as Error).message });
  });
  return { won, lost, exchanges };
}

async function primeDigest(store: Store, root: string): Promise<{ generation: number; walked: string; recorded: string }> {
  const route = await checkRouting(store, root);
  return { generation: route.root.generation, walked: manifestDigest(walkTreeSync(route.payloadPath).manifest), recorded: route.root.digest };
}

for (let rep = 1; rep <= REPETITIONS; rep++) {
  test(`#${rep}: two collapses of one Root from the same PRIME enter the commit together: one commits, the other is PRIME_MOVED`, async (t) => {
    const { store, contenders } = await setUp(t, ['project'], [{ name: 'a', roots: ['project'] }, { name: 'b', roots: ['project'] }]);
    const { won, lost, exchanges } = await race(store, contenders);
    assert.equal(won.length, 1, `exactly one commits; lost: ${JSON.stringify(lost.map((l) => l.message))}`);
    assert.equal(lost.length, 1);
    assert.equal(lost[0]!.code, 'PRIME_MOVED', lost[0]!.message);
    assert.deepEqual(exchanges, [won[0]!.name], 'only the winner exchanged live/');
    const prime = await primeDigest(store, 'project');
    assert.deepEqual(prime, { generation: 2, walked: won[0]!.next.get('project'), recorded: won[0]!.next.get('project') }, 'PRIME is exactly the winner\'s generation');
    assert.deepEqual(listIntents(store.db, 'collapse'), []);
    assert.deepEqual(await leftovers(store), []);
  });
}

for (let rep = 1; rep <= REPETITIONS; rep++) {
  test(`#${rep}: collapses of Roots [x, y] and [y, z] enter the commit together: one commits, the other moves neither of its Roots`, async (t) => {
    const { store, contenders, base } = await setUp(t, ['x', 'y', 'z'], [{ name: 'xy', roots: ['x', 'y'] }, { name: 'yz', roots: ['y', 'z'] }]);
    const { won, lost, exchanges } = await race(store, contenders);
    assert.equal(won.length, 1, `exactly one commits; lost: ${JSON.stringify(lost.map((l) => l.message))}`);
    assert.equal(lost[0]?.code, 'PRIME_MOVED', lost[0]?.message);
    assert.deepEqual(exchanges, [won[0]!.name]);
    const winner = won[0]!;
    for (const root of ['x', 'y', 'z']) {
      const want = winner.next.get(root) ?? base.get(root);
      assert.deepEqual(await primeDigest(store, root), { generation: winner.next.has(root) ? 2 : 1, walked: want, recorded: want }, `Root ${root}`);
    }
    assert.deepEqual(listIntents(store.db, 'collapse'), []);
    assert.deepEqual(await leftovers(store), []);
  });
}
