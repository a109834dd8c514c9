import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findCondition, isConditionTrue, isConditionTrueFor, removeCondition, setCondition, type Condition } from '../../kube/conditions.js';

const t0 = new Date('2025-01-01T00:00:00.123Z');
const t1 = new Date('2025-01-01T00:05:00.999Z');

const ready = (status: 'True' | 'False' | 'Unknown', reason = 'R', message = 'm') => ({ type: 'Ready', status, reason, message });

test('setCondition: table', async (t) => {
  const base: Condition[] = [
    { type: 'Admitted', status: 'True', reason: 'Ok', message: '', lastTransitionTime: '2024-12-31T00:00:00Z', observedGeneration: 1 },
    { type: 'Ready', status: 'False', reason: 'Waiting', message: 'x', lastTransitionTime: '2024-12-31T00:00:00Z', observedGeneration: 1 },
  ];
  const cases: {
    name: string;
    before: Condition[] | undefined;
    next: ReturnType<typeof ready>;
    gen: number | undefined;
    wantTime: string;
    wantGen: number | undefined;
    wantOrder: string[];
  }[] = [
    { name: 'new condition on undefined list', before: undefined, next: ready('True'), gen: 3, wantTime: '2025-01-01T00:05:00Z', wantGen: 3, wantOrder: ['Ready'] },
    { name: 'status unchanged keeps transition time', before: base, next: ready('False', 'StillWaiting', 'y'), gen: 2, wantTime: '2024-12-31T00:00:00Z', wantGen: 2, wantOrder: ['Admitted', 'Ready'] },
    { name: 'status changed stamps now (second precision)', before: base, next: ready('True'), gen: 2, wantTime: '2025-01-01T00:05:00Z', wantGen: 2, wantOrder: ['Admitted', 'Ready'] },
    { name: 'undefined generation omits observedGeneration', before: base, next: ready('Unknown'), gen: undefined, wantTime: '2025-01-01T00:05:00Z', wantGen: undefined, wantOrder: ['Admitted', 'Ready'] },
    { name: 'new type is appended', before: base, next: { type: 'Captured', status: 'True', reason: 'Done', message: '' }, gen: 1, wantTime: '2025-01-01T00:05:00Z', wantGen: 1, wantOrder: ['Admitted', 'Ready', 'Captured'] },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const frozen = c.before ? structuredClone(c.before) : undefined;
      const out = setCondition(c.before, c.next, c.gen, t1);
      const got = findCondition(out, c.next.type)!;
      assert.equal(got.status, c.next.status);
      assert.equal(got.reason, c.next.reason);
      assert.equal(got.message, c.next.message);
      assert.equal(got.lastTransitionTime, c.wantTime);
      assert.equal(got.observedGeneration, c.wantGen);
      assert.equal('observedGeneration' in got, c.wantGen !== undefined);
      assert.deepEqual(out.map((x) => x.type), c.wantOrder);
      assert.deepEqual(c.before, frozen, 'input not mutated');
    });
  }
});

test('setCondition is idempotent: same input twice gives an equal list', () => {
  const a = setCondition(undefined, ready('True'), 4, t0);
  const b = setCondition(a, ready('True'), 4, t1);
  assert.deepEqual(a, b);
});

test('isConditionTrue / isConditionTrueFor / removeCondition', () => {
  const list = setCondition(setCondition(undefined, ready('True'), 2, t0), { type: 'Captured', status: 'False', reason: 'No', message: '' }, 2, t0);
  assert.equal(isConditionTrue(list, 'Ready'), true);
  assert.equal(isConditionTrue(list, 'Captured'), false);
  assert.equal(isConditionTrue(list, 'Missing'), false);
  assert.equal(isConditionTrue(undefined, 'Ready'), false);
  assert.equal(isConditionTrueFor(list, 'Ready', 2), true);
  assert.equal(isConditionTrueFor(list, 'Ready', 3), false, 'stale generation');
  assert.deepEqual(removeCondition(list, 'Ready').map((c) => c.type), ['Captured']);
});
