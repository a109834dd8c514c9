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

test('receipt: a rebased collapse names the original candidate, its new bases and the rebased identity, which is the subject', async (t) => {
  const cand = `sha256:${'c'.repeat(64)}`;
  const rebase = { from: `sha256:${'a'.repeat(64)}`, candidate: cand, onto: [{ root: 'repo', generation: 4, digest: `sha256:${'b'.repeat(64)}` }] };
  const c = content(4);
  const body = buildReceiptBody({ ...c, evidence: { ...c.evidence, subject: cand }, rebase }, 1, null);
  assert.deepEqual(body.rebase, rebase);
  assert.equal(parseReceiptBody(body).ok, true);
  assert.notEqual(receiptId(body), receiptId(buildReceiptBody({ ...c, evidence: { ...c.evidence, subject: cand } }, 1, null)), 'the rebase is part of what is signed');
  assert.equal('rebase' in buildReceiptBody(c, 1, null), false, 'absent when nothing was rebased');
  const cases: [string, unknown][] = [
    ['judged on other bytes', { ...body, evidence: { ...body.evidence, subject: rebase.from } }],
    ['a CheckpointReturn rebased', { ...body, mode: 'CheckpointReturn' }],
    ['no new base', { ...body, rebase: { ...rebase, onto: [] } }],
    ['an unknown field in the rebase', { ...body, rebase: { ...rebase, extra: 1 } }],
    ['a candidate that is not a digest', { ...body, rebase: { ...rebase, candidate: 'abc' } }],
  ];
  for (const [name, b] of cases) await t.test(name, () => assert.equal(parseReceiptBody(b).ok, false));
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

// ---- messages and the exact rules behind each refusal ---------------------------------------------------

function messageOf(entries: ChainEntry[]): string {
  const r = verifyChain(entries);
  assert.ok(!r.ok, 'expected a fault');
  return r.fault.message;
}

test('verifyChain: each fault says what is wrong, in words', async (t) => {
  await t.test('a body that is not a receipt', () => {
    assert.match(messageOf([{ body: { sequence: 1 }, id: 'x' }]), /^receipt body is not a valid worldline\.receipt\/v1 body: \S/);
  });
  await t.test('a stored id that is not the hash', () => {
    const c = chain(1);
    assert.equal(messageOf([{ ...c[0]!, id: 'sha256:bogus' }]), `stored id sha256:bogus is not the hash of the body (${c[0]!.id})`);
  });
  await t.test('a gap reads as missing, a step back as repeated', () => {
    const c = chain(4);
    assert.equal(messageOf([c[0]!, c[2]!]), 'expected sequence 2, found 3 (an entry is missing or out of order)');
    assert.equal(messageOf([c[0]!, c[1]!, c[0]!]), 'expected sequence 3, found 1 (an entry is repeated or out of order)');
  });
  await t.test('a broken link names both sides', () => {
    const first = buildReceiptBody(content(1), 1, 'sha256:' + '0'.repeat(64));
    assert.equal(messageOf([{ body: first, id: receiptId(first) }]), `previous is sha256:${'0'.repeat(64)}, but the entry before it is none (this is the first)`);
    const c = chain(3);
    const body = buildReceiptBody(content(2), 2, null);
    assert.equal(messageOf([c[0]!, { body, id: receiptId(body) }]), `previous is null, but the entry before it is ${c[0]!.id}`);
  });
});

test('ledger line: the signature domain is fixed (changing it invalidates every signature)', () => {
  assert.equal(SIGNATURE_DOMAIN, 'worldline.receipt.signature/v1\n');
  assert.deepEqual([...signatureMessage('sha256:ab')], [...new TextEncoder().encode('worldline.receipt.signature/v1\nsha256:ab')]);
});

test('ledger line: key id refusal names the length', () => {
  assert.throws(() => keyIdOf(new Uint8Array(33)), /^Error: an Ed25519 public key has 32 bytes, not 33$/);
});

test('ledger line: each refusal is named', async (t) => {
  const c = chain(1)[0]!;
  const good = { receipt: c.body, id: c.id, signature: 'ab'.repeat(64), keyId: 'ed25519:' + '0'.repeat(16) };
  // A canonical line whose only fault is the shape: `over` replaces fields of a good line.
  const lineWith = (over: Record<string, unknown>): string => formatLedgerLine({ ...good, ...over }).slice(0, -1);
  const refusal = (text: string): string => {
    const r = parseLedgerLine(text);
    assert.ok(!r.ok, `expected a refusal of ${text.slice(0, 60)}`);
    return r.message;
  };
  await t.test('not JSON', () => assert.match(refusal('{'), /^not JSON: \S/));
  await t.test('JSON that has no canonical form (a number beyond double range)', () => {
    assert.equal(refusal('{"x":1e400}'), 'not in canonical JSON form (spacing, key order, escapes, duplicate keys or numbers differ)');
  });
  await t.test('not canonical', () => {
    assert.equal(refusal(JSON.stringify(good, null, 1)), 'not in canonical JSON form (spacing, key order, escapes, duplicate keys or numbers differ)');
  });
  await t.test('not an object at all', () => assert.match(refusal('[]'), /^\(line\): \S/));
  const sigMessage = 'signature: expected 64 signature bytes as lowercase hex';
  const keyMessage = 'keyId: expected ed25519:<16 hex>';
  await t.test('signature: one byte too many', () => assert.equal(refusal(lineWith({ signature: 'ab'.repeat(65) })), sigMessage));
  await t.test('signature: a prefix before 64 bytes', () => assert.equal(refusal(lineWith({ signature: 'x' + 'ab'.repeat(64) })), sigMessage));
  await t.test('signature: upper case', () => assert.equal(refusal(lineWith({ signature: 'AB'.repeat(64) })), sigMessage));
  await t.test('keyId: too long', () => assert.equal(refusal(lineWith({ keyId: 'ed25519:' + '0'.repeat(17) })), keyMessage));
  await t.test('keyId: a prefix', () => assert.equal(refusal(lineWith({ keyId: 'x-ed25519:' + '0'.repeat(16) })), keyMessage));
  await t.test('an unknown field', () => assert.match(refusal(lineWith({ extra: 1 })), /^\(line\): \S/));
  await t.test('a missing field names it', () => {
    const { keyId: _k, ...rest } = good;
    assert.match(refusal(formatLedgerLine(rest as typeof good).slice(0, -1)), /^keyId: \S/);
  });
});

test('receipt: the format name is fixed (it is part of every id)', () => {
  assert.equal(RECEIPT_FORMAT, 'worldline.receipt/v1');
  assert.equal(buildReceiptBody(content(1), 1, null).format, 'worldline.receipt/v1');
});

function checkpointContent(state: 'COMMITTED' | 'DENIED'): ReceiptContent {
  const committed = state === 'COMMITTED';
  return {
    ...content(1, state),
    mode: 'CheckpointReturn',
    // A checkpoint return is not authorized on check evidence: none is named.
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: 3, toGeneration: committed ? 4 : null, beforeDigest: 'sha256:b', afterDigest: committed ? 'sha256:a' : null }],
  };
}

test('receipt: bodies that are consistent are accepted', async (t) => {
  const accepted: [string, ReceiptContent][] = [
    ['committed checkpoint return without check evidence', checkpointContent('COMMITTED')],
    ['denied checkpoint return', checkpointContent('DENIED')],
    ['denied candidate that names no evidence', { ...content(1, 'DENIED'), evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null } }],
    ['committed with several roots', { ...content(1), roots: [content(1).roots[0]!, { ...content(1).roots[0]!, root: 'docs' }] }],
  ];
  for (const [name, c] of accepted) {
    await t.test(name, () => {
      const body = buildReceiptBody(c, 1, null);
      assert.deepEqual(parseReceiptBody(body), { ok: true, body });
    });
  }
  await t.test('a chain position other than the first', () => {
    const body = buildReceiptBody(content(2), 2, 'sha256:' + 'f'.repeat(64));
    assert.equal(parseReceiptBody(body).ok, true);
  });
});

test('receipt: each refusal names its rule and where it applies', async (t) => {
  const good = buildReceiptBody(content(1), 1, null);
  const denied = buildReceiptBody(content(2, 'DENIED'), 1, null);
  const root = good.roots[0]!;
  const deniedRoot = denied.roots[0]!;
  const noEvidence = (field: keyof ReceiptBody['evidence']): unknown => ({ ...good, evidence: { ...good.evidence, [field]: null } });
  const digestMsg = 'previous: expected sha256:<64 lowercase hex>';
  const reasonMsg = 'decision.reasons.0: expected an UPPER_SNAKE reason code';
  const cases: [string, unknown, string][] = [
    ['committed but not authorized', { ...good, decision: { authorized: false, reasons: ['CONFLICT'] } }, 'decision.authorized: COMMITTED exactly when the decision authorized'],
    ['authorized with a reason', { ...good, decision: { authorized: true, reasons: ['CONFLICT'] } }, 'decision.reasons: an authorized decision has no reasons; a refusal has at least one'],
    ['committed that moved nothing', { ...good, roots: [] }, 'roots: a committed transaction moved at least one root'],
    ['committed root without its new generation', { ...good, roots: [{ ...root, toGeneration: null }] }, 'roots.0: a committed root names its new generation and digest'],
    ['committed root without its new digest', { ...good, roots: [{ ...root, afterDigest: null }] }, 'roots.0: a committed root names its new generation and digest'],
    ['the second root is the bad one', { ...good, roots: [root, { ...root, root: 'docs', afterDigest: null }] }, 'roots.1: a committed root names its new generation and digest'],
    ['denied that names a new generation', { ...denied, roots: [{ ...deniedRoot, toGeneration: 5 }] }, 'roots.0: a denied transaction moved nothing'],
    ['denied that names a new digest', { ...denied, roots: [{ ...deniedRoot, afterDigest: 'sha256:after' }] }, 'roots.0: a denied transaction moved nothing'],
    ['committed candidate without requirement', noEvidence('requirementHash'), 'evidence: a committed candidate names the evidence it was authorized on'],
    ['committed candidate without subject', noEvidence('subject'), 'evidence: a committed candidate names the evidence it was authorized on'],
    ['committed candidate without verifier identity', noEvidence('verifierIdentity'), 'evidence: a committed candidate names the evidence it was authorized on'],
    ['committed candidate without executed verifier identity', noEvidence('executedVerifierIdentity'), 'evidence: a committed candidate names the evidence it was authorized on'],
    ['previous with a prefix', { ...good, sequence: 2, previous: 'xsha256:' + 'a'.repeat(64) }, digestMsg],
    ['previous too long', { ...good, sequence: 2, previous: 'sha256:' + 'a'.repeat(65) }, digestMsg],
    ['reason with a lower-case prefix', { ...denied, decision: { authorized: false, reasons: ['xCONFLICT'] } }, reasonMsg],
    ['reason with a lower-case suffix', { ...denied, decision: { authorized: false, reasons: ['CONFLICTx'] } }, reasonMsg],
  ];
  for (const [name, body, message] of cases) {
    await t.test(name, () => assert.deepEqual(parseReceiptBody(body), { ok: false, message }));
  }
  await t.test('a value that is not an object at all', () => {
    const r = parseReceiptBody(null);
    assert.ok(!r.ok);
    assert.match(r.message, /^\(body\): \S/);
  });
});
