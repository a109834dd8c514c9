// Grouped appends (ReceiptLedger.appendAsync) on real files and a real SQLite database: appends asked for
// together are committed as one group (one write, one fsync, one row transaction, one mirror write), in
// the order asked, chained and signed; a failed write rejects the whole group and breaks the ledger; the
// synchronous append refuses while a group is pending; receiptOf finds a receipt that is not the head;
// and the ledger refuses to open when its two Ed25519 implementations sign differently.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { loadPublicKey, verifyLedger } from '../../cli/receipts-verify.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ed } from '../../node-agent/receipts/ed25519.js';
import { ReceiptLedgerError } from '../../node-agent/receipts/errors.js';
import { ReceiptLedger, type LedgerOptions } from '../../node-agent/receipts/ledger.js';
import { readReceiptRows } from '../../node-agent/receipts/receipt-rows.js';
import { PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';
import { migrate } from '../../node-agent/store/store-schema.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the grouped receipt appends test (it mounts a tmpfs)');

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-group-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function content(i: number, state: 'COMMITTED' | 'DENIED' = 'DENIED'): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state },
    world: { namespace: 'ns', name: `w${i}`, uid: `u${i}` },
    mode: 'Candidate',
    decision: { authorized: state === 'COMMITTED', reasons: state === 'COMMITTED' ? [] : ['CONFLICT'] },
    evidence: state === 'COMMITTED'
      ? { requirementHash: 'sha256:req', subject: `sha256:s${i}`, verifierIdentity: 'sha256:v', executedVerifierIdentity: 'sha256:v' }
      : { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: state === 'COMMITTED' ? i + 1 : null, beforeDigest: `sha256:b${i}`, afterDigest: state === 'COMMITTED' ? `sha256:a${i}` : null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

const refusedWith = (code: string) => (e: unknown) => e instanceof ReceiptLedgerError && e.code === code;

/** Options of a ledger with a store database (schema current) and an export mirror, in `dir`. */
function withStore(t: TestContext, dir: string): { opts: LedgerOptions & { exportPath: string }; db: Database.Database } {
  const db = new Database(join(dir, 'state.db'));
  t.after(() => db.close());
  migrate(db);
  return { opts: { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys'), exportPath: join(dir, 'export.jsonl'), db }, db };
}

function fileLines(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return text === '' ? [] : text.slice(0, -1).split('\n');
}

/** The ledger file through the independent verifier (OpenSSL, cli/receipts-verify.ts): form, chain, signatures. */
function verified(opts: LedgerOptions): number {
  const v = verifyLedger(readFileSync(opts.path), loadPublicKey(readFileSync(join(opts.keyDir, PUBLIC_PEM_FILE), 'utf8')));
  assert.ok(v.ok, `the ledger does not verify: ${JSON.stringify(v)}`);
  return v.count;
}

test('appends asked for together are one group: consecutive, chained, one fsync; rows and mirror equal the ledger', async (t) => {
  const { opts, db } = withStore(t, scratch(t));
  const l = ReceiptLedger.open(opts);
  t.after(() => l.close());
  l.append(content(1)); // a synchronous append first: the group chains onto it
  const signed = await Promise.all(Array.from({ length: 32 }, (_, i) => l.appendAsync(content(i + 2))));

  assert.deepEqual(signed.map((r) => r.body.sequence), Array.from({ length: 32 }, (_, i) => i + 2), 'sequences follow the order appendAsync was called in');
  assert.deepEqual(signed.map((r) => r.body.transaction.id), Array.from({ length: 32 }, (_, i) => `tx-${i + 2}`));
  assert.deepEqual(l.groupStats(), { groups: 1, receipts: 32, largest: 32 }, 'one group, so one write and one fsync, for the 32');
  assert.equal(verified(opts), 33);
  assert.deepEqual(l.readAll().slice(1), signed, 'what each promise resolved with is the line in the ledger');
  assert.deepEqual(l.last(), signed[31]);
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path), 'a row per line, equal to it');
  assert.ok(readFileSync(opts.exportPath).equals(readFileSync(opts.path)), 'the mirror holds the ledger bytes');
});

test('appends that arrive while a group is being written form the next group', async (t) => {
  const { opts, db } = withStore(t, scratch(t));
  const l = ReceiptLedger.open(opts);
  t.after(() => l.close());
  // 8 writers, each appending again as soon as its last receipt is acknowledged: the 8 continuations run
  // together after a group settles, so later groups gather them instead of fsyncing one by one.
  let next = 0;
  const perWriter = 25;
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let k = 0; k < perWriter; k++) await l.appendAsync(content(++next));
  }));
  const stats = l.groupStats();
  assert.equal(stats.receipts, 200);
  assert.ok(stats.groups <= 200 / 4, `200 receipts from 8 writers took ${stats.groups} groups (fsyncs); grouping would take about 25`);
  assert.equal(stats.largest, 8);
  assert.equal(verified(opts), 200);
  const ids = l.readAll().map((r) => r.body.transaction.id);
  assert.equal(new Set(ids).size, 200, 'each append is in the ledger once');
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path));
  assert.ok(readFileSync(opts.exportPath).equals(readFileSync(opts.path)));
});

test('a content the receipt schema refuses fails alone; the rest of its group chains without it', async (t) => {
  const { opts } = withStore(t, scratch(t));
  const l = ReceiptLedger.open(opts);
  t.after(() => l.close());
  const bad = { ...content(2), transaction: { id: 'tx-2', state: 'MAYBE' } } as unknown as ReceiptContent;
  const results = await Promise.allSettled([l.appendAsync(content(1)), l.appendAsync(bad), l.appendAsync(content(3))]);
  assert.equal(results[1].status, 'rejected');
  const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  assert.deepEqual(ok.map((r) => [r.body.sequence, r.body.transaction.id]), [[1, 'tx-1'], [2, 'tx-3']]);
  assert.equal(verified(opts), 2);
  await l.appendAsync(content(4)); // the ledger is not broken by a refused content
});

test('a synchronous append refuses while grouped appends are pending (LEDGER_BUSY); a closed ledger rejects queued appends', async (t) => {
  const { opts } = withStore(t, scratch(t));
  const l = ReceiptLedger.open(opts);
  const pending = l.appendAsync(content(1));
  assert.throws(() => l.append(content(2)), refusedWith('LEDGER_BUSY'));
  await pending;
  await l.idle();
  assert.equal(l.append(content(2)).body.sequence, 2, 'once the group is settled the synchronous append chains on');

  const queued = l.appendAsync(content(3));
  l.close();
  await assert.rejects(queued, refusedWith('LEDGER_CLOSED'));
  await assert.rejects(l.appendAsync(content(4)), refusedWith('LEDGER_CLOSED'));
  assert.equal(fileLines(opts.path).length, 2);
});

test('receiptOf finds a transaction anywhere in the ledger, by the rows or (without a store) by the file', async (t) => {
  const dir = scratch(t);
  const { opts } = withStore(t, dir);
  const l = ReceiptLedger.open(opts);
  t.after(() => l.close());
  const signed = await Promise.all([1, 2, 3, 4].map((i) => l.appendAsync(content(i, i % 2 === 0 ? 'COMMITTED' : 'DENIED'))));
  assert.deepEqual(l.receiptOf('tx-2', 'COMMITTED'), signed[1], 'not the head: found by its row');
  assert.deepEqual(l.receiptOf('tx-4', 'COMMITTED'), signed[3]);
  assert.equal(l.receiptOf('tx-2', 'DENIED'), null, 'the state must match too');
  assert.equal(l.receiptOf('tx-9', 'DENIED'), null);

  const fileOnly = ReceiptLedger.open({ path: opts.path, keyDir: opts.keyDir });
  t.after(() => fileOnly.close());
  assert.deepEqual(fileOnly.receiptOf('tx-1', 'DENIED'), signed[0], 'found by scanning the file');
  assert.equal(fileOnly.receiptOf('tx-1', 'COMMITTED'), null);
});

test('a write the filesystem refuses rejects the whole group, cuts its bytes off again and breaks the ledger', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-group-'));
  const small = join(dir, 'small');
  mkdirSync(small);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k,mode=0700', 'wl-group-test', small]);
  t.after(() => {
    execFileSync('umount', ['-l', small]);
    rmSync(dir, { recursive: true, force: true });
  });
  const db = new Database(join(dir, 'state.db'));
  t.after(() => db.close());
  migrate(db);
  const opts: LedgerOptions = { path: join(small, 'ledger.jsonl'), keyDir: join(dir, 'keys'), db };
  const l = ReceiptLedger.open(opts);
  for (let i = 1; i <= 3; i++) l.append(content(i));
  const before = readFileSync(opts.path);
  const filler = join(small, 'filler');
  try {
    writeFileSync(filler, Buffer.alloc(1 << 20, 0x61));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  }
  // 8 lines (~5.6 KB) cannot fit in what is left of the ledger's last page: the kernel refuses the rest (ENOSPC).
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => l.appendAsync(content(i + 4))));
  for (const r of results) {
    assert.ok(r.status === 'rejected', 'every append of the group is rejected');
    assert.ok(refusedWith('LEDGER_BROKEN')(r.reason), String(r.reason));
    assert.match(String(r.reason), /ENOSPC/);
  }
  assert.equal(statSync(opts.path).size, before.length, 'the part of the group that was written is cut off again');
  assert.equal(l.last()?.body.sequence, 3);
  await assert.rejects(l.appendAsync(content(20)), refusedWith('LEDGER_BROKEN'));
  assert.throws(() => l.append(content(20)), refusedWith('LEDGER_BROKEN'));
  l.close();

  rmSync(filler);
  const reopened = ReceiptLedger.open(opts);
  assert.ok(readFileSync(opts.path).equals(before));
  assert.equal(reopened.last()?.body.sequence, 3);
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path), 'no row of the rejected group');
  assert.equal((await reopened.appendAsync(content(4))).body.sequence, 4);
  reopened.close();
  assert.equal(verified(opts), 4);
});

test('the ledger does not open when @noble/ed25519 and OpenSSL sign the probe differently (LEDGER_SIGNER_DISAGREES)', (t) => {
  const dir = scratch(t);
  const opts = { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys') };
  ReceiptLedger.open(opts).close();
  const sha512 = ed.hashes.sha512!;
  t.after(() => {
    ed.hashes.sha512 = sha512;
  });
  // A broken hash for @noble on inputs longer than a seed: both still derive the same public key from the
  // 32-byte seed (so KEY_INVALID does not fire first), but @noble's signatures come out wrong.
  ed.hashes.sha512 = (m: Uint8Array) => (m.length > 32 ? new Uint8Array(createHash('sha512').update(m).update('x').digest()) : sha512(m));
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_SIGNER_DISAGREES'));
  ed.hashes.sha512 = sha512;
  ReceiptLedger.open(opts).close();
});
