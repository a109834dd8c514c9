// The promotion queue's order (node-agent/collapses/collapse-queue.ts): Collapses sharing a Root are served
// in order of creation, ties by namespace/name; disjoint Roots never wait; a Collapse never waits for itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queuePosition, servedBefore, type QueueEntry } from '../../node-agent/collapses/collapse-queue.js';

const e = (key: string, created: string, ...roots: string[]): QueueEntry => ({ key, created, roots });

test('older Collapses sharing a Root are ahead; younger ones and disjoint Roots are not', () => {
  const a = e('default/a', '2026-12-02T10:00:00Z', 'repo');
  const b = e('default/b', '2026-12-02T10:00:01Z', 'repo', 'docs');
  const c = e('default/c', '2026-12-02T10:00:02Z', 'docs');
  const d = e('default/d', '2026-12-02T09:00:00Z', 'other');
  const all = [a, b, c, d];
  assert.equal(queuePosition(a, all), 0);
  assert.equal(queuePosition(b, all), 1, 'a shares repo');
  assert.equal(queuePosition(c, all), 1, 'b shares docs; a does not');
  assert.equal(queuePosition(d, all), 0, 'older, but nothing shares its Root');
  assert.equal(queuePosition(b, [b]), 0, 'never behind itself');
});

test('Collapses created in the same second are ordered by key, so exactly one of two goes first', () => {
  const x = e('default/x', '2026-12-02T10:00:00Z', 'repo');
  const y = e('default/y', '2026-12-02T10:00:00Z', 'repo');
  assert.equal(servedBefore(x, y), true);
  assert.equal(servedBefore(y, x), false);
  assert.deepEqual([queuePosition(x, [x, y]), queuePosition(y, [x, y])], [0, 1]);
});
