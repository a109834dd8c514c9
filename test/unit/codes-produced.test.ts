// Codes of docs/codes.md produced by the pure functions that write them, asserted by their exact code (or,
// for a condition reason, its CamelCase form on the condition): the controller's acceptance of a Root and
// of a Policy, and the isolation records' two refusals (a malformed record, a decision that does not
// recompute from its own inputs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computePolicyStatus } from '../../controller/policy-status.js';
import { computeRootStatus } from '../../controller/root-status.js';
import { evaluate, requireExactRecomputation, type IsolationDecision, type IsolationObservation } from '../../core/isolation/index.js';
import { observation, policy, request } from './core-isolation-fixtures.js';

const now = new Date('2026-12-01T10:00:00Z');

test('a Root no other Root overlaps is accepted: condition Accepted=True, reason RootAccepted (ROOT_ACCEPTED)', () => {
  const root = { metadata: { name: 'r', creationTimestamp: '2026-01-01T00:00:00Z', generation: 3 }, spec: { nodeName: 'n', path: '/srv/r' } };
  const elsewhere = { metadata: { name: 's', creationTimestamp: '2025-01-01T00:00:00Z' }, spec: { nodeName: 'n', path: '/srv/s' } };
  const c = computeRootStatus(root, [root, elsewhere], now).conditions[0];
  assert.deepEqual([c?.type, c?.status, c?.reason], ['Accepted', 'True', 'RootAccepted']);
});

test('a Policy whose Roots exist and whose checks are valid is accepted: reason PolicyAccepted (POLICY_ACCEPTED)', () => {
  const p = { metadata: { name: 'p', generation: 1 }, spec: { roots: ['r'], checks: [{ name: 'a', command: ['sh', 'checks/a.sh'], profile: 'legacy' as const }] } };
  const c = computePolicyStatus(p, [p], () => true, now).conditions[0];
  assert.deepEqual([c?.type, c?.status, c?.reason], ['Accepted', 'True', 'PolicyAccepted']);
});

test('a malformed isolation record is refused ISOLATION_RECORD_INVALID, naming the problem', () => {
  const p = policy();
  const r = request();
  const bad = { ...observation(p, r), enforcedControls: ['no-devices', 'no-credentials'] } as IsolationObservation;
  assert.throws(() => evaluate(p, r, bad), (e: unknown) => {
    const err = e as { code?: string; message?: string };
    assert.equal(err.code, 'ISOLATION_RECORD_INVALID', err.message);
    assert.match(err.message ?? '', /^invalid IsolationObservation: NON_CANONICAL_ORDER at /);
    return true;
  });
});

test('a decision that does not recompute from its inputs is ISOLATION_DECISION_NOT_REPRODUCED, naming the field', () => {
  const p = policy();
  const r = request();
  const o = observation(p, r);
  const d = evaluate(p, r, o);
  assert.deepEqual(requireExactRecomputation(structuredClone(d), p, r, o), d, 'the real decision recomputes');
  const forged: IsolationDecision = { ...d, outcome: d.outcome === 'rejected' ? 'reported-sufficient' : 'rejected' };
  assert.throws(() => requireExactRecomputation(forged, p, r, o), (e: unknown) => {
    const err = e as { code?: string; message?: string };
    assert.equal(err.code, 'ISOLATION_DECISION_NOT_REPRODUCED', err.message);
    assert.match(err.message ?? '', /^isolation decision does not reproduce: outcome: /);
    return true;
  });
});
