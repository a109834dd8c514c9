// reserveRun over a store database opened as the node-agent opens it (openLockedDatabase: WAL, synchronous
// FULL), with the real admission authority: a yes is one commit holding the reservation, the id range and
// what the caller records; a refusal or a failed record leaves nothing held. Commits are counted in the
// write-ahead log itself: each commit ends with one frame that carries the database's size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { AdmissionAuthority, type RunAdmission } from '../../node-agent/admission/admission-authority.js';
import { reserveRun, releaseRun } from '../../node-agent/sandbox/run-reservation.js';
import { slotHolders } from '../../node-agent/sandbox/id-slots.js';
import { openLockedDatabase } from '../../node-agent/store/store-lock.js';
import { migrate } from '../../node-agent/store/store-schema.js';
import { getWorldRecord, putWorldRecord } from '../../node-agent/store/world-records.js';
import { ceilings, GiB, perWorld, roomy } from '../support/admission-fixtures.js';

const now = new Date('2026-01-01T00:00:00Z');

function setup(t: { after(fn: () => void): void }, idSlots = 4) {
  const dir = mkdtempSync(join(tmpdir(), 'wl-reservation-'));
  const path = join(dir, 'state.db');
  const db = openLockedDatabase(path, dir);
  migrate(db);
  db.pragma('wal_autocheckpoint = 0'); // every frame stays in the log, so the commits can be counted
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const authority = new AdmissionAuthority({ db, ceilings, perWorld, observe: () => roomy, clock: () => now });
  const admission: RunAdmission = { admit: (holder, stage, resources) => authority.admit({ holder, stage, resources }), release: (holder) => void authority.release(holder), checkResources: () => null };
  return { db, authority, deps: { admission, db, idBase: 100_000, idSlots }, commits: () => walCommits(`${path}-wal`) };
}

/** Commit frames in the write-ahead log: frames whose header's second word (the database size after the commit) is not 0. */
function walCommits(walPath: string): number {
  const wal = readFileSync(walPath);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salt = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  let commits = 0;
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    if (wal.readUInt32BE(off + 8) !== salt[0] || wal.readUInt32BE(off + 12) !== salt[1]) break; // left over from before a reset
    if (wal.readUInt32BE(off + 4) !== 0) commits++;
  }
  return commits;
}

const record = (db: Database, uid: string) => putWorldRecord(db, { uid, namespace: 'default', name: uid, state: 'running', status: { phase: 'Admitted' } }, now);

test('a yes is one commit: the reservation, the id range and what the caller records', (t) => {
  const { db, authority, deps, commits } = setup(t);
  const before = commits();
  const r = reserveRun(deps, 'w1', 'agent', {}, now, (admitted) => {
    record(db, 'w1');
    return { what: 'the record', idBase: admitted.idBase };
  });
  assert.ok(r.ok, JSON.stringify(r));
  assert.deepEqual(r.recorded, { what: 'the record', idBase: 100_000 }, "the yes carries what the record returned, made from the yes it was given");
  assert.equal(commits() - before, 1, 'one commit, one fsync of the log');
  assert.equal(authority.reservations().length, 1);
  assert.deepEqual(slotHolders(db), ['w1']);
  assert.equal(r.idBase, 100_000, 'the first slot');
  assert.equal(getWorldRecord(db, 'w1')?.state, 'running');
  // Without a record, still one commit.
  const plain = commits();
  assert.ok(reserveRun(deps, 'c1', 'check', {}, now).ok);
  assert.equal(commits() - plain, 1);
  assert.deepEqual(slotHolders(db), ['w1', 'c1']);
});

test('a record that fails takes the reservation and the id range with it', (t) => {
  const { db, authority, deps, commits } = setup(t);
  const before = commits();
  assert.throws(() => reserveRun(deps, 'w1', 'agent', {}, now, () => {
    record(db, 'w1');
    throw new Error('disk full');
  }), /disk full/);
  assert.equal(commits(), before, 'nothing was committed');
  assert.deepEqual(authority.reservations(), []);
  assert.deepEqual(slotHolders(db), []);
  assert.equal(getWorldRecord(db, 'w1'), undefined);
  assert.ok(reserveRun(deps, 'w1', 'agent', {}, now).ok, 'the holder is admitted afresh afterwards');
});

test('no id range left: a wait that holds nothing, and nothing is recorded', (t) => {
  const { db, authority, deps } = setup(t, 1);
  assert.ok(reserveRun(deps, 'w1', 'agent', {}, now).ok);
  let recorded = false;
  const r = reserveRun(deps, 'w2', 'agent', {}, now, () => (recorded = true));
  assert.deepEqual(r.ok ? r : { ok: r.ok, wait: r.wait, code: r.code }, { ok: false, wait: true, code: 'RESOURCES_UNAVAILABLE' });
  assert.equal(recorded, false);
  assert.deepEqual(authority.reservations().map((x) => x.holder), ['w1']);
  assert.deepEqual(slotHolders(db), ['w1']);
  releaseRun(deps, 'w1');
  assert.ok(reserveRun(deps, 'w2', 'agent', {}, now).ok, 'admitted once the range is back');
});

test('a refusal by admission records nothing and holds nothing', (t) => {
  const { db, authority, deps } = setup(t);
  let recorded = false;
  const r = reserveRun(deps, 'w1', 'agent', { memoryBytes: 64 * GiB }, now, () => (recorded = true));
  assert.equal(r.ok, false);
  assert.equal(recorded, false);
  assert.deepEqual(authority.reservations(), []);
  assert.deepEqual(slotHolders(db), []);
});
