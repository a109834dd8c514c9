// Which Policy governs a set of Roots: the one naming any of them; of two that overlap, the older (then the
// lower name) — the same order the controller uses to refuse the newer one with PolicyRootConflict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { governingPolicy, governsAny, olderPolicyFirst } from '../../core/policy/governing.js';

const p = (name: string, roots: string[], creationTimestamp?: string) => ({ metadata: { name, ...(creationTimestamp ? { creationTimestamp } : {}) }, spec: { roots } });

test('the Policy naming any of the Roots governs; none naming them governs nothing', () => {
  const a = p('a', ['r1', 'r2'], '2026-01-01T00:00:00Z');
  const b = p('b', ['r3'], '2026-01-02T00:00:00Z');
  assert.equal(governingPolicy([a, b], ['r2']), a);
  assert.equal(governingPolicy([a, b], ['x', 'r3']), b);
  assert.equal(governingPolicy([a, b], ['x']), undefined);
  assert.equal(governingPolicy([], ['r1']), undefined);
  assert.equal(governsAny(a, ['r9', 'r1']), true);
  assert.equal(governsAny(a, []), false);
});

test('of two Policies naming the same Root the older governs, whatever the cache order', () => {
  const older = p('zeta', ['r'], '2026-01-01T00:00:00Z');
  const newer = p('alpha', ['r', 's'], '2026-03-01T00:00:00Z');
  assert.equal(governingPolicy([newer, older], ['r']), older);
  assert.equal(governingPolicy([older, newer], ['r']), older);
  // The newer one still governs a Root only it names.
  assert.equal(governingPolicy([older, newer], ['s']), newer);
});

test('same creation time: the lower name; no creation time sorts last', () => {
  const t = '2026-01-01T00:00:00Z';
  assert.equal(governingPolicy([p('b', ['r'], t), p('a', ['r'], t)], ['r'])?.metadata.name, 'a');
  assert.equal(governingPolicy([p('a', ['r']), p('b', ['r'], t)], ['r'])?.metadata.name, 'b');
  assert.ok(olderPolicyFirst(p('a', ['r'], t), p('a', ['r'])) < 0);
  assert.equal(olderPolicyFirst(p('a', ['r'], t), p('a', ['r'], t)), 0);
});
