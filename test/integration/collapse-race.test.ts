// Racing Collapses on a real stack (kube-apiserver + etcd, controller, node-agent as root). One Root; in each
// repetition two Worlds are forked from its current generation together and each writes its own content
// to the same file; both Collapses are applied in one `kubectl apply`, back to back. Exactly one commits;
// the other is denied by name (PRIME_MOVED, and CONFLICT since both changed the same file); the host file
// is the committed World's content and the Root moved by exactly one generation. At the end the ledger
// holds one receipt per Collapse, no transaction twice, and verifies with `worldline receipts verify`.
// The agent runs one Collapse at a time, so the loser is measured after the winner committed and is denied
// when prepared (the diagnostic counts denials at the commit boundary; 0 in the runs so far).
// REPETITIONS: 100; measured 1.7-2.4 s per repetition (3-4 min for the file, stack included) on 2 cores
// shared with other test runs (load average 7-10).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collapseManifest } from '../support/collapses.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson } from '../support/wait.js';
import { applyRoot, FINAL_PHASES, outputOf, shWorld, worldManifest } from '../support/worlds.js';

const OWNER = 1000;
const REPETITIONS = 100;
const ROOT = 'race';
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));

/** A manifest with the repetition's label added, so one `kubectl get -l` reads both objects of a kind. */
function labelled(manifest: string, rep: number): Record<string, any> {
  const o = JSON.parse(manifest) as Record<string, any>;
  o.metadata.labels = { 'race-rep': String(rep) };
  return o;
}

const contentOf = (world: string): string => `written by ${world}\n`;

describe('racing collapses on a real stack', () => {
  let s: Stack;
  let hostPath: string;

  before(async () => {
    s = await startStack({ nodeName: 'race-node' });
    hostPath = join(s.scratch, ROOT);
    mkdirSync(hostPath, { mode: 0o755 });
    writeFileSync(join(hostPath, 'shared.txt'), 'initial\n', { mode: 0o644 });
    writeFileSync(join(hostPath, 'other.txt'), 'untouched\n', { mode: 0o644 });
    for (const p of [hostPath, join(hostPath, 'shared.txt'), join(hostPath, 'other.txt')]) chownSync(p, OWNER, OWNER);
    const root = await applyRoot(s, ROOT, hostPath);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    assert.equal(root.status.generation, 1);
  });
  after(async () => {
    await s?.stop();
  });

  /** Both objects of `kind` labelled with the repetition once `done` holds for both. */
  const waitBoth = (kind: string, rep: number, done: (o: Record<string, any>) => boolean, what: string): Promise<Record<string, any>[]> =>
    s.waitFor(`repetition ${rep}: both ${kind} ${what}`, async () => {
      const items = ((await getJson(s.cp, ['get', kind, '-n', 'default', '-l', `race-rep=${rep}`]))?.items ?? []) as Record<string, any>[];
      return items.length === 2 && items.every(done) ? items : undefined;
    }, 60_000);

  test(`${REPETITIONS} times: of two Collapses forked from the same generation exactly one commits, the other is PRIME_MOVED`, async (t) => {
    const started = Date.now();
    let generation = 1;
    const committedTx: string[] = [];
    const deniedTx: string[] = [];
    let atBoundary = 0;
    for (let rep = 1; rep <= REPETITIONS; rep++) {
      const names = [`r${rep}-a`, `r${rep}-b`];
      await s.apply(names.map((n) => JSON.stringify(labelled(worldManifest(n, shWorld([ROOT], `printf '%s\\n' 'written by ${n}' > shared.txt`)), rep))).join('\n'));
      const worlds = await waitBoth('worlds', rep, (w) => FINAL_PHASES.includes(w.status?.phase), 'final');
      for (const w of worlds) {
        assert.equal(w.status.phase, 'Captured', `${w.metadata.name as string}: ${JSON.stringify(w.status)}\n${outputOf(s, w.metadata.uid as string)}`);
        assert.deepEqual(w.status.base.map((b: Record<string, unknown>) => [b.root, b.generation]), [[ROOT, generation]], 'both forked from the current generation');
      }

      // Both Collapses in one apply: no wait between them.
      await s.apply(names.map((n) => JSON.stringify(labelled(collapseManifest(`${n}-col`, n), rep))).join('\n'));
      const cols = await waitBoth('collapses', rep, (c) => c.status?.phase === 'Committed' || c.status?.phase === 'Denied', 'Committed or Denied');
      const committed = cols.filter((c) => c.status.phase === 'Committed');
      const denied = cols.filter((c) => c.status.phase === 'Denied');
      assert.equal(committed.length, 1, `repetition ${rep}: exactly one commits: ${JSON.stringify(cols.map((c) => c.status))}`);
      assert.equal(denied.length, 1, `repetition ${rep}: exactly one is denied`);
      const [win, lose] = [committed[0]!, denied[0]!];
      assert.equal(win.status.transaction.state, 'COMMITTED');
      assert.deepEqual(win.status.result.map((r: Record<string, unknown>) => [r.root, r.fromGeneration, r.toGeneration]), [[ROOT, generation, generation + 1]]);
      assert.equal(lose.status.transaction.state, 'DENIED');
      assert.equal(lose.status.decision.authorized, false);
      assert.ok(lose.status.decision.reasons.includes('PRIME_MOVED'), `repetition ${rep}: ${JSON.stringify(lose.status.decision)}`);
      assert.ok(lose.status.decision.reasons.includes('CONFLICT'), `repetition ${rep}: ${JSON.stringify(lose.status.decision)}`);
      assert.ok(win.status.receipt?.id && lose.status.receipt?.id, 'both transactions have receipts');
      committedTx.push(win.status.transaction.id as string);
      deniedTx.push(lose.status.transaction.id as string);
      if (String(lose.status.message).startsWith('denied at the commit boundary')) atBoundary++;

      // The host shows the winner's content; the Root moved by exactly one generation.
      assert.equal(readFileSync(join(hostPath, 'shared.txt'), 'utf8'), contentOf(win.spec.worldRef as string));
      assert.equal(readFileSync(join(hostPath, 'other.txt'), 'utf8'), 'untouched\n');
      const root = await s.waitFor(`Root ${ROOT} past generation ${generation}`, async () => {
        const r = await s.get('root', ROOT);
        return (r?.status?.generation ?? 0) > generation ? r : undefined;
      }, 30_000);
      assert.equal(root.status.generation, generation + 1, `repetition ${rep}: the Root moved by exactly one generation`);
      assert.equal(root.status.digest, win.status.result[0].digest);
      generation++;
    }

    t.diagnostic(`${REPETITIONS} repetitions in ${Date.now() - started} ms (${Math.round((Date.now() - started) / REPETITIONS)} ms each); ${atBoundary} denials came at the commit boundary, the rest when prepared`);

    // Every Collapse has exactly one ledger line with its state; the ledger verifies as a whole.
    const ledgerPath = join(s.storeDir, 'receipts', 'ledger.jsonl');
    const lines = readFileSync(ledgerPath, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { receipt: { transaction: { id: string; state: string } } });
    const ids = lines.map((l) => l.receipt.transaction.id);
    assert.equal(new Set(ids).size, ids.length, 'no transaction appears twice in the ledger');
    assert.equal(lines.length, 2 * REPETITIONS);
    const stateOf = new Map(lines.map((l) => [l.receipt.transaction.id, l.receipt.transaction.state]));
    for (const id of committedTx) assert.equal(stateOf.get(id), 'COMMITTED');
    for (const id of deniedTx) assert.equal(stateOf.get(id), 'DENIED');
    execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledgerPath, '--public-key', join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem')], { encoding: 'utf8' });
    assert.deepEqual(readdirSync(join(s.storeDir, 'staging')).filter((n) => n.startsWith('collapse-')), [], 'no staging/collapse-* left');
    assert.deepEqual(readdirSync(join(s.storeDir, 'live')).filter((n) => n.startsWith('.next-')), [], 'no live/.next-* left');
  });
});
