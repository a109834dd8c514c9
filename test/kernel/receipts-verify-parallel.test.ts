// `worldline receipts verify` on several threads gives the one-thread verdict, first bad line included:
// a ledger of 400 signed receipts, pristine and under 80 seeded tamperings (a byte flipped in a body or a
// signature, a sequence changed, a line dropped, repeated or swapped with the next, the file cut mid-line,
// another ledger's line, signed by another key and chained to other entries), each placed anywhere — inside a chunk, on a chunk's first or last line, at the end —
// and verified on 2, 3 and 4 threads.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPublicKey, verifyLedger, verifyLedgerParallel } from '../../cli/receipts-verify.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';
import { rng } from '../support/seeded-random.js';

const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-parallel-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function content(i: number, team: string): ReceiptContent {
  return {
    transaction: { id: `tx-${i}`, state: 'COMMITTED' },
    world: { namespace: team, name: `world-${i}`, uid: `uid-${i}` },
    mode: 'Candidate',
    decision: { authorized: true, reasons: [] },
    evidence: { requirementHash: 'sha256:req', subject: `sha256:cand-${i}`, verifierIdentity: 'sha256:ver', executedVerifierIdentity: 'sha256:ver' },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: i + 1, beforeDigest: `sha256:b${i}`, afterDigest: `sha256:a${i}` }],
    issuedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  };
}

function ledgerOf(name: string, count: number): { lines: string[]; key: ReturnType<typeof loadPublicKey> } {
  const path = join(dir, `${name}.jsonl`);
  const keyDir = join(dir, `${name}-keys`);
  const ledger = ReceiptLedger.open({ path, keyDir });
  for (let i = 1; i <= count; i++) ledger.append(content(i, name));
  ledger.close();
  return { lines: readFileSync(path, 'utf8').slice(0, -1).split('\n'), key: loadPublicKey(readFileSync(join(keyDir, PUBLIC_PEM_FILE), 'utf8')) };
}

const main = ledgerOf('main', 400);
const other = ledgerOf('other', 400);

/** One character of `text` at `at` replaced by another hex digit or letter. */
const flip = (text: string, at: number): string => text.slice(0, at) + (text[at] === 'a' ? 'b' : 'a') + text.slice(at + 1);

async function same(bytes: Buffer, what: string): Promise<void> {
  const one = verifyLedger(bytes, main.key);
  for (const threads of [2, 3, 4]) assert.deepEqual(await verifyLedgerParallel(bytes, main.key, { threads, minBytes: 0 }), one, `${what}, ${threads} threads`);
}

test('a pristine ledger verifies the same on 1 to 4 threads', async () => {
  const bytes = Buffer.from(main.lines.join('\n') + '\n');
  const one = verifyLedger(bytes, main.key);
  assert.equal(one.ok, true);
  await same(bytes, 'pristine');
  // Below the size threshold it stays on one thread (and says the same).
  assert.deepEqual(await verifyLedgerParallel(bytes, main.key), one);
});

test('80 seeded tamperings, anywhere in the ledger: the verdict on several threads is the one-thread verdict', async () => {
  const random = rng(17);
  const kinds = ['body', 'signature', 'sequence', 'drop', 'repeat', 'swap', 'cut', 'foreign', 'signature+sequence'] as const;
  const seen = new Set<string>();
  for (let n = 0; n < 80; n++) {
    const kind = kinds[n % kinds.length]!;
    // Half the places are chunk edges for 2, 3 or 4 threads (a quarter, a third, half of the ledger).
    const edges = [99, 100, 133, 134, 199, 200, 266, 267, 299, 300, 0, 399];
    const at = random() < 0.5 ? edges[Math.floor(random() * edges.length)]! : Math.floor(random() * main.lines.length);
    const ls = [...main.lines];
    let text: string;
    if (kind === 'body') ls[at] = flip(ls[at]!, ls[at]!.indexOf('"world"') + 30);
    else if (kind === 'signature') ls[at] = flip(ls[at]!, ls[at]!.indexOf('"signature":"') + 20);
    else if (kind === 'sequence') ls[at] = ls[at]!.replace(/"sequence":(\d+)/, (_m, d: string) => `"sequence":${Number(d) + 1}`);
    else if (kind === 'drop') ls.splice(at, 1);
    else if (kind === 'repeat') ls.splice(at, 0, ls[at]!);
    else if (kind === 'swap' && at + 1 < ls.length) [ls[at], ls[at + 1]] = [ls[at + 1]!, ls[at]!];
    else if (kind === 'foreign') ls[at] = other.lines[at]!;
    else if (kind === 'signature+sequence') ls[at] = flip(ls[at]!, ls[at]!.indexOf('"signature":"') + 20).replace(/"sequence":(\d+)/, (_m, d: string) => `"sequence":${Number(d) + 5}`);
    text = ls.join('\n') + '\n';
    if (kind === 'cut') text = text.slice(0, text.length - 1 - Math.floor(random() * 500));
    const bytes = Buffer.from(text);
    const one = verifyLedger(bytes, main.key);
    if (!one.ok) seen.add(one.problem);
    await same(bytes, `${kind} at line ${at + 1}`);
  }
  // The tamperings reached the kinds of problem the verifier names.
  for (const p of ['LINE_INVALID', 'ID_MISMATCH', 'SEQUENCE_BROKEN', 'PREVIOUS_BROKEN', 'SIGNATURE_INVALID', 'KEY_MISMATCH']) assert.ok(seen.has(p), `no tampering produced ${p} (saw ${[...seen].join(', ')})`);
});
