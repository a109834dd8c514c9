import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../core/canonical-json.js';
import { verifyChain, ChainVerifier, type ChainEntry } from '../../core/receipts/chain.js';
import { formatLedgerLine, keyIdOf, parseLedgerLine, signatureMessage, SIGNATURE_DOMAIN } from '../../core/receipts/ledger-line.js';
import { buildReceiptBody, parseReceiptBody, receiptId, RECEIPT_DOES_NOT_CLAIM, RECEIPT_FORMAT, type ReceiptBody, type ReceiptContent } from '../../core/receipts/receipt.js';

function content(i: number, state: 'COMMITTED' | 'DENIED' = 'COMMITTED'): ReceiptContent {
  const committed = state === 'COMMITTED';
  return {
    transaction: { id: `tx-${i}`, state },
    world: { namespace: 'team-a', name: `world-${i}`, uid: `uid-${i}` },
    mode: 'Candidate',
    decision: { authorized: committed, reasons: committed ? [] : ['CONFLICT'] },
    evidence: { requirementHash: 'sha256:req', subject: 'sha256:cand', verifierIdentity: 'sha256:ver', executedVerifierIdentity: 'sha256:ver' },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: committed ? i + 1 : null, beforeDigest: 'sha256:before', afterDigest: committed ? 'sha256:after' : null }],
    issuedAt: '2026-01-02T03:04:05.678Z',
  };
}

function chain(n: number): { body: ReceiptBody; id: string }[] {
  const out: { body: ReceiptBody; id: string }[] = [];
  for (let i = 1; i <= n; i++) {
    const body = buildReceiptBody(content(i, i % 3 === 0 ? 'DENIED' : 'COMMITTED'), i, out.at(-1)?.id ?? null);
    out.push({ body, id: receiptId(body) });
  }
  return out;
}

test('receipt: the id is sha256 of the canonical body', () => {
  const body = buildReceiptBody(content(1), 1, null);
  const want = 'sha256:' + createHash('sha256').update(canonicalJson(body)).digest('hex');
  assert.equal(receiptId(body), want);
  assert.equal(body.format, RECEIPT_FORMAT);
  assert.deepEqual(body.doesNotClaim, RECEIPT_DOES_NOT_CLAIM);
  assert.equal(receiptId(JSON.parse(JSON.stringify(body)) as ReceiptBody), want, 'key order does not matter');
  assert.notEqual(receiptId({ ...body, issuedAt: '2026-01-02T03:04:05.679Z' }), want);
});

test('receipt: the format refuses bodies that contradict themselves', async (t) => {
  const good = buildReceiptBody(content(1), 1, null);
  const cases: [string, unknown][] = [
    ['committed with a reason', { ...good, decision: { authorized: true, reasons: ['CONFLICT'] } }],
    ['committed but not authorized', { ...good, decision: { authorized: false, reasons: ['CONFLICT'] } }],
    ['denied without a reason', { ...good, transaction: { id: 'tx', state: 'DENIED' }, decision: { authorized: false, reasons: [] } }],
    ['denied that moved a root', { ...good, transaction: { id: 'tx', state: 'DENIED' }, decision: { authorized: false, reasons: ['CONFLICT'] } }],
    ['committed that moved nothing', { ...good, roots: [] }],
    ['committed candidate without evidence', { ...good, evidence: { ...good.evidence, subject: null } }],
    ['lower-case reason', { ...buildReceiptBody(content(2, 'DENIED'), 1, null), decision: { authorized: false, reasons: ['conflict'] } }],
    ['unknown field', { ...good, extra: 1 }],
    ['other format', { ...good, format: 'worldline.receipt/v2' }],
    ['sequence 0', { ...good, sequence: 0 }],
    ['previous not a digest', { ...good, previous: 'abc' }],
    ['timestamp with offset', { ...good, issuedAt: '2026-01-02T03:04:05+02:00' }],
    ['no disclaimers', { ...good, doesNotClaim: [] }],
  ];
  for (const [name, body] of cases) await t.test(name, () => assert.equal(parseReceiptBody(body).ok, false));
  assert.equal(parseReceiptBody(good).ok, true);
  assert.throws(() => buildReceiptBody({ ...content(1), roots: [] }, 1, null));
});

test('verifyChain: an intact chain', () => {
  const c = chain(20);
  assert.deepEqual(verifyChain(c), { ok: true, count: 20, head: c[19]!.id });
  assert.deepEqual(verifyChain([]), { ok: true, count: 0, head: null });
});

function faultOf(entries: ChainEntry[]): { index: number; problem: string; sequence: number | null } {
  const r = verifyChain(entries);
  assert.ok(!r.ok, 'expected a fault');
  return { index: r.fault.index, problem: r.fault.problem, sequence: r.fault.sequence };
}

test('verifyChain: names the first bad entry', async (t) => {
  await t.test('a changed body', () => {
    const c = chain(10);
    c[4] = { ...c[4]!, body: { ...c[4]!.body, world: { ...c[4]!.body.world, name: 'other' } } };
    assert.deepEqual(faultOf(c), { index: 4, problem: 'ID_MISMATCH', sequence: 5 });
  });
  await t.test('a dropped entry', () => {
    const c = chain(10);
    c.splice(6, 1);
    assert.deepEqual(faultOf(c), { index: 6, problem: 'SEQUENCE_BROKEN', sequence: 8 });
  });
  await t.test('two entries swapped', () => {
    const c = chain(10);
    [c[2], c[3]] = [c[3]!, c[2]!];
    assert.deepEqual(faultOf(c), { index: 2, problem: 'SEQUENCE_BROKEN', sequence: 4 });
  });
  await t.test('a repeated entry', () => {
    const c = chain(10);
    c.splice(5, 0, c[4]!);
    assert.deepEqual(faultOf(c), { index: 5, problem: 'SEQUENCE_BROKEN', sequence: 5 });
  });
  await t.test('a rewritten entry with a recomputed id breaks the next link', () => {
    const c = chain(10);
    const body = { ...c[6]!.body, issuedAt: '2030-01-01T00:00:00.000Z' };
    c[6] = { body, id: receiptId(body) };
    assert.deepEqual(faultOf(c), { index: 7, problem: 'PREVIOUS_BROKEN', sequence: 8 });
  });
  await t.test('a first entry that claims a predecessor', () => {
    const body = buildReceiptBody(content(1), 1, 'sha256:' + '0'.repeat(64));
    assert.deepEqual(faultOf([{ body, id: receiptId(body) }]), { index: 0, problem: 'PREVIOUS_BROKEN', sequence: 1 });
  });
  await t.test('a body that is not a receipt', () => {
    assert.deepEqual(faultOf([{ body: { sequence: 1 }, id: 'x' }]), { index: 0, problem: 'BODY_INVALID', sequence: 1 });
  });
});

test('ChainVerifier: stays failed after the first fault', () => {
  const c = chain(3);
  const v = new ChainVerifier();
  assert.equal(v.next(c[0]!), null);
  const f = v.next(c[2]!);
  assert.equal(f?.problem, 'SEQUENCE_BROKEN');
  assert.equal(v.next(c[1]!), f, 'a later good entry does not repair the chain');
  assert.equal(v.count, 1);
});

test('ledger line: canonical form, signature message and key id', () => {
  const c = chain(1)[0]!;
  const line = { receipt: c.body, id: c.id, signature: 'ab'.repeat(64), keyId: 'ed25519:' + '0'.repeat(16) };
  const text = formatLedgerLine(line);
  assert.ok(text.endsWith('\n'));
  const parsed = parseLedgerLine(text.slice(0, -1));
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.line, line);
  assert.equal(parseLedgerLine(JSON.stringify(line, null, 1)).ok, false, 'spacing is refused');
  assert.equal(parseLedgerLine(text.slice(0, -1).replace('{"id"', '{"id":"x","id"')).ok, false, 'duplicate keys are refused');
  assert.equal(parseLedgerLine('{').ok, false);
  assert.equal(new TextDecoder().decode(signatureMessage(c.id)), SIGNATURE_DOMAIN + c.id);
  const raw = new Uint8Array(32).fill(7);
  assert.equal(keyIdOf(raw), 'ed25519:' + createHash('sha256').update(raw).digest('hex').slice(0, 16));
  assert.throws(() => keyIdOf(new Uint8Array(31)));
});
