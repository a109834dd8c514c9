// The recording rule of a node's ledger head (core/receipts/ledger-head.ts): a head moves only forward,
// only under the key first recorded; another receipt at the recorded sequence or another key is a
// conflict, never recorded; a recorded head parses back exactly, and anything else is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LEDGER_HEAD_FORMAT, nextHead, parseLedgerHead, type LedgerHead, type SeenReceipt } from '../../core/receipts/ledger-head.js';

const NOW = new Date('2026-12-02T10:00:00.000Z');
const id = (c: string): string => `sha256:${c.repeat(64)}`;
const sig = (c: string): string => c.repeat(128);
const seen = (sequence: number, c: string, keyId = 'key-a'): SeenReceipt => ({ sequence, id: id(c), keyId, signature: sig(c) });

function advanced(step: ReturnType<typeof nextHead>): LedgerHead {
  assert.equal(step.kind, 'advance', JSON.stringify(step));
  return (step as { head: LedgerHead }).head;
}

test('the first receipt of a node is recorded; a newer one advances the head; an older or the same one keeps it', () => {
  const h1 = advanced(nextHead(undefined, seen(3, 'a'), 'node-1', NOW));
  assert.deepEqual(h1, { format: LEDGER_HEAD_FORMAT, node: 'node-1', sequence: 3, receipt: id('a'), keyId: 'key-a', signature: sig('a'), recordedAt: NOW.toISOString() });
  const h2 = advanced(nextHead(h1, seen(7, 'b'), 'node-1', NOW));
  assert.equal(h2.sequence, 7);
  assert.equal(h2.receipt, id('b'));
  assert.deepEqual(nextHead(h2, seen(5, 'c'), 'node-1', NOW), { kind: 'keep' });
  assert.deepEqual(nextHead(h2, seen(7, 'b'), 'node-1', NOW), { kind: 'keep' });
});

test('another receipt at the recorded sequence, a new key or a malformed receipt is a conflict and never recorded', () => {
  const h = advanced(nextHead(undefined, seen(4, 'a'), 'node-1', NOW));
  const rewritten = nextHead(h, seen(4, 'f'), 'node-1', NOW);
  assert.equal(rewritten.kind, 'conflict');
  assert.equal((rewritten as { code: string }).code, 'HEAD_CONFLICT');
  assert.match((rewritten as { message: string }).message, /rewritten/);
  const rotated = nextHead(h, seen(9, 'b', 'key-b'), 'node-1', NOW);
  assert.equal((rotated as { code: string }).code, 'KEY_CHANGED');
  for (const bad of [{ ...seen(5, 'b'), id: 'sha256:short' }, { ...seen(5, 'b'), signature: 'zz' }, { ...seen(5, 'b'), sequence: 0 }]) {
    assert.equal((nextHead(h, bad, 'node-1', NOW) as { code?: string }).code, 'HEAD_CONFLICT', JSON.stringify(bad));
  }
});

test('a new key the recorder verified as pinned for the node (a rotation) moves the head on, but never over its past', () => {
  const h = advanced(nextHead(undefined, seen(4, 'a'), 'node-1', NOW));
  const rotated = advanced(nextHead(h, seen(5, 'b', 'key-b'), 'node-1', NOW, { keyPinned: true }));
  assert.equal(rotated.keyId, 'key-b');
  assert.equal(rotated.sequence, 5);
  // A pinned key that signs at or below the recorded sequence re-signs history: a conflict.
  for (const sequence of [3, 4]) {
    const back = nextHead(h, seen(sequence, 'c', 'key-b'), 'node-1', NOW, { keyPinned: true });
    assert.equal((back as { code?: string }).code, 'HEAD_CONFLICT', String(sequence));
  }
  // Without the recorder's say-so, the same receipt is KEY_CHANGED.
  assert.equal((nextHead(h, seen(5, 'b', 'key-b'), 'node-1', NOW) as { code?: string }).code, 'KEY_CHANGED');
});

test('a recorded head parses back exactly; a head with an unknown field, a bad digest or no JSON at all is refused by field', () => {
  const h = advanced(nextHead(undefined, seen(2, 'a'), 'node-1', NOW));
  assert.deepEqual(parseLedgerHead(JSON.stringify(h)), { ok: true, head: h });
  const cases: [string, string, RegExp][] = [
    ['extra field', JSON.stringify({ ...h, trusted: true }), /unrecognized key/i],
    ['bad receipt', JSON.stringify({ ...h, receipt: 'sha256:abc' }), /^receipt:/],
    ['sequence 0', JSON.stringify({ ...h, sequence: 0 }), /^sequence:/],
    ['other format', JSON.stringify({ ...h, format: 'worldline.ledger-head/v2' }), /^format:/],
    ['not JSON', '{', /^not JSON/],
  ];
  for (const [name, text, message] of cases) {
    const r = parseLedgerHead(text);
    assert.equal(r.ok, false, name);
    assert.match((r as { message: string }).message, message, name);
  }
});
