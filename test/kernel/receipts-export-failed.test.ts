// The receipts export mirror (node-agent --receipts-export) failing after the ledger took a receipt: the
// append reports LEDGER_EXPORT_FAILED, the receipt stays in the ledger, the ledger refuses further appends
// until it is reopened, and reopening catches the mirror up. The mirror lives on a real, full filesystem
// (a 16 KiB tmpfs filled to the last byte), so the kernel itself refuses the write (ENOSPC).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedgerError } from '../../node-agent/receipts/errors.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the receipts export failure test (it mounts a tmpfs)');

function content(i: number): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'DENIED' },
    world: { namespace: 'ns', name: `w${i}`, uid: `u${i}` },
    mode: 'Candidate',
    decision: { authorized: false, reasons: ['CHECK_NOT_PASSED'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 1, toGeneration: null, beforeDigest: 'sha256:b', afterDigest: null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

const refusedWith = (code: string) => (e: unknown) => e instanceof ReceiptLedgerError && e.code === code;

/** Writes as much as fits into `path` (the filesystem is full afterwards). */
function fill(path: string): void {
  try {
    writeFileSync(path, Buffer.alloc(1 << 20, 0x61));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  }
}

test('an append the export mirror cannot take is LEDGER_EXPORT_FAILED; the ledger keeps it and a reopen catches the mirror up', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-export-'));
  const small = join(dir, 'small');
  mkdirSync(small);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k,mode=0700', 'wl-export-test', small]);
  t.after(() => {
    execFileSync('umount', ['-l', small]);
    rmSync(dir, { recursive: true, force: true });
  });
  const opts = { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys'), exportPath: join(small, 'export.jsonl') };

  const ledger = ReceiptLedger.open(opts);
  const first = ledger.append(content(1));
  assert.equal(readFileSync(opts.exportPath, 'utf8'), readFileSync(opts.path, 'utf8'), 'the mirror took the first receipt');

  const filler = join(small, 'filler');
  fill(filler);
  // The mirror's last page still has room for a few lines; the first line past it finds the filesystem full.
  let failed: unknown;
  let appended = 1;
  while (failed === undefined && appended < 200) {
    try {
      ledger.append(content(appended + 1));
    } catch (e) {
      failed = e;
    }
    appended++;
  }
  assert.ok(refusedWith('LEDGER_EXPORT_FAILED')(failed), `the append past the full mirror did not fail with LEDGER_EXPORT_FAILED: ${String(failed)}`);
  assert.match((failed as Error).message, /ENOSPC/);
  const main = readFileSync(opts.path, 'utf8');
  const lines = main.trim().split('\n');
  assert.equal(lines.length, appended, 'the ledger holds the receipt the mirror missed');
  assert.match(lines[appended - 1]!, new RegExp(`"sequence":${appended}\\b`));
  const mirror = readFileSync(opts.exportPath, 'utf8');
  assert.ok(mirror.length < main.length && main.startsWith(mirror), 'the mirror lags the ledger (a prefix of it)');
  assert.throws(() => ledger.append(content(appended + 1)), refusedWith('LEDGER_BROKEN'), 'a ledger whose mirror missed an append takes no more until reopened');
  ledger.close();

  rmSync(filler);
  const reopened = ReceiptLedger.open(opts);
  assert.equal(readFileSync(opts.exportPath, 'utf8'), readFileSync(opts.path, 'utf8'), 'the reopen caught the mirror up');
  assert.equal(reopened.last()?.body.sequence, appended);
  assert.equal(reopened.readAll()[0]?.id, first.id);
  const next = reopened.append(content(appended + 1));
  assert.equal(next.body.sequence, appended + 1);
  assert.equal(readFileSync(opts.exportPath, 'utf8'), readFileSync(opts.path, 'utf8'));
  reopened.close();
});
