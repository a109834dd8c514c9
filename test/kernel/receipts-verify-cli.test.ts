// The signed ledger on real files, checked by the `worldline receipts verify` CLI as a child process:
// 1,000 receipts verify; each kind of tampering is named at the first bad entry.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/digest.js';
import { keyIdOf, signatureMessage } from '../../core/receipts/ledger-line.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { PUBLIC_HEX_FILE, PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';

const cli = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const COUNT = 1000;

function content(i: number): ReceiptContent {
  const committed = i % 4 !== 0;
  return {
    transaction: { id: `tx-${String(i).padStart(6, '0')}`, state: committed ? 'COMMITTED' : 'DENIED' },
    world: { namespace: 'team-a', name: `world-${i}`, uid: `7c1e-${i}` },
    mode: 'Candidate',
    decision: { authorized: committed, reasons: committed ? [] : ['EVIDENCE_STALE'] },
    evidence: { requirementHash: 'sha256:req', subject: `sha256:cand-${i}`, verifierIdentity: 'sha256:ver', executedVerifierIdentity: 'sha256:ver' },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: committed ? i + 1 : null, beforeDigest: `sha256:b${i}`, afterDigest: committed ? `sha256:a${i}` : null }],
    issuedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  };
}

const ledgerPath = join(dir, 'ledger.jsonl');
const keyDir = join(dir, 'keys');
const pem = join(keyDir, PUBLIC_PEM_FILE);
const hex = join(keyDir, PUBLIC_HEX_FILE);
{
  const ledger = ReceiptLedger.open({ path: ledgerPath, keyDir });
  for (let i = 1; i <= COUNT; i++) ledger.append(content(i));
  ledger.close();
}
const pristine = readFileSync(ledgerPath, 'utf8');
const lines = pristine.slice(0, -1).split('\n');

function runVerify(ledger: string, key = pem): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, 'receipts', 'verify', '--ledger', ledger, '--public-key', key], (err, stdout, stderr) => {
      const code = err ? ((err as { code?: unknown }).code as number) : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}

let n = 0;
function variant(text: string): string {
  const p = join(dir, `variant-${n++}.jsonl`);
  writeFileSync(p, text);
  return p;
}

const joinLines = (ls: string[]): string => ls.join('\n') + '\n';

test('1,000 receipts verify, with the PEM or the raw hex public key', async () => {
  assert.equal(lines.length, COUNT);
  for (const key of [pem, hex]) {
    const r = await runVerify(ledgerPath, key);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^OK .*: 1000 receipts \(sequence 1\.\.1000\), head sha256:[0-9a-f]{64}, chain and Ed25519 signatures verified/);
  }
});

test('--help, and usage errors exit 2', async () => {
  const help = await new Promise<{ code: number; stdout: string }>((resolve) =>
    execFile(process.execPath, [cli, '--help'], (err, stdout) => resolve({ code: err ? 1 : 0, stdout })),
  );
  assert.equal(help.code, 0);
  assert.match(help.stdout, /receipts verify --ledger FILE --public-key KEY/);
  const r = await runVerify(join(dir, 'missing.jsonl'));
  assert.equal(r.code, 2);
});

const cases: { name: string; tamper: () => string; line: number; sequence: number | 'unknown'; problem: string }[] = [
  {
    name: 'one byte flipped in a stored receipt',
    tamper: () => {
      const ls = [...lines];
      ls[499] = ls[499]!.replace('"name":"world-500"', '"name":"world-501"');
      assert.notEqual(ls[499], lines[499]);
      return joinLines(ls);
    },
    line: 500,
    sequence: 500,
    problem: 'ID_MISMATCH',
  },
  {
    name: 'one receipt dropped',
    tamper: () => joinLines(lines.filter((_, i) => i !== 299)),
    line: 300,
    sequence: 301,
    problem: 'SEQUENCE_BROKEN',
  },
  {
    name: 'two receipts reordered',
    tamper: () => {
      const ls = [...lines];
      [ls[699], ls[700]] = [ls[700]!, ls[699]!];
      return joinLines(ls);
    },
    line: 700,
    sequence: 701,
    problem: 'SEQUENCE_BROKEN',
  },
  {
    name: 'one receipt re-signed with another key, key id kept',
    tamper: () => resign(799, false),
    line: 800,
    sequence: 800,
    problem: 'SIGNATURE_INVALID',
  },
  {
    name: 'one receipt re-signed with another key, key id replaced',
    tamper: () => resign(799, true),
    line: 800,
    sequence: 800,
    problem: 'KEY_MISMATCH',
  },
  {
    name: 'the last receipt rewritten and re-signed with another key',
    tamper: () => resign(COUNT - 1, true, (body) => ({ ...body, issuedAt: '2030-01-01T00:00:00.000Z' })),
    line: COUNT,
    sequence: COUNT,
    problem: 'KEY_MISMATCH',
  },
  {
    name: 'one signature byte flipped',
    tamper: () => {
      const ls = [...lines];
      const entry = JSON.parse(ls[41]!);
      entry.signature = (entry.signature[0] === '0' ? '1' : '0') + entry.signature.slice(1);
      ls[41] = canonicalJson(entry);
      return joinLines(ls);
    },
    line: 42,
    sequence: 42,
    problem: 'SIGNATURE_INVALID',
  },
  {
    name: 'a torn last line',
    tamper: () => pristine.slice(0, -20),
    line: COUNT,
    sequence: 'unknown',
    problem: 'LINE_INVALID',
  },
  {
    name: 'a line rewritten with spacing',
    tamper: () => {
      const ls = [...lines];
      ls[9] = JSON.stringify(JSON.parse(ls[9]!), null, 0).replace('{', '{ ');
      return joinLines(ls);
    },
    line: 10,
    sequence: 10,
    problem: 'LINE_INVALID',
  },
];

/** Replace entry `index` with a re-signed one (other key), optionally changing the body first. */
function resign(index: number, replaceKeyId: boolean, change: (b: Record<string, unknown>) => Record<string, unknown> = (b) => b): string {
  const other = generateKeyPairSync('ed25519');
  const otherRaw = Buffer.from(other.publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const ls = [...lines];
  const entry = JSON.parse(ls[index]!);
  entry.receipt = change(entry.receipt);
  entry.id = 'sha256:' + sha256Hex(canonicalJson(entry.receipt));
  entry.signature = sign(null, signatureMessage(entry.id), other.privateKey).toString('hex');
  if (replaceKeyId) entry.keyId = keyIdOf(otherRaw);
  ls[index] = canonicalJson(entry);
  return joinLines(ls);
}

for (const c of cases) {
  test(`tampering is named at the first bad entry: ${c.name}`, async () => {
    const r = await runVerify(variant(c.tamper()));
    assert.equal(r.code, 1, `expected exit 1; stdout: ${r.stdout}`);
    const first = r.stderr.split('\n')[0]!;
    assert.match(first, new RegExp(`^FAIL .* line ${c.line} \\(sequence ${c.sequence}\\): ${c.problem}: `), first);
  });
}
