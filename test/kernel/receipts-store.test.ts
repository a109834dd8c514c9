// Receipts in the node store on real files: each appended line is also a row of the `receipts` table
// (equal to the line), rows a crash left out are backfilled from the file on open, a row that differs from
// the file is refused (RECEIPTS_DIVERGED), and the export mirror holds the ledger's exact bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { canonicalJson } from '../../core/canonical-json.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedgerError } from '../../node-agent/receipts/errors.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { openCollapseLedger, receiptPaths } from '../../node-agent/receipts/open-ledger.js';
import { readLines } from '../../node-agent/receipts/read-lines.js';
import { readReceiptRows, type ReceiptRow } from '../../node-agent/receipts/receipt-rows.js';
import { migrate } from '../../node-agent/store/store-schema.js';
import { openTestStore } from './store-fixtures.js';

const NOW = new Date('2026-05-06T07:08:09.000Z');

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function content(i: number): ReceiptContent {
  const committed = i % 2 === 1;
  return {
    transaction: { id: `tx-${i}`, state: committed ? 'COMMITTED' : 'DENIED' },
    world: { namespace: 'ns', name: `w${i}`, uid: `u${i}` },
    mode: 'Candidate',
    decision: { authorized: committed, reasons: committed ? [] : ['CONFLICT'] },
    evidence: { requirementHash: 'sha256:req', subject: `sha256:s${i}`, verifierIdentity: 'sha256:v', executedVerifierIdentity: 'sha256:v' },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: committed ? i + 1 : null, beforeDigest: `sha256:b${i}`, afterDigest: committed ? `sha256:a${i}` : null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

const refusedWith = (code: string) => (e: unknown) => e instanceof ReceiptLedgerError && e.code === code;

/** A ledger with `db` in a scratch directory, and the database it writes to (a file, schema current). */
function setup(t: TestContext): { opts: Parameters<typeof ReceiptLedger.open>[0]; db: Database.Database; dir: string } {
  const dir = scratch(t);
  const db = new Database(join(dir, 'state.db'));
  t.after(() => db.close());
  migrate(db);
  return { opts: { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys'), db, now: () => NOW }, db, dir };
}

function fileLines(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return text === '' ? [] : text.slice(0, -1).split('\n');
}

function appendAll(opts: Parameters<typeof ReceiptLedger.open>[0], from: number, to: number): void {
  const l = ReceiptLedger.open(opts);
  for (let i = from; i <= to; i++) l.append(content(i));
  l.close();
}

test('openCollapseLedger: each append is a row equal to its line, and the export holds the ledger bytes', async (t) => {
  const dir = scratch(t);
  const store = await openTestStore(t, join(dir, 'store'));
  const exportPath = join(dir, 'export.jsonl');
  const opened = openCollapseLedger(store, { exportPath });
  const signed = [1, 2, 3].map((i) => opened.ledger.append(content(i)));
  opened.ledger.close();

  assert.equal(opened.path, join(store.dir, 'receipts', 'ledger.jsonl'));
  assert.equal(opened.publicKeyPath, receiptPaths(store).publicKeyPem);
  assert.equal(readFileSync(opened.publicKeyPath, 'utf8'), opened.ledger.publicKeyPem);
  const ledgerBytes = readFileSync(opened.path);
  assert.ok(readFileSync(exportPath).equals(ledgerBytes), 'the export mirror holds exactly the ledger bytes');

  const lines = fileLines(opened.path);
  const rows = readReceiptRows(store.db);
  assert.equal(rows.length, 3);
  rows.forEach((row, i) => {
    const s = signed[i]!;
    const expected: ReceiptRow = {
      sequence: i + 1,
      id: s.id,
      previous: s.body.previous,
      transactionId: `tx-${i + 1}`,
      state: s.body.transaction.state,
      bodyJson: canonicalJson(s.body),
      signature: s.signature,
      keyId: s.keyId,
      line: lines[i]!,
      appendedAt: store.now().toISOString(),
    };
    assert.deepEqual(row, expected);
  });
});

test('a row the insert missed after the line was committed is backfilled from the file on reopen', (t) => {
  const { opts, db } = setup(t);
  appendAll(opts, 1, 2);
  // The line is fsynced, then the insert fails: what a crash between the two leaves on disk.
  db.exec(`CREATE TRIGGER no_rows BEFORE INSERT ON receipts BEGIN SELECT RAISE(ABORT, 'simulated crash'); END`);
  const l = ReceiptLedger.open(opts);
  assert.throws(() => l.append(content(3)), refusedWith('RECEIPTS_ROW_FAILED'));
  assert.throws(() => l.append(content(4)), refusedWith('LEDGER_BROKEN'), 'nothing more is appended until reopened');
  l.close();
  db.exec('DROP TRIGGER no_rows');
  assert.equal(fileLines(opts.path).length, 3, 'the receipt is in the ledger');
  assert.equal(readReceiptRows(db).length, 2, 'but has no row');

  const reopened = ReceiptLedger.open(opts);
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path));
  reopened.append(content(4));
  reopened.close();
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path));
});

test('deleted rows are backfilled: the tail, a row inside a rolled-back caller transaction, a whole new table', (t) => {
  const { opts, db } = setup(t);
  appendAll(opts, 1, 4);
  const before = readReceiptRows(db);

  db.prepare('DELETE FROM receipts WHERE sequence >= ?').run(3);
  ReceiptLedger.open(opts).close();
  assert.deepEqual(readReceiptRows(db), before, 'the tail rows are back, equal to what the appends wrote');

  const l = ReceiptLedger.open(opts);
  assert.throws(() => db.transaction(() => {
    l.append(content(5));
    throw new Error('the caller rolls back');
  })(), /the caller rolls back/);
  l.append(content(6));
  l.close();
  assert.deepEqual(readReceiptRows(db).map((r) => r.sequence), [1, 2, 3, 4, 6], 'row 5 went with the rollback; line 5 did not');
  ReceiptLedger.open(opts).close();
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path));

  db.exec('DELETE FROM receipts');
  ReceiptLedger.open(opts).close();
  assert.deepEqual(readReceiptRows(db).map((r) => r.line), fileLines(opts.path), 'an empty table (a store just migrated) gets every line');
});

test('a line that would be backfilled is checked first: a bad signature is not copied into the table', (t) => {
  const { opts, db } = setup(t);
  appendAll(opts, 1, 3);
  const lines = fileLines(opts.path);
  db.prepare('DELETE FROM receipts WHERE sequence = ?').run(2);
  const forged = lines[1]!.replace(/"signature":"([0-9a-f])/, (_m, c: string) => `"signature":"${c === '0' ? '1' : '0'}`);
  assert.notEqual(forged, lines[1]);
  writeFileSync(opts.path, [lines[0], forged, lines[2]].join('\n') + '\n');
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_CORRUPT'));
  assert.deepEqual(readReceiptRows(db).map((r) => r.sequence), [1, 3], 'nothing was inserted');
});

test('a row that differs from the ledger is refused with RECEIPTS_DIVERGED', async (t) => {
  const cases: { name: string; spoil: (db: Database.Database, path: string) => void }[] = [
    { name: 'a row whose line was edited', spoil: (db) => db.prepare(`UPDATE receipts SET line = replace(line, '"name":"w2"', '"name":"w9"') WHERE sequence = ?`).run(2) },
    { name: 'a row whose state was edited (its line kept)', spoil: (db) => db.prepare(`UPDATE receipts SET state = 'COMMITTED' WHERE sequence = ?`).run(2) },
    { name: 'a row whose body was edited', spoil: (db) => db.prepare(`UPDATE receipts SET body_json = replace(body_json, 'w1', 'w7') WHERE sequence = ?`).run(1) },
    {
      name: 'a row past the end of the ledger',
      spoil: (db) => db.prepare(`INSERT INTO receipts SELECT 4, 'sha256:x', id, 'tx-x', state, body_json, signature, key_id, line, appended_at FROM receipts WHERE sequence = 3`).run(),
    },
    { name: 'a ledger cut short under its rows', spoil: (_db, path) => writeFileSync(path, fileLines(path).slice(0, 2).join('\n') + '\n') },
  ];
  for (const c of cases) {
    await t.test(c.name, (tt) => {
      const { opts, db } = setup(tt);
      appendAll(opts, 1, 3);
      const ledger = readFileSync(opts.path);
      const rows = readReceiptRows(db);
      c.spoil(db, opts.path);
      assert.throws(() => ReceiptLedger.open(opts), refusedWith('RECEIPTS_DIVERGED'));
      // Refused, not repaired: the file is as it was spoiled and opening without the table still works.
      db.exec('DELETE FROM receipts');
      writeFileSync(opts.path, ledger);
      ReceiptLedger.open(opts).close();
      assert.deepEqual(readReceiptRows(db), rows, 'once the spoiled side is restored, the rows are rebuilt exactly');
    });
  }
});

test('an unfinished last line is cut at open when the rows witness it was never acknowledged; a cut receipt is refused, the file untouched', (t) => {
  const { opts, db } = setup(t);
  appendAll(opts, 1, 3);
  const whole = readFileSync(opts.path);
  const rows = readReceiptRows(db);

  // What a crash mid-append leaves: part of a next line, no newline, no row.
  const partial = whole.subarray(0, whole.indexOf(0x0a) + 1).subarray(0, 700);
  writeFileSync(opts.path, Buffer.concat([whole, partial]));
  const l = ReceiptLedger.open(opts);
  assert.equal(l.tornTailCut, partial.length, 'exactly the unfinished bytes are cut');
  assert.ok(readFileSync(opts.path).equals(whole), 'the whole lines are kept byte for byte');
  assert.equal(l.last()?.body.sequence, 3);
  l.append(content(4));
  l.close();
  assert.equal(fileLines(opts.path).length, 4, 'the next append follows the last whole line');
  assert.deepEqual(readReceiptRows(db).slice(0, 3), rows);

  // The last acknowledged receipt cut in half (its row exists): not a crash's tail. Refused, nothing cut.
  const four = readFileSync(opts.path);
  const halved = four.subarray(0, four.length - 300);
  writeFileSync(opts.path, halved);
  assert.throws(() => ReceiptLedger.open(opts), (e: unknown) => refusedWith('RECEIPTS_DIVERGED')(e) && /row for sequence 4/.test((e as Error).message));
  assert.ok(readFileSync(opts.path).equals(halved), 'the refused ledger is left exactly as found');

  // Without the rows nothing witnesses what was acknowledged: a torn tail is refused as before.
  const { db: _db, ...fileOnly } = opts;
  assert.throws(() => ReceiptLedger.open(fileOnly), refusedWith('LEDGER_TORN_TAIL'));
  assert.ok(readFileSync(opts.path).equals(halved));
});

test('readLines splits on newlines across read chunks and keeps multi-byte characters whole', (t) => {
  const dir = scratch(t);
  const lines = ['', 'a', 'é'.repeat(700_000), 'x'.repeat((1 << 20) - 3), '€ at a boundary', 'z'.repeat(3 << 20), 'last, without a newline'];
  const path = join(dir, 'lines.txt');
  writeFileSync(path, lines.join('\n'));
  const fd = openSync(path, 'r');
  try {
    assert.deepEqual([...readLines(fd)], lines);
  } finally {
    closeSync(fd);
  }
});
