// Crash injection: a child process runs a collapse and is SIGKILLed at each named step, twice each.
// After recoverCollapses, PRIME is exactly the base or exactly the new generation (by walk digest), the
// database and live/ agree (the route check passes), and nothing staged is left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestDigest } from '../../core/manifest.js';
import { COLLAPSE_STEPS } from '../../node-agent/collapses/collapse-intent.js';
import { recoverCollapses, sweepCollapseLeftovers } from '../../node-agent/collapses/recover-collapses.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { deleteIntent, getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { publishOwnerEdits } from '../../node-agent/collapses/owner-edits.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { adoptSample, closedStoreWithCandidate, leftovers } from './collapse-fixtures.js';
import { scratch } from './store-fixtures.js';

const child = fileURLToPath(new URL('./collapse-child.js', import.meta.url));

function collapseAndCrash(args: string[]): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, ...args], (err) => resolve((err as { signal?: NodeJS.Signals } | null)?.signal ?? null));
  });
}

/** Before the exchange a crash rolls back; from the exchange on it completes. */
const expectNew = new Set(['after-exchange', 'after-db']);

for (const step of COLLAPSE_STEPS) {
  for (const runNo of [1, 2]) {
    test(`a crash at "${step}" (run ${runNo}) recovers to exactly ${expectNew.has(step) ? 'the new' : 'the old'} generation`, async (t) => {
      const s = await scratch(t);
      const { dir, made, childArgs } = await closedStoreWithCandidate(t, s.dir);
      const signal = await collapseAndCrash(childArgs(step));
      assert.equal(signal, 'SIGKILL');

      const { store } = await openStore({ dir });
      t.after(() => store.close());
      const outcomes = await recoverCollapses(store);
      if (step === 'after-db') assert.deepEqual(outcomes, [], 'the intent went with the rows');
      else assert.deepEqual(outcomes.map((o) => o.outcome), [expectNew.has(step) ? 'committed' : 'rolled-back']);

      const route = await checkRouting(store, 'project'); // the database matches live/ and the markers
      const prime = manifestDigest(walkTreeSync(route.payloadPath).manifest);
      const want = expectNew.has(step) ? made.nextDigest : made.base.digest;
      assert.equal(prime, want, 'PRIME is exactly one generation');
      assert.equal(route.root.digest, want);
      assert.equal(route.root.generation, expectNew.has(step) ? 2 : 1);
      assert.equal(manifestDigest(walkTreeSync(join(s.dir, 'project')).manifest), want, "the host path (the owner's view, swapped in the same exchange) shows exactly PRIME");
      assert.deepEqual(listIntents(store.db, 'collapse'), []);
      assert.deepEqual(await leftovers(store), []);
    });
  }
}

for (const step of COLLAPSE_STEPS) {
  test(`an owner's edit being published, crashed at "${step}": PRIME is exactly one generation, the view keeps the edit, and the next pass converges`, async (t) => {
    const s = await scratch(t);
    const dir = join(s.dir, 'store');
    const host = join(s.dir, 'project');
    const first = await openStore({ dir });
    let base: string;
    try {
      await adoptSample(first.store, s.dir);
      base = getRoot(first.store.db, 'project')!.digest;
      await writeFile(join(host, 'README.md'), 'edited by its owner\n'); // through the host path: the owner's view
    } finally {
      first.store.close();
    }
    const edited = manifestDigest(walkTreeSync(host).manifest);
    assert.equal(await collapseAndCrash([dir, 'project', 'owner-edits', '0', '-', step]), 'SIGKILL');

    const { store } = await openStore({ dir });
    t.after(() => store.close());
    await recoverCollapses(store);
    const route = await checkRouting(store, 'project');
    const prime = manifestDigest(walkTreeSync(route.payloadPath).manifest);
    assert.equal(prime, expectNew.has(step) ? edited : base, 'PRIME is exactly the base or exactly the published edit');
    assert.equal(route.root.digest, prime);
    assert.equal(manifestDigest(walkTreeSync(host).manifest), edited, 'the owner still sees their edit');
    const again = await publishOwnerEdits(store, 'project');
    assert.equal(again.generation, expectNew.has(step) ? undefined : 2, 'published once, whichever side the crash fell');
    assert.equal(manifestDigest(walkTreeSync((await checkRouting(store, 'project')).payloadPath).manifest), edited);
    assert.deepEqual(await leftovers(store), []);
  });
}

test('fail-closed: a published generation whose payload changed before recovery is rolled back to the base', async (t) => {
  const s = await scratch(t);
  const { dir, made, childArgs } = await closedStoreWithCandidate(t, s.dir);
  assert.equal(await collapseAndCrash(childArgs('after-exchange')), 'SIGKILL');
  // PRIME is a read-only stack now: the only way to change it is inside its layer in the store.
  const published = readdirSync(join(dir, 'generations')).find((id) => id.includes('_g2_'))!;
  await writeFile(join(dir, 'generations', published, 'layer', 'docs', 'guide.md'), 'tampered after the crash\n');

  const { store } = await openStore({ dir });
  t.after(() => store.close());
  assert.deepEqual((await recoverCollapses(store)).map((o) => o.outcome), ['rolled-back']);
  const route = await checkRouting(store, 'project');
  assert.equal(route.root.generation, 1);
  assert.equal(manifestDigest(walkTreeSync(route.payloadPath).manifest), made.base.digest);
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  assert.deepEqual(await leftovers(store), []);
});

// The intent is committed unsynced and made durable by the commit's batch of fsyncs (commit-generation.ts):
// a power loss before that batch can keep what the collapse staged or published and lose the intent
// naming it. Simulated here by deleting the intent row after a crash at each step before the batch is
// awaited: the next start's recovery sweeps what no intent names, and PRIME is the base.
for (const step of ['after-stage', 'after-marker-sync'] as const) {
  test(`an intent lost before the commit's batch (crash at "${step}", the row gone): the next start sweeps what it staged and published`, async (t) => {
    const s = await scratch(t);
    const { dir, made, childArgs } = await closedStoreWithCandidate(t, s.dir);
    assert.equal(await collapseAndCrash(childArgs(step)), 'SIGKILL');

    const { store } = await openStore({ dir });
    t.after(() => store.close());
    const [intent] = listIntents(store.db, 'collapse');
    assert.ok(intent, 'the crash left the intent');
    const left = await leftovers(store);
    assert.ok(left.some((l) => (step === 'after-stage' ? l.startsWith('staging/collapse-') : l.startsWith('generations/'))), `the collapse left ${step === 'after-stage' ? 'its staging' : 'its generation'}: ${left.join(', ')}`);
    // While an intent names them, the sweep keeps them: its recovery decides.
    assert.deepEqual(await sweepCollapseLeftovers(store), []);
    assert.deepEqual(await leftovers(store), left);

    deleteIntent(store.db, intent.id); // what a power loss before the batch can leave
    assert.deepEqual(await recoverCollapses(store), [], 'no intent to settle');
    assert.deepEqual(await leftovers(store), [], 'swept');
    const route = await checkRouting(store, 'project');
    assert.equal(route.root.generation, 1);
    assert.equal(manifestDigest(walkTreeSync(route.payloadPath).manifest), made.base.digest);
    assert.equal(manifestDigest(walkTreeSync(join(s.dir, 'project')).manifest), made.base.digest, "the owner's host path shows PRIME");
  });
}
