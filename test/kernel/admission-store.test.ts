// The admission authority on real SQLite files: the node store's own database (many concurrent callers,
// the lock refusing another process, restart recovery, metrics) and a shared database written by five
// worker threads at once, each through its own connection, so only BEGIN IMMEDIATE keeps them apart.
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { Registry } from 'prom-client';
import { AdmissionAuthority } from '../../node-agent/admission/admission-authority.js';
import type { NodeCeilings } from '../../node-agent/admission/admission-policy.js';
import { observeNode } from '../../node-agent/admission/observe-node.js';
import { createAgentMetrics } from '../../node-agent/metrics.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { migrate } from '../../node-agent/store/store-schema.js';
import { scratch } from './store-fixtures.js';
import { GiB, perWorld, roomy } from './admission-fixtures.js';
import { rng } from '../support/seeded-random.js';

const ceilings: NodeCeilings = { cpuMillis: 8000, memoryBytes: 10 * GiB, pids: 20000, worlds: 12, ephemeralStorageBytes: 64 * GiB };
const sqlitePath = createRequire(import.meta.url).resolve('better-sqlite3');
const authorityUrl = new URL('../../node-agent/admission/admission-authority.js', import.meta.url).href;

function withinCeilings(authority: AdmissionAuthority): void {
  const t = authority.totals();
  for (const k of ['cpuMillis', 'memoryBytes', 'pids', 'worlds'] as const) assert.ok(t[k] <= ceilings[k], `${k}: ${t[k]} reserved > ceiling ${ceilings[k]}`);
}

/** From another process (no test runner in it): try to take the write lock on `path` and add a reservation. */
function writeElsewhere(path: string): Promise<{ ok?: boolean; code?: string }> {
  const script = `
    const Database = require(${JSON.stringify(sqlitePath)});
    try {
      const db = new Database(${JSON.stringify(path)}, { timeout: 0 });
      db.exec('BEGIN IMMEDIATE');
      db.prepare("INSERT INTO reservations (holder, stage, cpu_millis, memory_bytes, pids, created_at) VALUES ('intruder', 'agent', 1, 1, 1, 'x')").run();
      db.exec('COMMIT');
      db.close();
      console.log(JSON.stringify({ ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ code: e.code }));
    }`;
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { env }, (err, stdout) => {
      if (err) reject(new Error(`the other process failed: ${err.message}`));
      else resolve(JSON.parse(stdout) as { ok?: boolean; code?: string });
    });
  });
}

test('50 concurrent callers on the node store never reserve past a ceiling; another process is refused the lock', async (t) => {
  const s = await scratch(t);
  const { store } = await openStore({ dir: join(s.dir, 'store') });
  t.after(() => store.close());
  const registry = new Registry();
  const authority = new AdmissionAuthority({ db: store.db, ceilings, perWorld, observe: () => roomy, clock: store.now, metrics: createAgentMetrics(registry) });

  const random = rng(42);
  const outcomes: string[] = [];
  let released = 0;
  await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      const memoryBytes = Math.ceil(random() * 3) * GiB;
      const cpuMillis = 100 + Math.floor(random() * 900);
      const keep = random() < 0.6;
      await sleep(Math.floor(random() * 20));
      const r = authority.admit({ holder: `world-${i}`, stage: i % 5 === 0 ? 'check' : 'agent', resources: { memoryBytes, cpuMillis } });
      withinCeilings(authority);
      outcomes.push(r.outcome);
      if (r.outcome === 'ADMITTED' && !keep) {
        await sleep(Math.floor(random() * 10));
        assert.equal(authority.release(`world-${i}`), true);
        released++;
        withinCeilings(authority);
      }
    }),
  );
  const admitted = outcomes.filter((o) => o === 'ADMITTED').length;
  const refused = outcomes.filter((o) => o === 'RESOURCES_UNAVAILABLE').length;
  assert.equal(admitted + refused, 50, outcomes.join(','));
  assert.ok(admitted > 0 && refused > 0, `the ceilings were contended (${admitted} admitted, ${refused} refused)`);
  assert.equal(authority.reservations().length, admitted - released);

  // The store holds its database exclusively: another process can neither take the write lock nor reserve.
  assert.deepEqual(await writeElsewhere(store.layout.database), { code: 'SQLITE_BUSY' });
  assert.equal(authority.reservations().some((r) => r.holder === 'intruder'), false);

  // Metrics match what happened.
  const decisions = await registry.getSingleMetric('worldline_admission_decisions_total')!.get();
  const sum = (outcome: string) => decisions.values.filter((v) => v.labels.outcome === outcome).reduce((a, v) => a + v.value, 0);
  assert.equal(sum('ADMITTED'), admitted);
  assert.equal(sum('RESOURCES_UNAVAILABLE'), refused);
  const reserved = await registry.getSingleMetric('worldline_admission_reserved')!.get();
  const gauge = (resource: string) => reserved.values.find((v) => v.labels.resource === resource)?.value;
  assert.equal(gauge('memory_bytes'), authority.totals().memoryBytes);
  assert.equal(gauge('worlds'), admitted - released);
});

test('restart: reservations survive closing the store, and recover keeps only live holders', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const first = await openStore({ dir });
  const before = new AdmissionAuthority({ db: first.store.db, ceilings, perWorld, observe: () => roomy, clock: first.store.now });
  for (const [holder, stage] of [['w-a', 'agent'], ['w-b', 'agent'], ['c-1', 'check']] as const) {
    assert.equal(before.admit({ holder, stage, resources: { memoryBytes: 2 * GiB } }).outcome, 'ADMITTED');
  }
  const held = before.reservations();
  first.store.close();
  assert.deepEqual(await writeElsewhere(join(first.store.layout.database)), { ok: true }, 'the lock went with the connection');

  const { store } = await openStore({ dir });
  t.after(() => store.close());
  const registry = new Registry();
  const after = new AdmissionAuthority({ db: store.db, ceilings, perWorld, observe: () => roomy, clock: store.now, metrics: createAgentMetrics(registry) });
  assert.deepEqual(after.reservations().filter((r) => r.holder !== 'intruder'), held, 'durable across the restart');
  const recovered = after.recover(new Set(['w-a', 'c-1']));
  assert.deepEqual([recovered.kept.sort(), recovered.dropped.sort()], [['c-1', 'w-a'], ['intruder', 'w-b']]);
  assert.deepEqual(after.totals(), { cpuMillis: 2000, memoryBytes: 4 * GiB, pids: 1024, worlds: 2, ephemeralStorageBytes: 2 * GiB });
  const again = after.admit({ holder: 'w-a', stage: 'agent' });
  assert.equal(again.existing, true);
  assert.equal(again.reservation?.createdAt, held.find((r) => r.holder === 'w-a')?.createdAt);
  const reserved = await registry.getSingleMetric('worldline_admission_reserved')!.get();
  assert.equal(reserved.values.find((v) => v.labels.resource === 'worlds')?.value, 2);
});

test('the kernel measurements are readable on this host and admit a small check', async (t) => {
  const o = observeNode({ storeDir: tmpdir(), runDirs: [] });
  for (const k of ['memAvailableBytes', 'tasks', 'pidMax', 'cpuCount', 'storeFreeBytes', 'storeUsedByRunsBytes'] as const) assert.equal(typeof o[k], 'number', `${k} = ${String(o[k])}`);
  const db = new Database(':memory:');
  t.after(() => db.close());
  migrate(db);
  const authority = new AdmissionAuthority({ db, ceilings, perWorld, observe: () => observeNode({ storeDir: tmpdir(), runDirs: [] }) });
  const r = authority.admit({ holder: 'c', stage: 'check', resources: { memoryBytes: 2 ** 20, pids: 8, cpuMillis: 10, ephemeralStorageBytes: 2 ** 20 } });
  assert.equal(r.outcome, 'ADMITTED', r.message);
});

/** Worker body: admit `count` holders on its own connection, releasing some, checking totals after each. */
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.sqlitePath);
import(workerData.authorityUrl).then(({ AdmissionAuthority }) => {
  const db = new Database(workerData.path, { timeout: 30000 });
  db.pragma('busy_timeout = 30000');
  const authority = new AdmissionAuthority({ db, ceilings: workerData.ceilings, perWorld: workerData.perWorld, observe: () => workerData.observed });
  const gate = new Int32Array(workerData.gate);
  Atomics.add(gate, 1, 1);
  Atomics.wait(gate, 0, 0);
  let seed = workerData.seed;
  const random = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const result = { admitted: 0, refused: 0, released: 0, violations: [] };
  const held = [];
  for (let i = 0; i < workerData.count; i++) {
    const holder = 'w' + workerData.id + '-' + i;
    const r = authority.admit({ holder, stage: 'agent', resources: { memoryBytes: Math.ceil(random() * 3) * 2 ** 30, cpuMillis: 100 + Math.floor(random() * 900) } });
    if (r.outcome === 'ADMITTED') { result.admitted++; held.push(holder); } else if (r.outcome === 'RESOURCES_UNAVAILABLE') result.refused++;
    else result.violations.push('unexpected outcome ' + r.outcome);
    const t = authority.totals();
    for (const k of ['cpuMillis', 'memoryBytes', 'pids', 'worlds']) if (t[k] > workerData.ceilings[k]) result.violations.push(k + ' ' + t[k]);
    if (held.length > 0 && random() < 0.4) { authority.release(held.splice(Math.floor(random() * held.length), 1)[0]); result.released++; }
  }
  db.close();
  parentPort.postMessage(result);
}).catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
`;

interface WorkerResult {
  admitted: number;
  refused: number;
  released: number;
  violations: string[];
  error?: string;
}

/**
 * A WAL database in the test's scratch, and `workers` worker threads (WORKER) each admitting `count`
 * holders on its own connection. Resolves once every worker has opened its connection and been let go
 * at once; `results` settle when they finish.
 */
async function admittingWorkers(t: Parameters<typeof scratch>[0], name: string, workers: number, count: number, seed: number): Promise<{ setup: Database.Database; results: Promise<WorkerResult[]> }> {
  const s = await scratch(t);
  const path = join(s.dir, name);
  const setup = new Database(path);
  setup.pragma('journal_mode = WAL');
  migrate(setup);
  t.after(() => setup.close());
  const gate = new SharedArrayBuffer(8);
  const flags = new Int32Array(gate);
  const threads = Array.from({ length: workers }, (_, id) =>
    new Worker(WORKER, { eval: true, workerData: { id, seed: seed + id, count, path, sqlitePath, authorityUrl, ceilings, perWorld, observed: roomy, gate } }),
  );
  const results = threads.map(
    (w) =>
      new Promise<WorkerResult>((resolve, reject) => {
        w.once('message', (m: WorkerResult) => resolve(m));
        w.once('error', reject);
      }),
  );
  // Every worker has opened its connection; let them all go at once.
  while (Atomics.load(flags, 1) < workers) await sleep(5);
  Atomics.store(flags, 0, 1);
  Atomics.notify(flags, 0);
  return { setup, results: Promise.all(results) };
}

test('5 worker threads x 10 admits through separate connections to one database stay within every ceiling', async (t) => {
  const { setup, results } = await admittingWorkers(t, 'shared.db', 5, 10, 1000);

  // Meanwhile this thread watches the totals through a third kind of connection: a reader.
  const watcher = new AdmissionAuthority({ db: setup, ceilings, perWorld, observe: () => roomy });
  let done = false;
  const all = results.finally(() => (done = true));
  let watched = 0;
  while (!done) {
    withinCeilings(watcher);
    watched++;
    await sleep(1);
  }
  const out = await all;
  for (const r of out) assert.equal(r.error, undefined, r.error);
  assert.deepEqual(out.flatMap((r) => r.violations), []);
  const admitted = out.reduce((a, r) => a + r.admitted, 0);
  const refused = out.reduce((a, r) => a + r.refused, 0);
  const released = out.reduce((a, r) => a + r.released, 0);
  assert.equal(admitted + refused, 50);
  assert.ok(refused > 0 && admitted > 0, `the ceilings were contended (${admitted} admitted, ${refused} refused)`);
  assert.equal(watcher.reservations().length, admitted - released);
  withinCeilings(watcher);
  assert.ok(watched > 0);
});

test('an authority opened while other connections admit and release reads its account in one snapshot', async (t) => {
  // Two writers, each admitting and releasing 300 holders through its own connection.
  const { setup, results } = await admittingWorkers(t, 'opened.db', 2, 300, 7000);
  // Meanwhile this thread opens authorities over and over: each checks the running account against the
  // reservations summed. Read apart, a commit landing between the two reads made them disagree.
  let done = false;
  const all = results.finally(() => (done = true));
  let opened = 0;
  while (!done) {
    new AdmissionAuthority({ db: setup, ceilings, perWorld, observe: () => roomy });
    opened++;
    await sleep(0);
  }
  const out = await all;
  for (const r of out) assert.equal(r.error, undefined, r.error);
  assert.ok(opened >= 20, `only ${opened} authorities were opened while the writers ran`);
});
