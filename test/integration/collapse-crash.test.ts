// Crash injection into Collapse on a real stack (kube-apiserver + etcd, controller, node-agent as root).
// For every step of COLLAPSE_TEST_STEPS, twice: a small Root (five files), a World that rewrites two
// files and deletes one, and a Collapse during which the node-agent SIGKILLs itself at that step
// (WORLDLINE_TEST_COLLAPSE_HOOK=<step>:kill). The agent is started again without the hook and must settle
// the Collapse on its own. Then:
// Every run's Root and World are prepared first, together; each run is then: the agent started with the
// hook, the Collapse applied, the agent's own SIGKILL, the agent started without it, the checks.
//   (a) the host directory, read through its link, is exactly the adopted tree or exactly the expected new
//       tree, never a mix; it is the new one iff the Collapse says Committed (World Collapsed, Root at
//       generation 2), else the old one (Root at generation 1). Kills before the exchange end Denied with
//       COLLAPSE_INTERRUPTED; kills at after-exchange or later end Committed.
//   (b) the transaction has exactly one ledger line, with its id, state and receipt id;
//   (c) the whole ledger verifies with `worldline receipts verify` and the published public key;
//   (d) nothing is half-done: no staging/collapse-*, no live/.next-*, and (read from state.db while the
//       agent is stopped, before the next run's start) no pending intent, every transaction final with its
//       receipt, exactly the recorded generations on disk, each live link naming its Root's recorded
//       generation.
// Trees are compared by path, type, mode, owner and content (not by worlds.ts hashTree: times and link
// counts of unchanged files legitimately change when a collapse hard-links them into a new generation).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { COLLAPSE_OBSERVED_STEPS, type CollapseObservedStep as CollapseTestStep } from '../../node-agent/collapses/step-hooks.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startStack, type Stack } from '../support/stack.js';
import { GrantStore } from '../../node-agent/evidence/grant-store.js';
import { getJson } from '../support/wait.js';
import { FINAL_PHASES, outputOf, rootKeyOf, rootManifest, shWorld, worldManifest } from '../support/worlds.js';

const OWNER = 1000;
/** Every step a Collapse without spec.rebase reaches (after-rebase-formed is covered in collapse-rebase.test.ts). */
const COLLAPSE_TEST_STEPS = COLLAPSE_OBSERVED_STEPS.filter((x) => x !== 'after-rebase-formed');
const RUNS_PER_STEP = 2;
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
/** The steps before the single exchange: a kill there must leave PRIME at its base. */
const BEFORE_EXCHANGE: readonly CollapseTestStep[] = ['after-prepared', 'after-authorized', 'after-intent', 'after-stage', 'after-verify', 'after-layer-publish', 'after-marker-sync', 'after-grant-spent', 'before-exchange'];
/** The steps that leave a collapse intent for startup recovery, and what recovery must make of it. */
const RECOVERY: Partial<Record<CollapseTestStep, 'rolled-back' | 'committed'>> = {
  'after-intent': 'rolled-back',
  'after-stage': 'rolled-back',
  'after-verify': 'rolled-back',
  'after-layer-publish': 'rolled-back',
  'after-marker-sync': 'rolled-back',
  'after-grant-spent': 'rolled-back',
  'before-exchange': 'rolled-back',
  'after-exchange': 'committed',
};

type Tree = Record<string, string>;

/** Whether the node's grant store holds the grant `id` as spent (read while no agent runs is not needed: WAL). */
function grantSpent(storeDir: string, id: string): boolean {
  const g = GrantStore.open(join(storeDir, 'grants.db'));
  try {
    return g.spent(id) !== undefined;
  } finally {
    g.close();
  }
}

/** path -> "type mode uid:gid content-sha256" for every entry below `top` (the top followed if a link). */
function contentTree(top: string): Tree {
  const out: Tree = {};
  const visit = (abs: string, rel: string, follow: boolean): void => {
    const st = follow ? statSync(abs) : lstatSync(abs);
    const kind = st.isDirectory() ? 'd' : st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
    const body = kind === 'f' ? createHash('sha256').update(readFileSync(abs)).digest('hex') : kind === 'l' ? readlinkSync(abs) : '';
    out[rel] = `${kind} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ${body}`;
    if (kind === 'd') for (const n of readdirSync(abs).sort()) visit(join(abs, n), rel === '.' ? n : `${rel}/${n}`, false);
  };
  visit(top, '.', true);
  return out;
}

const treeHash = (t: Tree): string => createHash('sha256').update(JSON.stringify(Object.entries(t).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))).digest('hex');
const fileEntry = (content: string): string => `f 644 ${OWNER}:${OWNER} ${createHash('sha256').update(content).digest('hex')}`;

const OLD_FILES: Record<string, string> = { 'a.txt': 'alpha\n', 'b.txt': 'bravo\n', 'c.txt': 'charlie\n', 'd.txt': 'delta\n', 'sub/e.txt': 'echo\n' };
const WORLD_SCRIPT = "printf 'alpha, rewritten\\n' > a.txt && echo more >> sub/e.txt && rm c.txt";
const NEW_FILES: Record<string, string> = { 'a.txt': 'alpha, rewritten\n', 'b.txt': 'bravo\n', 'd.txt': 'delta\n', 'sub/e.txt': 'echo\nmore\n' };

function expectedTree(files: Record<string, string>): Tree {
  const t: Tree = { '.': `d 755 ${OWNER}:${OWNER} `, sub: `d 755 ${OWNER}:${OWNER} ` };
  for (const [p, c] of Object.entries(files)) t[p] = fileEntry(c);
  return t;
}

/** `p`, or a rejection naming `what` if it has not settled within `ms` (a bound on a wait, not a timing assertion). */
async function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_res, rej) => { timer = setTimeout(() => rej(new Error(`gave up waiting for ${what} after ${ms} ms`)), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

interface LedgerEntry {
  id: string;
  receipt: { transaction: { id: string; state: string } };
}

function readLedger(storeDir: string): LedgerEntry[] {
  const text = readFileSync(join(storeDir, 'receipts', 'ledger.jsonl'), 'utf8');
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as LedgerEntry);
}

function verifyLedger(storeDir: string): void {
  // Throws (non-zero exit) unless every line's id, signature and chain verify.
  execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', join(storeDir, 'receipts', 'ledger.jsonl'), '--public-key', join(storeDir, 'keys', 'receipts-ed25519.pub.pem')], { encoding: 'utf8' });
}

/** Nothing half-done on disk: no collapse staging directory, no prepared `.next-*` link. */
function assertNoLeftovers(storeDir: string): void {
  assert.deepEqual(readdirSync(join(storeDir, 'staging')).filter((n) => n.startsWith('collapse-')), [], 'no staging/collapse-* left');
  assert.deepEqual(readdirSync(join(storeDir, 'live')).filter((n) => n.startsWith('.next-')), [], 'no live/.next-* left');
}

/**
 * The store database, read while no agent holds it: no pending intent, every transaction final with its
 * receipt, one receipt row per ledger line, exactly the recorded generations on disk and each live link
 * naming its Root's recorded generation.
 */
function assertStoreSettled(storeDir: string): void {
  const db = new Database(join(storeDir, 'state.db'), { readonly: true, fileMustExist: true });
  try {
    assert.deepEqual(db.prepare('SELECT id, kind FROM intents').all(), [], 'no pending intents');
    const txs = db.prepare('SELECT id, state, data_json FROM collapse_transactions').all() as { id: string; state: string; data_json: string }[];
    for (const t of txs) {
      assert.ok(t.state === 'COMMITTED' || t.state === 'DENIED', `transaction ${t.id} is ${t.state}`);
      assert.ok((JSON.parse(t.data_json) as { receipt?: unknown }).receipt, `transaction ${t.id} records its receipt`);
    }
    const receiptRows = db.prepare('SELECT transaction_id FROM receipts ORDER BY sequence').all() as { transaction_id: string }[];
    assert.deepEqual(receiptRows.map((r) => r.transaction_id), readLedger(storeDir).map((l) => l.receipt.transaction.id), 'the receipts table mirrors the ledger');
    const gens = db.prepare('SELECT id, root_key, number FROM generations').all() as { id: string; root_key: string; number: number }[];
    assert.deepEqual(readdirSync(join(storeDir, 'generations')).sort(), gens.map((g) => g.id).sort(), 'generations/ holds exactly the recorded generations');
    const roots = db.prepare('SELECT name, root_key, generation FROM roots').all() as { name: string; root_key: string; generation: number }[];
    for (const r of roots) {
      const gen = gens.find((g) => g.root_key === r.root_key && g.number === r.generation);
      assert.ok(gen, `Root ${r.name}'s generation ${r.generation} is recorded`);
      assert.equal(readlinkSync(join(storeDir, 'live', r.root_key)), `../generations/${gen.id}/payload`, `live link of Root ${r.name}`);
    }
  } finally {
    db.close();
  }
}

describe('collapse crash injection on a real stack', () => {
  let s: Stack;
  const outcomes = new Map<string, string>();
  let collapses = 0;

  before(async () => {
    s = await startStack({ nodeName: 'crash-node' });
    await prepareAll();
  });
  after(async () => {
    await s?.stop();
  });

  /** One run's fixture, prepared before any kill: its Root (adopted) and its World (captured). */
  interface Fixture {
    hostPath: string;
    rootKey: string;
    oldHash: string;
  }
  const fixtures = new Map<string, Fixture>();
  const runName = (step: CollapseTestStep, run: number): string => `k-${step}-${run}`;
  const allRuns = COLLAPSE_TEST_STEPS.flatMap((step) => Array.from({ length: RUNS_PER_STEP }, (_x, i) => runName(step, i + 1)));

  /** Every run's Root and World at once (one apply each), so the runs themselves are only kill and recovery. */
  const prepareAll = async (): Promise<void> => {
    for (const name of allRuns) {
      const hostPath = join(s.scratch, name);
      mkdirSync(join(hostPath, 'sub'), { recursive: true, mode: 0o755 });
      for (const [p, c] of Object.entries(OLD_FILES)) writeFileSync(join(hostPath, p), c, { mode: 0o644 });
      for (const p of ['.', 'sub', ...Object.keys(OLD_FILES)]) chownSync(join(hostPath, p), OWNER, OWNER);
    }
    await s.apply(allRuns.map((name) => rootManifest(name, s.nodeName, join(s.scratch, name))).join('\n'));
    const roots = await s.waitFor('every Root adopted', async () => {
      const items = ((await getJson(s.cp, ['get', 'roots']))?.items ?? []) as Record<string, any>[];
      const mine = items.filter((r) => allRuns.includes(r.metadata.name));
      return mine.length === allRuns.length && mine.every((r) => r.status?.phase === 'Ready' || r.status?.phase === 'Broken') ? mine : undefined;
    }, 120_000);
    for (const r of roots) {
      assert.equal(r.status.phase, 'Ready', JSON.stringify(r.status));
      assert.equal(r.status.generation, 1);
      const hostPath = join(s.scratch, r.metadata.name as string);
      const oldTree = contentTree(hostPath);
      assert.deepEqual(oldTree, expectedTree(OLD_FILES), 'the adopted tree is the fixture');
      fixtures.set(r.metadata.name as string, { hostPath, rootKey: rootKeyOf(hostPath), oldHash: treeHash(oldTree) });
    }
    await s.apply(allRuns.map((name) => worldManifest(name, shWorld([name], WORLD_SCRIPT))).join('\n'));
    const worlds = await s.waitFor('every World final', async () => {
      const items = ((await getJson(s.cp, ['get', 'worlds', '-n', 'default']))?.items ?? []) as Record<string, any>[];
      const mine = items.filter((w) => allRuns.includes(w.metadata.name));
      return mine.length === allRuns.length && mine.every((w) => FINAL_PHASES.includes(w.status?.phase)) ? mine : undefined;
    }, 180_000);
    for (const w of worlds) assert.equal(w.status.phase, 'Captured', `${w.metadata.name as string}: ${JSON.stringify(w.status)}\n${outputOf(s, w.metadata.uid as string)}`);
  };

  /** One run: a Collapse of its prepared World killed at `step`, recovery, and every assertion of (a)-(d). */
  const crashRun = async (step: CollapseTestStep, run: number): Promise<void> => {
    const name = runName(step, run);
    const f = fixtures.get(name);
    assert.ok(f, `run ${name} was prepared`);
    const { hostPath, rootKey, oldHash } = f;
    const newHash = treeHash(expectedTree(NEW_FILES));

    // The agent with the hook; the database is read first, while no agent holds it (the previous run's settlement).
    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: `${step}:kill` }, between: () => assertStoreSettled(s.storeDir) });
    const hooked = s.agent;
    await s.apply(collapseManifest(name, name));
    collapses++;
    let exit: Awaited<ReturnType<typeof hooked.waitExit>>;
    try {
      exit = await bounded(hooked.waitExit(), 120_000, `the agent killing itself at ${step}`);
    } catch (e) {
      // Say where the collapse was instead: its status and what the agent warned about.
      const seen = await s.get('collapse', name, 'default');
      const logs = hooked.logs.filter((r) => r.level === 'warn' || r.level === 'error' || String(r.msg).includes('collapse'));
      throw new Error(`${(e as Error).message}\ncollapse status: ${JSON.stringify(seen?.status)}\nagent: ${logs.map((r) => JSON.stringify(r)).join('\n')}`);
    }
    assert.equal(exit.signal, 'SIGKILL', `the agent ended by its own SIGKILL at ${step}: ${JSON.stringify(exit)}`);
    const atKill = await s.get('collapse', name, 'default');
    // Killed within its hold (progress-hold.ts), the Collapse shows no progress yet, or a held one; never a final phase.
    assert.ok([undefined, 'Preparing', 'Authorized'].includes(atKill?.status?.phase), `no final status was published before the kill: ${JSON.stringify(atKill?.status)}`);

    await s.restartAgent({ signal: 'SIGTERM' });
    const c = await waitCollapse(s, name);
    const phase = c.status.phase as string;
    outcomes.set(name, phase);

    // (a) exactly the old or exactly the new tree, and which one agrees with the Collapse.
    const now = treeHash(contentTree(hostPath));
    assert.ok(now === oldHash || now === newHash, `the host tree is neither the old nor the new one: ${JSON.stringify(contentTree(hostPath))}`);
    assert.ok(lstatSync(hostPath).isSymbolicLink(), 'the host path is still a link');
    assert.equal(readlinkSync(hostPath), join(s.storeDir, 'live', `${rootKey}_view`), "the host path still routes through its view link");
    // The authorization is spent at the commit boundary, before the exchange, and stays spent: a kill
    // after the spend leaves it spent although PRIME is rolled back (there is no refund).
    const spent = grantSpent(s.storeDir, c.status.transaction.id as string);
    const spentBy = COLLAPSE_TEST_STEPS.indexOf('after-grant-spent');
    assert.equal(spent, (COLLAPSE_TEST_STEPS as readonly string[]).indexOf(step) >= spentBy, `grant ${c.status.transaction.id as string} spent after a kill at ${step}: ${String(spent)}`);
    if (BEFORE_EXCHANGE.includes(step)) {
      assert.equal(phase, 'Denied', JSON.stringify(c.status));
      assert.deepEqual(c.status.decision, { authorized: false, reasons: ['COLLAPSE_INTERRUPTED'] });
      assert.equal(c.status.transaction.state, 'DENIED');
    } else {
      assert.equal(phase, 'Committed', JSON.stringify(c.status));
      assert.equal(c.status.transaction.state, 'COMMITTED');
    }
    if (phase === 'Committed') {
      assert.equal(now, newHash, 'Committed: the host shows the new tree');
      assert.deepEqual(c.status.result.map((r: Record<string, unknown>) => [r.root, r.fromGeneration, r.toGeneration]), [[name, 1, 2]]);
      const r2 = await s.waitFor(`Root ${name} at generation 2`, async () => {
        const r = await s.get('root', name);
        return r?.status?.generation === 2 ? r : undefined;
      }, 30_000);
      assert.equal(r2.status.digest, c.status.result[0].digest);
      await s.waitWorld(name, ['Collapsed']);
    } else {
      assert.equal(now, oldHash, 'Denied: the host shows the old tree');
      assert.equal((await s.get('root', name))?.status?.generation, 1);
      assert.equal((await s.get('world', name, 'default'))?.status?.phase, 'Captured');
    }
    const settled = s.agent.logs.filter((r) => r.msg === 'settled an interrupted collapse' && r.rootName === name).map((r) => r.outcome);
    assert.deepEqual(settled, RECOVERY[step] ? [RECOVERY[step]] : [], 'startup recovery of the collapse intent');

    // (b) one ledger line for the transaction, with its state and the receipt id of the status.
    assert.ok(c.status.receipt?.id, 'the final transaction has its receipt');
    const ledger = readLedger(s.storeDir);
    const lines = ledger.filter((l) => l.receipt.transaction.id === c.status.transaction.id);
    assert.equal(lines.length, 1, `exactly one ledger line for transaction ${c.status.transaction.id as string}`);
    assert.equal(lines[0]!.receipt.transaction.state, c.status.transaction.state);
    assert.equal(lines[0]!.id, c.status.receipt.id);
    const ids = ledger.map((l) => l.receipt.transaction.id);
    assert.equal(new Set(ids).size, ids.length, 'no transaction appears twice in the ledger');
    assert.equal(ledger.length, collapses, 'one ledger line per Collapse so far');
    // (c) the whole ledger verifies.
    verifyLedger(s.storeDir);
    // (d) nothing half-done on disk (the database is checked before the next start).
    assertNoLeftovers(s.storeDir);
  };

  for (const step of COLLAPSE_TEST_STEPS) {
    test(`a kill at ${step} ends ${BEFORE_EXCHANGE.includes(step) ? 'Denied with the old tree' : 'Committed with the new tree'}, receipted, nothing half-done`, async () => {
      for (let run = 1; run <= RUNS_PER_STEP; run++) await crashRun(step, run);
    });
  }

  test('the split over all steps, the ledger and the settled store', async () => {
    const expected = new Map<string, string>();
    for (const step of COLLAPSE_TEST_STEPS) for (let run = 1; run <= RUNS_PER_STEP; run++) expected.set(`k-${step}-${run}`, BEFORE_EXCHANGE.includes(step) ? 'Denied' : 'Committed');
    assert.deepEqual(Object.fromEntries(outcomes), Object.fromEntries(expected));
    const ledger = readLedger(s.storeDir);
    assert.equal(ledger.length, COLLAPSE_TEST_STEPS.length * RUNS_PER_STEP);
    assert.deepEqual(ledger.map((l) => l.receipt.transaction.state).filter((x) => x === 'COMMITTED').length, [...expected.values()].filter((x) => x === 'Committed').length);
    verifyLedger(s.storeDir);
    assertNoLeftovers(s.storeDir);
    await s.restartAgent({ signal: 'SIGTERM', between: () => assertStoreSettled(s.storeDir) });
  });
});
