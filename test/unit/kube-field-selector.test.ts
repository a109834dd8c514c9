// Field selectors as the informer evaluates them for its own writes (kube/field-selector.ts): plain
// equality terms only, and a field that is absent or not a string never matches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fieldSelectorMatches, parseFieldSelector } from '../../kube/field-selector.js';

const obj = { metadata: { name: 'w', namespace: 'ns' }, status: { nodeName: 'node-1', phase: 'Running', gen: 3 } };

test('parseFieldSelector reads =, == and != terms joined by commas', () => {
  assert.deepEqual(parseFieldSelector('status.nodeName=node-1'), [{ path: ['status', 'nodeName'], op: '=', value: 'node-1' }]);
  assert.deepEqual(parseFieldSelector('metadata.name==w, status.phase!=Failed'), [
    { path: ['metadata', 'name'], op: '=', value: 'w' },
    { path: ['status', 'phase'], op: '!=', value: 'Failed' },
  ]);
  assert.deepEqual(parseFieldSelector('spec.nodeName='), [{ path: ['spec', 'nodeName'], op: '=', value: '' }]);
});

test('parseFieldSelector refuses what it cannot evaluate for certain', () => {
  for (const s of ['', 'status.nodeName', 'a\\,b=c', 'status..x=1', 'x=1,,y=2', 'x in (a,b)', 'x=a=b', '.x=1']) {
    assert.equal(parseFieldSelector(s), undefined, s);
  }
});

test('fieldSelectorMatches: every term must hold; an absent or non-string field never matches', () => {
  const m = (s: string) => fieldSelectorMatches(parseFieldSelector(s)!, obj);
  assert.equal(m('status.nodeName=node-1'), true);
  assert.equal(m('status.nodeName=node-2'), false);
  assert.equal(m('status.nodeName=node-1,metadata.name=w'), true);
  assert.equal(m('status.nodeName=node-1,metadata.name=x'), false);
  assert.equal(m('status.phase!=Failed'), true);
  assert.equal(m('status.phase!=Running'), false);
  assert.equal(m('status.missing!=x'), false, 'absent: unknown, so not matched');
  assert.equal(m('status.missing='), false);
  assert.equal(m('status.gen=3'), false, 'not a string');
  assert.equal(m('status.nodeName.deeper=x'), false);
  assert.equal(fieldSelectorMatches(parseFieldSelector('a=b')!, null), false);
});
