// A SIGKILL crash during a collapse of two Roots: a child process runs the collapse and is killed at every
// step it reaches, including between the two Roots' staging. After recoverCollapses both Roots are at one
// consistent generation each — both at their base before the exchange, both at the new generation from it
// on, never one of each — the database agrees with live/ and the walked bytes, and nothing is left behind.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestDigest } from '../../core/manifest.js';
import { collapseRoots, type CollapseRootRequest } from '../../node-agent/collapses/collapse-root.js';
import type { CollapseStep } from '../../node-agent/collapses/collapse-intent.js';
import { recoverCollapses } from '../../node-agent/collapses/recover-collapses.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { storeCandidate } from '../../node-agent/store/candidates.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { listIntents } from '../../node-agent/store/store-records.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { requireRoot } from '../support/require-root.js';
import { leftovers, rootChangeOf } from './collapse-fixtures.js';
import { makeSampleTree, scratch } from './store-fixtures.js';

requireRoot('the multi-Root collapse crash test (a real store and renameat2 exchange)');

const child = fileURLToPath(new URL('./collapse-multi-child.js', import.meta.url));
const ROOTS = ['app', 'lib'] as const;

/** Every step a two-Root collapse reaches, in order: the per-Root staging steps once per Root. */
const SEQUENCE: [CollapseStep, number][] = [
  ['after-intent', 1],
  ['after-stage', 1],
  ['after-verify', 1],
  ['after-stage', 2],
  ['after-verify', 2],
  ['after-layer-publish', 1],
  ['after-layer-publish', 2],
  ['after-marker-sync', 1],
  ['before-exchange', 1],
  ['after-exchange', 1],
  ['after-db', 1],
];
/** From the exchange on, recovery rolls forward. */
const rolledForward = (step: CollapseStep): boolean => step === 'after-exchange' || step === 'after-db';

interface Fixture {
  dir: string;
  hosts: Record<(typeof ROOTS)[number], string>;
  reqs: CollapseRootRequest[];
  digests: Record<string, { base: string; next: string }>;
}

/** Two adopted Roots and one candidate changing both; the store is closed again. */
async function twoRoots(t: TestContext): Promise<Fixture> {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const { store } = await openStore({ dir });
  try {
    const hosts = { app: join(s.dir, 'app'), lib: join(s.dir, 'lib') };
    for (const name of ROOTS) {
      await makeSampleTree(hosts[name]);
      await adoptRoot(store, { name, hostPath: hosts[name] });
    }
    const changes = await Promise.all(ROOTS.map((name) => rootChangeOf(t, store, name, (next) => writeFile(join(next, 'README.md'), `${name} changed\n`))));
    const candidate = await storeCandidate(store.layout.candidates, changes.map((c) => c.change));
    return {
      dir,
      hosts,
      reqs: ROOTS.map((name, i) => ({ rootName: name, candidateDir: candidate.dir, base: changes[i]!.base })),
      digests: Object.fromEntries(ROOTS.map((name, i) => [name, { base: changes[i]!.base.digest, next: changes[i]!.nextDigest }])),
    };
  } finally {
    store.close();
  }
}

function collapseAndCrash(f: Fixture, step: CollapseStep, occurrence: number): Promise<{ signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, f.dir, JSON.stringify(f.reqs), step, String(occurrence)], (err, stdout) => resolve({ signal: (err as { signal?: NodeJS.Signals } | null)?.signal ?? null, stdout }));
  });
}

/** Both Roots as the store, live/ and the walked bytes show them: generation, and whether the bytes are the base's or the new. */
async function settled(store: Store, f: Fixture): Promise<{ generation: number; bytes: 'base' | 'next' | 'other' }[]> {
  const out = [];
  for (const name of ROOTS) {
    const route = await checkRouting(store, name); // the database matches live/ and the markers
    const digest = manifestDigest(walkTreeSync(route.payloadPath).manifest);
    assert.equal(route.root.digest, digest, `${name}: the recorded digest is not what PRIME holds`);
    const d = f.digests[name]!;
    out.push({ generation: route.root.generation, bytes: digest === d.base ? ('base' as const) : digest === d.next ? ('next' as const) : ('other' as const) });
  }
  return out;
}

test('a two-Root collapse reaches exactly the steps the crash test kills at', async (t) => {
  const f = await twoRoots(t);
  const { store } = await openStore({ dir: f.dir });
  t.after(() => store.close());
  const seen: CollapseStep[] = [];
  await collapseRoots(store, f.reqs, { afterStep: (s) => void seen.push(s) });
  const counted = seen.map((s, i) => [s, seen.slice(0, i + 1).filter((x) => x === s).length]);
  assert.deepEqual(counted, SEQUENCE);
  assert.deepEqual(await settled(store, f), [{ generation: 2, bytes: 'next' }, { generation: 2, bytes: 'next' }]);
});

for (const [step, occurrence] of SEQUENCE) {
  const forward = rolledForward(step);
  test(`SIGKILL at "${step}" #${occurrence}: both Roots recover to ${forward ? 'the new' : 'their base'} generation, never a mix`, async (t) => {
    const f = await twoRoots(t);
    const { signal, stdout } = await collapseAndCrash(f, step, occurrence);
    assert.equal(signal, 'SIGKILL', `the child was not killed at ${step} #${occurrence}: ${stdout}`);

    const { store } = await openStore({ dir: f.dir });
    t.after(() => store.close());
    const outcomes = await recoverCollapses(store);
    if (step === 'after-db') assert.deepEqual(outcomes, [], 'the intent went with the rows');
    else assert.deepEqual(outcomes.map((o) => o.outcome), [forward ? 'committed' : 'rolled-back']);

    const want = forward ? { generation: 2, bytes: 'next' } : { generation: 1, bytes: 'base' };
    assert.deepEqual(await settled(store, f), [want, want]);
    for (const name of ROOTS) assert.equal(await readFile(join(f.hosts[name], 'README.md'), 'utf8') === `${name} changed\n`, forward, `${name}'s host path`);
    assert.deepEqual(listIntents(store.db, 'collapse'), []);
    assert.deepEqual(await leftovers(store), []);
  });
}
