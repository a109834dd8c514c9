// `worldline receipts verify-status` as a child process, on a real signed ledger (ReceiptLedger on files)
// and Collapse objects shaped as `kubectl get collapse -o json` prints them: a status receipt verifies with
// the key alone and against the ledger; every way the status can disagree with the key or the ledger is
// named (STATUS_INVALID, KEY_MISMATCH, SIGNATURE_INVALID, LEDGER_INVALID, NOT_IN_LEDGER, STATUS_MISMATCH).
// The same command on a real stack's Collapse: test/integration/collapse.test.ts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedger, receiptStatus, type SignedReceipt } from '../../node-agent/receipts/ledger.js';
import { PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';

const cli = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-status-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const digest = (c: string): string => `sha256:${c.repeat(64)}`;

function content(i: number, committed: boolean): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: committed ? 'COMMITTED' : 'DENIED' },
    world: { namespace: 'team-a', name: `world-${i}`, uid: `uid-${i}` },
    mode: 'Candidate',
    decision: { authorized: committed, reasons: committed ? [] : ['PRIME_MOVED', 'CONFLICT'] },
    evidence: committed
      ? { requirementHash: digest('1'), subject: digest('2'), verifierIdentity: digest('3'), executedVerifierIdentity: digest('3') }
      : { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: committed ? i + 1 : null, beforeDigest: digest('b'), afterDigest: committed ? digest('a') : null }],
    issuedAt: '2026-11-30T12:00:00.000Z',
  };
}

/** The Collapse the node-agent would have written for a receipt (status as the API server returns it). */
function collapseFor(i: number, r: SignedReceipt): Record<string, any> {
  const committed = r.body.transaction.state === 'COMMITTED';
  const receipt: Record<string, unknown> = { ...receiptStatus(r) };
  if (receipt.previous === null) delete receipt.previous; // a null field is not stored
  return {
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'Collapse',
    metadata: { namespace: 'team-a', name: `collapse-${i}` },
    spec: { worldRef: `world-${i}`, mode: 'Candidate' },
    status: {
      phase: committed ? 'Committed' : 'Denied',
      transaction: { id: `tx-${i}`, state: r.body.transaction.state },
      decision: r.body.decision,
      ...(committed ? { result: [{ root: 'repo', fromGeneration: i, toGeneration: i + 1, digest: digest('a') }] } : {}),
      receipt,
    },
  };
}

const keyDir = join(dir, 'keys');
const ledgerPath = join(dir, 'ledger.jsonl');
const ledger = ReceiptLedger.open({ path: ledgerPath, keyDir });
const first = ledger.append(content(1, true));
const second = ledger.append(content(2, false));
ledger.close();
const pem = join(keyDir, PUBLIC_PEM_FILE);

const otherKeys = join(dir, 'other-keys');
const otherLedgerPath = join(dir, 'other.jsonl');
{
  const other = ReceiptLedger.open({ path: otherLedgerPath, keyDir: otherKeys });
  other.append(content(1, true));
  other.close();
}

let n = 0;
function file(value: unknown): string {
  const p = join(dir, `input-${n++}`);
  writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
  return p;
}

function run(collapse: unknown, opts: { key?: string; ledger?: string; args?: string[] } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = opts.args ?? ['--collapse', file(collapse), '--public-key', opts.key ?? pem, ...(opts.ledger ? ['--ledger', opts.ledger] : [])];
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, 'receipts', 'verify-status', ...args], (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}

const failsWith = async (collapse: unknown, problem: string, detail: RegExp, opts: { key?: string; ledger?: string } = {}): Promise<void> => {
  const r = await run(collapse, opts);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`^FAIL collapse team-a/collapse-\\d: ${problem}: `));
  assert.match(r.stderr, detail);
};

test('a committed and a denied Collapse: the status receipt verifies with the key, and against the ledger', async () => {
  const alone = await run(collapseFor(1, first));
  assert.equal(alone.code, 0, alone.stderr);
  assert.match(alone.stdout, new RegExp(`^OK collapse team-a/collapse-1: receipt ${first.id} \\(sequence 1\\) signed by ${first.keyId} \\(the ledger was not given`));
  const withLedger = await run(collapseFor(1, first), { ledger: ledgerPath });
  assert.equal(withLedger.code, 0, withLedger.stderr);
  assert.match(withLedger.stdout, /in the ledger at line 1, and it says what the status says/);
  const denied = await run(collapseFor(2, second), { ledger: ledgerPath });
  assert.equal(denied.code, 0, denied.stderr);
  assert.match(denied.stdout, /receipt sha256:[0-9a-f]{64} \(sequence 2\).*at line 2/);
});

test('a status that was changed, or that another key signed, is named by the signature check', async () => {
  const c = collapseFor(1, first);
  await failsWith({ ...c, status: { ...c.status, receipt: { ...c.status.receipt, id: second.id } } }, 'SIGNATURE_INVALID', /does not verify over sha256:/);
  const flipped = c.status.receipt.signature.replace(/^./, (ch: string) => (ch === '0' ? '1' : '0'));
  await failsWith({ ...c, status: { ...c.status, receipt: { ...c.status.receipt, signature: flipped } } }, 'SIGNATURE_INVALID', /does not verify/);
  await failsWith(c, 'KEY_MISMATCH', new RegExp(`names key ${first.keyId}, not the given key ed25519:`), { key: join(otherKeys, PUBLIC_PEM_FILE) });
});

test('against the ledger: a status that says something else than its receipt is STATUS_MISMATCH, naming the field', async () => {
  const c = collapseFor(1, first);
  await failsWith({ ...c, status: { ...c.status, decision: { authorized: false, reasons: ['CONFLICT'] } } }, 'STATUS_MISMATCH', /decision: status \{"authorized":false,"reasons":\["CONFLICT"\]\}, receipt \{"authorized":true,"reasons":\[\]\}/, { ledger: ledgerPath });
  await failsWith({ ...c, status: { ...c.status, result: [{ ...c.status.result[0], digest: digest('f') }] } }, 'STATUS_MISMATCH', /result repo: status .*"digest":"sha256:f{64}".*receipt .*"digest":"sha256:a{64}"/, { ledger: ledgerPath });
  await failsWith({ ...c, spec: { ...c.spec, worldRef: 'world-9' } }, 'STATUS_MISMATCH', /world: status \{"namespace":"team-a","name":"world-9"\}/, { ledger: ledgerPath });
  await failsWith({ ...c, status: { ...c.status, receipt: { ...c.status.receipt, sequence: 2 } } }, 'STATUS_MISMATCH', /sequence: status 2, receipt 1/, { ledger: ledgerPath });
  await failsWith({ ...c, status: { ...c.status, result: [] } }, 'STATUS_MISMATCH', /result "repo": in the receipt, not in the status/, { ledger: ledgerPath });
});

test('against the ledger: a receipt the ledger does not hold, and a ledger that does not verify, are named', async () => {
  // The other ledger's first receipt is signed by the other key: it verifies alone, and is in no ledger of ours.
  const otherLine = JSON.parse(readFileSync(otherLedgerPath, 'utf8').split('\n')[0]!) as { id: string; signature: string; keyId: string };
  const c = collapseFor(1, first);
  const foreign = { ...c, status: { ...c.status, receipt: { id: otherLine.id, sequence: 1, signature: otherLine.signature, keyId: otherLine.keyId } } };
  const otherPem = join(otherKeys, PUBLIC_PEM_FILE);
  assert.equal((await run(foreign, { key: otherPem })).code, 0);
  await failsWith(foreign, 'LEDGER_INVALID', /line 1: KEY_MISMATCH/, { key: otherPem, ledger: ledgerPath });
  // A ledger our key signed that holds other receipts only.
  const elsewhere = join(dir, 'elsewhere.jsonl');
  const l = ReceiptLedger.open({ path: elsewhere, keyDir });
  l.append(content(3, true));
  l.close();
  await failsWith(c, 'NOT_IN_LEDGER', new RegExp(`no receipt ${first.id} in the ledger \\(1 receipts\\)`), { ledger: elsewhere });
  const truncated = file(readFileSync(ledgerPath, 'utf8').split('\n')[1] + '\n');
  await failsWith(c, 'LEDGER_INVALID', /line 1: /, { ledger: truncated });
});

test('input that is not a Collapse with a receipt is STATUS_INVALID; usage and read errors exit 2', async () => {
  const c = collapseFor(1, first);
  await failsWith({ ...c, status: { phase: 'Preparing' } }, 'STATUS_INVALID', /has no status.receipt/);
  await failsWith({ ...c, status: { ...c.status, receipt: { ...c.status.receipt, id: 'sha256:short' } } }, 'STATUS_INVALID', /id is not sha256:<64 hex>/);
  const notCollapse = await run({ kind: 'World' });
  assert.equal(notCollapse.code, 1);
  assert.match(notCollapse.stderr, /STATUS_INVALID: not a Collapse object/);
  for (const args of [[], ['--collapse', file(c)], ['--public-key', pem], ['--collapse', file(c), '--public-key', pem, '--extra']]) {
    const r = await run(undefined, { args });
    assert.equal(r.code, 2, JSON.stringify(args));
    assert.match(r.stderr, /usage: worldline receipts verify-status/);
  }
  const notJson = await run(undefined, { args: ['--collapse', file('{'), '--public-key', pem] });
  assert.equal(notJson.code, 2);
  assert.match(notJson.stderr, /cannot read .* as JSON/);
  const noLedger = await run(undefined, { args: ['--collapse', file(c), '--public-key', pem, '--ledger', join(dir, 'missing')] });
  assert.equal(noLedger.code, 2);
  assert.match(noLedger.stderr, /cannot read .*missing/);
});
