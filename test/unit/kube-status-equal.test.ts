import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statusEqual } from '../../kube/status-writer.js';

test('statusEqual: table', () => {
  const cases: [unknown, unknown, boolean, string][] = [
    [{ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }, true, 'key order ignored'],
    [{ a: 1 }, { a: 1, b: undefined }, true, 'undefined keys are absent'],
    [{ a: [1, 2] }, { a: [2, 1] }, false, 'array order matters'],
    [{ a: 1 }, { a: '1' }, false, 'types matter'],
    [{ a: null }, { a: undefined }, false, 'null is a value'],
    [{ a: null }, { a: null }, true, 'null equals null'],
    [{}, [], false, 'object vs array'],
    [[], [], true, 'empty arrays'],
    [{ a: { b: { c: 1 } } }, { a: { b: { c: 2 } } }, false, 'deep difference'],
    [{ a: 1 }, { a: 1, b: 2 }, false, 'extra key'],
    [undefined, undefined, true, 'undefined'],
    ['x', 'x', true, 'strings'],
    [NaN, NaN, true, 'NaN'],
    [
      { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' }] },
      { conditions: [{ lastTransitionTime: '2025-01-01T00:00:00Z', status: 'True', type: 'Ready' }] },
      true,
      'conditions with reordered keys',
    ],
  ];
  for (const [a, b, want, name] of cases) {
    assert.equal(statusEqual(a, b), want, name);
    assert.equal(statusEqual(b, a), want, `${name} (symmetric)`);
  }
});
