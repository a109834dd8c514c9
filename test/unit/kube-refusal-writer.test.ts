// The status a schema refusal writes, and when it is already shown (so a refusal is written once, not on
// every watch event its own write causes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kindParsers } from '../../kube/kind-parsers.js';
import { OBJECT_SCHEMA_INVALID_REASON, refusalShown, refusalStatus } from '../../kube/refusal-writer.js';
import type { ObjectRefusal } from '../../kube/object-schema.js';

const now = new Date('2026-12-01T12:00:00Z');

function refusalOf(status?: Record<string, unknown>): ObjectRefusal {
  const r = kindParsers.Collapse({
    apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name: 'c', namespace: 'ns', generation: 2 },
    spec: { worldRef: 'w', mode: 'Sideways' }, ...(status ? { status } : {}),
  });
  assert.equal(r.ok, false);
  if (r.ok) throw new Error('unreachable');
  return r.refusal;
}

test('a refusal writes the phase, OBJECT_SCHEMA_INVALID and the message naming the path; or a False condition', () => {
  const r = refusalOf();
  assert.deepEqual(r.paths, ['spec.mode']);
  assert.deepEqual(refusalStatus(r, { phase: 'Denied' }, now), { phase: 'Denied', reason: 'OBJECT_SCHEMA_INVALID', message: r.message });
  const s = refusalStatus(r, { condition: 'WorldFound' }, now);
  assert.deepEqual(s, { conditions: [{ type: 'WorldFound', status: 'False', reason: OBJECT_SCHEMA_INVALID_REASON, message: r.message, lastTransitionTime: '2026-12-01T12:00:00Z', observedGeneration: 2 }] });
});

test('a refusal keeps every other writer\'s condition entry verbatim and replaces only its own, in place', () => {
  const other = { type: 'Prepared', status: 'True', reason: 'Prepared', message: 'm', lastTransitionTime: '2026-12-01T10:00:00Z', observedGeneration: 1 };
  const mine = { type: 'WorldFound', status: 'False', reason: 'WorldNotFound', message: 'x', lastTransitionTime: '2026-12-01T09:00:00Z' };
  const r = refusalOf({ conditions: [mine, other] });
  const s = refusalStatus(r, { condition: 'WorldFound' }, now);
  assert.deepEqual(s.conditions, [
    // Still False: the transition time is kept.
    { type: 'WorldFound', status: 'False', reason: OBJECT_SCHEMA_INVALID_REASON, message: r.message, lastTransitionTime: '2026-12-01T09:00:00Z', observedGeneration: 2 },
    other,
  ]);
  const added = refusalStatus(refusalOf({ conditions: [other] }), { condition: 'WorldFound' }, now);
  assert.deepEqual((added.conditions as { type: string }[]).map((c) => c.type), ['Prepared', 'WorldFound']);
});

test('a refusal already on status is not written again; a changed message or another owner\'s reason is', () => {
  const fresh = refusalOf();
  assert.equal(refusalShown(fresh, { phase: 'Denied' }), false);
  assert.equal(refusalShown(fresh, { condition: 'WorldFound' }), false);
  const shown = refusalOf({ phase: 'Denied', reason: 'OBJECT_SCHEMA_INVALID', message: fresh.message, conditions: [{ type: 'WorldFound', status: 'False', reason: 'ObjectSchemaInvalid', message: fresh.message, lastTransitionTime: '2026-12-01T11:00:00Z' }] });
  assert.equal(refusalShown(shown, { phase: 'Denied' }), true);
  assert.equal(refusalShown(shown, { condition: 'WorldFound' }), true);
  const stale = refusalOf({ reason: 'OBJECT_SCHEMA_INVALID', message: 'an older refusal', conditions: [{ type: 'WorldFound', status: 'True', reason: 'WorldFound', message: 'x', lastTransitionTime: '2026-12-01T11:00:00Z' }] });
  assert.equal(refusalShown(stale, { phase: 'Denied' }), false);
  assert.equal(refusalShown(stale, { condition: 'WorldFound' }), false);
});
