// `worldline receipts verify --trust-policy FILE --node NODE` on real ledger files, as a child process:
// the keys that may sign a node's receipts come from the trust policy, not from the node. A ledger whose
// key was rotated half-way verifies when the policy pins both keys over consecutive intervals (each
// receipt judged at its own issuedAt, the old key no longer valid now); it is refused KEY_UNTRUSTED when
// the old key is revoked, when a receipt falls outside its key's interval, when the policy pins the key for
// another node or for another kind of evidence, and when the revocation snapshot is stale.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { nextHead } from '../../core/receipts/ledger-head.js';
import { formatLedgerLine, keyIdOf, signatureMessage } from '../../core/receipts/ledger-line.js';
import { buildReceiptBody, receiptId, type ReceiptContent } from '../../core/receipts/receipt.js';
import { RECEIPT_SIGNER_SCOPE } from '../../core/receipts/receipt-trust.js';

const cli = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-pinned-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 0, 1);
const at = (i: number): string => new Date(T0 + i * 60_000).toISOString();

interface Key {
  privateKey: KeyObject;
  hex: string;
  keyId: string;
}
function key(): Key {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  return { privateKey, hex: raw.toString('hex'), keyId: keyIdOf(raw) };
}
const oldKey = key();
const newKey = key();

function content(i: number): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'DENIED' },
    world: { namespace: 'team-a', name: `world-${i}`, uid: `uid-${i}` },
    mode: 'Candidate',
    decision: { authorized: false, reasons: ['CHECK_NOT_PASSED'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 1, toGeneration: null, beforeDigest: 'sha256:b', afterDigest: null }],
    issuedAt: at(i),
  };
}

/** Receipts 1..8, issued a minute apart: 1-4 signed by the old key, 5-8 by the new one (one chain). */
const lines: { id: string; keyId: string; signature: string }[] = [];
let ledgerText = '';
let previous: string | null = null;
for (let i = 1; i <= 8; i++) {
  const k = i <= 4 ? oldKey : newKey;
  const body = buildReceiptBody(content(i), i, previous);
  const id = receiptId(body);
  const signature = sign(null, signatureMessage(id), k.privateKey).toString('hex');
  ledgerText += formatLedgerLine({ receipt: body, id, signature, keyId: k.keyId });
  lines.push({ id, keyId: k.keyId, signature });
  previous = id;
}
const ledger = join(dir, 'rotated.jsonl');
writeFileSync(ledger, ledgerText);

const ROTATION = T0 + 4 * 60_000 + 30_000; // between receipts 4 and 5
type Rule = TrustPolicy['signers'][number];
const rule = (issuer: string, k: Key, from: number, until: number, over: Partial<Rule> = {}): Rule => ({
  issuer,
  publicKey: k.hex,
  predicateTypes: [RECEIPT_SIGNER_SCOPE],
  nodes: ['node-1'],
  validFrom: new Date(from).toISOString(),
  validUntil: new Date(until).toISOString(),
  ...over,
});
const FAR = Date.now() + 365 * 86_400_000;
const rotation = (): Rule[] => [rule('node-1-2026a', oldKey, T0 - 86_400_000, ROTATION), rule('node-1-2026b', newKey, ROTATION, FAR)];

let n = 0;
function policyFile(signers: Rule[], revoked: string[] = [], issuedAt = Date.now() - 1000): string {
  const p = join(dir, `policy-${n++}.json`);
  writeFileSync(p, JSON.stringify({ signers, revocations: { issuedAt: new Date(issuedAt).toISOString(), maxAgeSeconds: 3600, revokedPublicKeys: revoked } } satisfies TrustPolicy));
  return p;
}

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, 'receipts', 'verify', ...args], (err, stdout, stderr) => {
      const code = err ? ((err as { code?: unknown }).code as number) : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}

test('a ledger whose key was rotated verifies against the two keys the trust policy pins, each at its receipts\' time', async () => {
  const r = await run(['--ledger', ledger, '--trust-policy', policyFile(rotation()), '--node', 'node-1']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /8 receipts .*verified against the keys the trust policy pins for node node-1/);
  // The cluster's head, recorded under the new key after a pinned rotation, holds too.
  const step = nextHead(undefined, { sequence: 8, ...lines[7]!, keyId: newKey.keyId }, 'node-1', new Date(T0 + 9 * 60_000));
  assert.equal(step.kind, 'advance');
  const heads = join(dir, 'head.json');
  writeFileSync(heads, JSON.stringify((step as { head: unknown }).head));
  const withHead = await run(['--ledger', ledger, '--trust-policy', policyFile(rotation()), '--node', 'node-1', '--heads', heads]);
  assert.equal(withHead.code, 0, withHead.stderr);
  assert.match(withHead.stdout, /holds the head the cluster recorded for node-1: receipt 8/);
});

test('a revoked old key, a receipt outside its key\'s interval, another node, another scope or a stale snapshot: KEY_UNTRUSTED, naming the receipt', async () => {
  const cases: [string, string, RegExp][] = [
    ['old key revoked', policyFile(rotation(), [oldKey.hex]), /line 1 \(sequence 1\): KEY_UNTRUSTED/],
    // The new key's rule starts after receipt 5 was issued.
    ['new key pinned too late', policyFile([rotation()[0]!, rule('node-1-2026b', newKey, T0 + 5 * 60_000 + 1, FAR)]), /line 5 \(sequence 5\): KEY_UNTRUSTED: no key is trusted for receipts of node node-1 at 2026-01-01T00:05:00.000Z/],
    ['only the old key pinned (for all time)', policyFile([rule('node-1-2026a', oldKey, T0 - 86_400_000, FAR)]), /line 5 \(sequence 5\): KEY_UNTRUSTED: receipt sha256:[0-9a-f]{64} of node node-1 is signed by ed25519:[0-9a-f]{16}, which the trust policy does not trust/],
    ['the new key pinned for another node', policyFile([rotation()[0]!, rule('node-2', newKey, ROTATION, FAR, { nodes: ['node-2'] })]), /line 5 \(sequence 5\): KEY_UNTRUSTED/],
    ['the old key pinned for waivers, not receipts', policyFile([rule('waivers', oldKey, T0 - 86_400_000, FAR, { predicateTypes: ['https://worldline.dev/attestations/isolation-waiver/v1'] }), rotation()[1]!]), /line 1 \(sequence 1\): KEY_UNTRUSTED/],
    ['a stale revocation snapshot', policyFile(rotation(), [], Date.now() - 2 * 3600_000), /line 1 \(sequence 1\): KEY_UNTRUSTED: .*REVOCATION_STALE/],
  ];
  for (const [what, policy, expected] of cases) {
    const r = await run(['--ledger', ledger, '--trust-policy', policy, '--node', 'node-1']);
    assert.equal(r.code, 1, `${what}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected, what);
  }
});

test('--trust-policy needs --node, and excludes --public-key; an invalid policy file is a usage error', async () => {
  const noNode = await run(['--ledger', ledger, '--trust-policy', policyFile(rotation())]);
  assert.equal(noNode.code, 2);
  assert.match(noNode.stderr, /--trust-policy needs --node/);
  const both = await run(['--ledger', ledger, '--trust-policy', policyFile(rotation()), '--public-key', ledger, '--node', 'node-1']);
  assert.equal(both.code, 2);
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"signers": [], "signers": []}');
  const dup = await run(['--ledger', ledger, '--trust-policy', bad, '--node', 'node-1']);
  assert.equal(dup.code, 2);
  assert.match(dup.stderr, /JSON_DUPLICATE_KEY/);
});
