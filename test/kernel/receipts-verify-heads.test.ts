// `worldline receipts verify --heads` on real ledger files, as a child process: a ledger that holds the
// head the cluster recorded passes (the head given as one JSON document or as the ConfigMap kubectl
// prints, with --node); a ledger rebuilt with the node's own key — valid on its own, signature by
// signature — but with other history before the head is refused HEAD_MISMATCH; one cut short is refused
// HEAD_MISSING; a head of another key or with a bad signature is refused by name.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nextHead, type LedgerHead } from '../../core/receipts/ledger-head.js';
import { parseLedgerLine } from '../../core/receipts/ledger-line.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';

const cli = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-heads-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function content(i: number, world: string): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'DENIED' },
    world: { namespace: 'team-a', name: world, uid: `uid-${i}` },
    mode: 'Candidate',
    decision: { authorized: false, reasons: ['CHECK_NOT_PASSED'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 1, toGeneration: null, beforeDigest: 'sha256:b', afterDigest: null }],
    issuedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  };
}

/** A ledger of `n` receipts signed with the key in `keyDir` (made there the first time). */
function ledger(name: string, keyDir: string, n: number, world: (i: number) => string): string {
  const path = join(dir, `${name}.jsonl`);
  const l = ReceiptLedger.open({ path, keyDir });
  for (let i = 1; i <= n; i++) l.append(content(i, world(i)));
  l.close();
  return path;
}

const keyDir = join(dir, 'keys');
const original = ledger('original', keyDir, 10, (i) => `world-${i}`);
const pem = join(keyDir, PUBLIC_PEM_FILE);

/** The head the controller would record for receipt `sequence` of a ledger file. */
function headOf(path: string, sequence: number): LedgerHead {
  const line = parseLedgerLine(readFileSync(path, 'utf8').split('\n')[sequence - 1]!);
  assert.ok(line.ok);
  const step = nextHead(undefined, { sequence, id: line.line.id, keyId: line.line.keyId, signature: line.line.signature }, 'node-1', new Date('2026-12-02T10:00:00Z'));
  assert.equal(step.kind, 'advance');
  return (step as { head: LedgerHead }).head;
}

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, 'receipts', 'verify', ...args], (err, stdout, stderr) => {
      const code = err ? ((err as { code?: unknown }).code as number) : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}

let n = 0;
const file = (text: string): string => {
  const p = join(dir, `head-${n++}.json`);
  writeFileSync(p, text);
  return p;
};

const head7 = headOf(original, 7);
const configMap = file(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'worldline-ledger-heads' }, data: { 'node-1': JSON.stringify(head7) } }));

test('a ledger that holds the recorded head passes, the head given alone or in the ConfigMap with --node', async () => {
  for (const args of [['--heads', file(JSON.stringify(head7))], ['--heads', configMap, '--node', 'node-1']]) {
    const r = await run(['--ledger', original, '--public-key', pem, ...args]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`it holds the head the cluster recorded for node-1: receipt 7 ${head7.receipt}`));
  }
  const none = await run(['--ledger', original, '--public-key', pem, '--heads', configMap, '--node', 'node-2']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /records no head for node node-2/);
  const noNode = await run(['--ledger', original, '--public-key', pem, '--heads', configMap]);
  assert.equal(noNode.code, 2);
  assert.match(noNode.stderr, /--node says whose head/);
});

test('history rewritten with the node\'s own key verifies alone but not against the head (HEAD_MISMATCH); a ledger cut short is HEAD_MISSING', async () => {
  // Root on the node re-signs a ledger in which receipt 3 says something else: every line verifies.
  const rewritten = ledger('rewritten', keyDir, 10, (i) => (i === 3 ? 'world-forgotten' : `world-${i}`));
  const alone = await run(['--ledger', rewritten, '--public-key', pem]);
  assert.equal(alone.code, 0, alone.stderr);
  const against = await run(['--ledger', rewritten, '--public-key', pem, '--heads', configMap, '--node', 'node-1']);
  assert.equal(against.code, 1);
  assert.match(against.stderr, /HEAD_MISMATCH: receipt 7 is sha256:[0-9a-f]{64}; the cluster recorded .* the history up to it was rewritten/);
  assert.match(against.stderr, /the ledger itself verifies: 10 receipts/);
  // The same ledger with its last five receipts dropped.
  const cut = file(readFileSync(original, 'utf8').split('\n').slice(0, 5).join('\n') + '\n');
  const short = await run(['--ledger', cut, '--public-key', pem, '--heads', configMap, '--node', 'node-1']);
  assert.equal(short.code, 1);
  assert.match(short.stderr, /HEAD_MISSING: the ledger has 5 receipts; the cluster recorded receipt 7/);
});

test('a head of another key, with a signature that does not verify, or not a head at all is refused by name', async () => {
  const otherKeys = join(dir, 'other-keys');
  mkdirSync(otherKeys, { mode: 0o700 });
  const other = ledger('other', otherKeys, 7, (i) => `world-${i}`);
  const foreign = await run(['--ledger', original, '--public-key', pem, '--heads', file(JSON.stringify(headOf(other, 7)))]);
  assert.equal(foreign.code, 1);
  assert.match(foreign.stderr, /HEAD_KEY_MISMATCH/);
  const forged = await run(['--ledger', original, '--public-key', pem, '--heads', file(JSON.stringify({ ...head7, signature: head7.signature.replace(/^./, (c) => (c === '0' ? '1' : '0')) }))]);
  assert.equal(forged.code, 1);
  assert.match(forged.stderr, /HEAD_SIGNATURE_INVALID/);
  const junk = await run(['--ledger', original, '--public-key', pem, '--heads', file(JSON.stringify({ ...head7, sequence: -1 }))]);
  assert.equal(junk.code, 1);
  assert.match(junk.stderr, /HEAD_INVALID: sequence/);
});
