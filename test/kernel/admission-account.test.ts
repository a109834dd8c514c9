// The running account of live reservations (reservation_totals, kept by the store's triggers): admission
// reads it instead of summing every reservation, so it must equal the sum at every moment. Checked on a
// real node store after each of 3,000 seeded admits, releases, recoveries and rolled-back transactions;
// seeded from the reservations of a store migrated from the schema before it; and an account changed
// outside the node-agent refuses the authority at start instead of admitting against it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AdmissionAuthority, AdmissionInvariantError } from '../../node-agent/admission/admission-authority.js';
import type { NodeCeilings } from '../../node-agent/admission/admission-policy.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { migrate, versionBefore } from '../../node-agent/store/store-schema.js';
import { scratch } from './store-fixtures.js';
import { GiB, perWorld, roomy } from './admission-fixtures.js';
import { rng } from '../support/seeded-random.js';

const ceilings: NodeCeilings = { cpuMillis: 16000, memoryBytes: 32 * GiB, pids: 40000, worlds: 24, ephemeralStorageBytes: 64 * GiB };

interface Sums {
  cpu: number;
  mem: number;
  pids: number;
  disk: number;
  n: number;
}
const SUMS = 'SELECT COALESCE(SUM(cpu_millis), 0) AS cpu, COALESCE(SUM(memory_bytes), 0) AS mem, COALESCE(SUM(pids), 0) AS pids, COALESCE(SUM(ephemeral_storage_bytes), 0) AS disk, COUNT(*) AS n FROM reservations';
const ACCOUNT = 'SELECT cpu_millis AS cpu, memory_bytes AS mem, pids, ephemeral_storage_bytes AS disk, worlds AS n FROM reservation_totals WHERE id = 1';

test('the account equals the reservations summed after every admit, release, recovery and rolled-back transaction (3,000 seeded steps)', async (t) => {
  const s = await scratch(t);
  const { store } = await openStore({ dir: join(s.dir, 'store') });
  t.after(() => store.close());
  const authority = new AdmissionAuthority({ db: store.db, ceilings, perWorld, observe: () => roomy, clock: store.now });
  const sums = store.db.prepare<[], Sums>(SUMS);
  const account = store.db.prepare<[], Sums>(ACCOUNT);
  const random = rng(20261203);
  const held: string[] = [];
  const seen = { ADMITTED: 0, refused: 0, released: 0, recovered: 0, rolledBack: 0 };
  for (let step = 0; step < 3000; step++) {
    const r = random();
    if (r < 0.5) {
      const res = authority.admit({ holder: `h-${step}`, stage: random() < 0.5 ? 'agent' : 'check', resources: { cpuMillis: 1 + Math.floor(random() * 4000), memoryBytes: 1 + Math.floor(random() * 4 * GiB), pids: 1 + Math.floor(random() * 4096), ephemeralStorageBytes: 1 + Math.floor(random() * 4 * GiB) } });
      if (res.outcome === 'ADMITTED') {
        held.push(res.holder);
        seen.ADMITTED++;
      } else seen.refused++;
    } else if (r < 0.85) {
      const i = Math.floor(random() * held.length);
      const [h] = held.splice(i, 1);
      if (h !== undefined && authority.release(h)) seen.released++;
    } else if (r < 0.95) {
      // A transaction that inserts and then fails rolls the account back with the row.
      assert.throws(
        () =>
          store.db.transaction(() => {
            store.db.prepare("INSERT INTO reservations (holder, stage, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, created_at) VALUES (?, 'agent', 7, 7, 7, 7, 'x')").run(`doomed-${step}`);
            throw new Error('the admission failed after its insert');
          })(),
        /failed after its insert/,
      );
      seen.rolledBack++;
    } else {
      const keep = new Set(held.filter(() => random() < 0.7));
      const { dropped } = authority.recover(keep);
      for (const d of dropped) held.splice(held.indexOf(d), 1);
      seen.recovered++;
    }
    assert.deepEqual(account.get(), sums.get(), `step ${step}: the account drifted from the reservations`);
    const t2 = authority.totals();
    const sum = sums.get()!;
    assert.deepEqual([t2.cpuMillis, t2.memoryBytes, t2.pids, t2.ephemeralStorageBytes, t2.worlds], [sum.cpu, sum.mem, sum.pids, sum.disk, sum.n]);
  }
  // Every kind of step happened, and the ceilings bit (some admits were refused against the account).
  for (const [k, v] of Object.entries(seen)) assert.ok(v > 20, `only ${v} ${k} steps`);
});

test('a store migrated from the schema before the account starts with its reservations summed', async (t) => {
  const s = await scratch(t);
  const db = new Database(join(s.dir, 'old.db'));
  t.after(() => db.close());
  migrate(db, versionBefore('CREATE TABLE reservation_totals'));
  const insert = db.prepare("INSERT INTO reservations (holder, stage, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, created_at) VALUES (?, 'agent', ?, ?, ?, ?, 'x')");
  insert.run('a', 1000, GiB, 512, 2 * GiB);
  insert.run('b', 250, 3 * GiB, 64, GiB);
  migrate(db);
  assert.deepEqual(db.prepare(ACCOUNT).get(), { cpu: 1250, mem: 4 * GiB, pids: 576, disk: 3 * GiB, n: 2 });
  const authority = new AdmissionAuthority({ db, ceilings, perWorld, observe: () => roomy });
  assert.deepEqual(authority.totals(), { cpuMillis: 1250, memoryBytes: 4 * GiB, pids: 576, worlds: 2, ephemeralStorageBytes: 3 * GiB });
});

test('an account changed outside the node-agent refuses the authority at start; so does a missing one', async (t) => {
  const s = await scratch(t);
  const db = new Database(join(s.dir, 'edited.db'));
  t.after(() => db.close());
  migrate(db);
  const first = new AdmissionAuthority({ db, ceilings, perWorld, observe: () => roomy });
  assert.equal(first.admit({ holder: 'w1', stage: 'agent' }).outcome, 'ADMITTED');
  db.prepare('UPDATE reservation_totals SET cpu_millis = cpu_millis - 1000 WHERE id = 1').run();
  assert.throws(() => new AdmissionAuthority({ db, ceilings, perWorld, observe: () => roomy }), (e: unknown) => e instanceof AdmissionInvariantError && /the reservation account disagrees with the live reservations on cpuMillis \(0 vs 1000\)/.test(e.message));
  db.prepare('DELETE FROM reservation_totals').run();
  assert.throws(() => new AdmissionAuthority({ db, ceilings, perWorld, observe: () => roomy }), (e: unknown) => e instanceof AdmissionInvariantError && /has no row/.test(e.message));
});
