// The receipt ledger and its signing key on real files: key creation and refusals, reopening, the
// export mirror, and refusals of a torn or foreign ledger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedgerError } from '../../node-agent/receipts/errors.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { KEY_FILE, loadOrCreateSigningKey } from '../../node-agent/receipts/signing-key.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the receipt ledger tests (a key owned by another uid)');

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function content(i: number): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'DENIED' },
    world: { namespace: 'ns', name: `w${i}`, uid: `u${i}` },
    mode: 'CheckpointReturn',
    decision: { authorized: false, reasons: ['CHECKPOINT_WITNESS_MISSING'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 3, toGeneration: null, beforeDigest: 'sha256:b', afterDigest: null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

const refusedWith = (code: string) => (e: unknown) => e instanceof ReceiptLedgerError && e.code === code;

test('a new key is created 0600 in a 0700 directory, and loads again as the same key', (t) => {
  const dir = scratch(t);
  const keyDir = join(dir, 'config', 'worldline');
  const k1 = loadOrCreateSigningKey(keyDir);
  assert.equal(statSync(join(keyDir, KEY_FILE)).mode & 0o777, 0o600);
  assert.equal(statSync(keyDir).mode & 0o777, 0o700);
  const k2 = loadOrCreateSigningKey(keyDir);
  assert.equal(k2.keyId, k1.keyId);
  assert.match(k1.keyId, /^ed25519:[0-9a-f]{16}$/);
  assert.match(k1.publicKeyPem, /^-----BEGIN PUBLIC KEY-----/);
  assert.match(k1.publicKeyHex, /^[0-9a-f]{64}$/);
});

test('key file refusals', async (t) => {
  const cases: { name: string; spoil: (keyPath: string, keyDir: string) => void; code: string; opts?: object }[] = [
    { name: 'group-readable', spoil: (p) => chmodSync(p, 0o640), code: 'KEY_PERMISSIONS_TOO_OPEN' },
    { name: 'other-readable', spoil: (p) => chmodSync(p, 0o604), code: 'KEY_PERMISSIONS_TOO_OPEN' },
    { name: 'group-writable', spoil: (p) => chmodSync(p, 0o620), code: 'KEY_PERMISSIONS_TOO_OPEN' },
    { name: 'owned by another uid', spoil: (p) => chownSync(p, 54321, 54321), code: 'KEY_WRONG_OWNER' },
    {
      name: 'a symbolic link',
      spoil: (p, d) => {
        const real = join(d, 'real.key');
        writeFileSync(real, readFileSync(p), { mode: 0o600 });
        rmSync(p);
        symlinkSync(real, p);
      },
      code: 'KEY_NOT_REGULAR_FILE',
    },
    { name: 'not a key', spoil: (p) => writeFileSync(p, 'hello\n'), code: 'KEY_INVALID' },
    { name: 'a directory others can write', spoil: (_p, d) => chmodSync(d, 0o777), code: 'KEY_DIR_UNSAFE' },
  ];
  for (const c of cases) {
    await t.test(c.name, c.opts ?? {}, (tt) => {
      const keyDir = join(scratch(tt), 'keys');
      const key = loadOrCreateSigningKey(keyDir);
      c.spoil(key.keyPath, keyDir);
      assert.throws(() => loadOrCreateSigningKey(keyDir), refusedWith(c.code));
      assert.throws(() => ReceiptLedger.open({ path: join(keyDir, '..', 'ledger.jsonl'), keyDir }), refusedWith(c.code));
    });
  }
});

test('reopening continues the chain; readAll checks it', (t) => {
  const dir = scratch(t);
  const opts = { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys') };
  const a = ReceiptLedger.open(opts);
  assert.equal(a.last(), null);
  const r1 = a.append(content(1));
  const r2 = a.append(content(2));
  a.close();
  assert.equal(r1.body.sequence, 1);
  assert.equal(r1.body.previous, null);
  assert.equal(r2.body.previous, r1.id);
  const b = ReceiptLedger.open(opts);
  assert.deepEqual(b.last(), r2);
  const r3 = b.append(content(3));
  assert.equal(r3.body.sequence, 3);
  assert.equal(r3.body.previous, r2.id);
  assert.deepEqual(b.readAll(), [r1, r2, r3]);
  b.close();
  assert.throws(() => b.append(content(4)), refusedWith('LEDGER_CLOSED'));
});

test('the export mirrors every append; a lagging export is caught up, a different one refused', (t) => {
  const dir = scratch(t);
  const opts = { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys'), exportPath: join(dir, 'export.jsonl') };
  const l = ReceiptLedger.open(opts);
  for (let i = 1; i <= 5; i++) l.append(content(i));
  l.close();
  const main = readFileSync(opts.path, 'utf8');
  assert.equal(readFileSync(opts.exportPath, 'utf8'), main);

  const firstLines = main.split('\n').slice(0, 2).join('\n') + '\n';
  writeFileSync(opts.exportPath, firstLines); // the export missed three appends
  ReceiptLedger.open(opts).close();
  assert.equal(readFileSync(opts.exportPath, 'utf8'), main, 'caught up on open');

  writeFileSync(opts.exportPath, main.replace('"name":"w2"', '"name":"w9"'));
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_EXPORT_DIVERGED'));
  writeFileSync(opts.exportPath, main + main.split('\n')[0] + '\n');
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_EXPORT_DIVERGED'));
  assert.throws(() => ReceiptLedger.open({ ...opts, exportPath: opts.path }), refusedWith('LEDGER_EXPORT_DIVERGED'));
});

test('a torn, corrupt or foreign-key ledger is refused on open', (t) => {
  const dir = scratch(t);
  const opts = { path: join(dir, 'ledger.jsonl'), keyDir: join(dir, 'keys') };
  const l = ReceiptLedger.open(opts);
  for (let i = 1; i <= 3; i++) l.append(content(i));
  l.close();
  const good = readFileSync(opts.path);

  truncateSync(opts.path, good.length - 5);
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_TORN_TAIL'));

  writeFileSync(opts.path, good);
  appendFileSync(opts.path, '{"not":"a receipt"}\n');
  assert.throws(() => ReceiptLedger.open(opts), refusedWith('LEDGER_CORRUPT'));

  writeFileSync(opts.path, good);
  mkdirSync(join(dir, 'other'));
  assert.throws(() => ReceiptLedger.open({ ...opts, keyDir: join(dir, 'other', 'keys') }), refusedWith('LEDGER_KEY_MISMATCH'));

  const linked = join(dir, 'linked.jsonl');
  symlinkSync(opts.path, linked);
  assert.throws(() => ReceiptLedger.open({ ...opts, path: linked }), refusedWith('LEDGER_NOT_REGULAR_FILE'));

  writeFileSync(opts.path, good);
  ReceiptLedger.open(opts).close(); // and the intact file still opens
});
