// The binding of a Check or Collapse to one World's uid (core/world-binding.ts) and the status the
// controller shows from it (controller/dependent-status.ts): the wait as a phase, a replaced or deleted
// World refused by name, a node copied only from the bound World.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentGate, bindingRefusal, worldBinding } from '../../core/world-binding.js';
import { computeDependentStatus } from '../../controller/dependent-status.js';

const A = '11111111-1111-4111-8111-111111111111';
const B = '22222222-2222-4222-8222-222222222222';
const now = new Date('2026-12-01T10:00:00Z');

test('worldBinding: absent, unbound, bound, replaced, deleted', () => {
  assert.deepEqual(worldBinding(undefined, undefined), { state: 'absent' });
  assert.deepEqual(worldBinding('', { metadata: {} }), { state: 'absent' });
  assert.deepEqual(worldBinding(undefined, { metadata: { uid: A } }), { state: 'unbound', worldUid: A });
  assert.deepEqual(worldBinding(A, { metadata: { uid: A } }), { state: 'bound', worldUid: A });
  assert.deepEqual(worldBinding(A, { metadata: { uid: B } }), { state: 'replaced', boundUid: A, worldUid: B });
  assert.deepEqual(worldBinding(A, undefined), { state: 'deleted', boundUid: A });
});

test('bindingRefusal names both uids for a replaced World and nothing for a bound one', () => {
  const r = bindingRefusal('Collapse', 'w', worldBinding(A, { metadata: { uid: B } }));
  assert.equal(r?.code, 'WORLD_REPLACED');
  assert.ok(r?.message.includes(A) && r.message.includes(B), r?.message);
  assert.equal(bindingRefusal('Check', 'w', worldBinding(A, undefined))?.code, 'WORLD_DELETED');
  assert.equal(bindingRefusal('Check', 'w', worldBinding(A, { metadata: { uid: A } })), undefined);
  assert.equal(bindingRefusal('Check', 'w', worldBinding(undefined, { metadata: { uid: A } })), undefined);
});

test('agentGate: a node-agent waits while unbound, refuses another uid, runs the bound World (or none cached)', () => {
  assert.deepEqual(agentGate('Collapse', 'w', undefined, { metadata: { uid: A } }), { act: 'wait' });
  assert.deepEqual(agentGate('Collapse', 'w', undefined, undefined), { act: 'wait' });
  assert.deepEqual(agentGate('Collapse', 'w', A, { metadata: { uid: A } }), { act: 'run' });
  assert.deepEqual(agentGate('Check', 'w', A, undefined), { act: 'run' });
  const refused = agentGate('Check', 'w', A, { metadata: { uid: B } });
  assert.equal(refused.act, 'refuse');
  assert.equal(refused.act === 'refuse' && refused.code, 'WORLD_REPLACED');
});

const dep = (worldUID?: string, nodeName?: string) => ({ metadata: { name: 'c', namespace: 'ns', generation: 1 }, spec: { worldRef: 'w', ...(worldUID ? { worldUID } : {}) }, ...(nodeName ? { status: { nodeName } } : {}) });

test('the controller shows the wait as phase Waiting until a node-agent has the object', () => {
  const missing = computeDependentStatus('Collapse', dep(), undefined, now);
  assert.deepEqual({ phase: missing.phase?.phase, reason: missing.phase?.reason }, { phase: 'Waiting', reason: 'WORLD_NOT_FOUND' });
  assert.equal(missing.nodeName, undefined);
  const unbound = computeDependentStatus('Check', dep(), { metadata: { name: 'w', uid: A } }, now);
  assert.deepEqual({ phase: unbound.phase?.phase, reason: unbound.phase?.reason, state: unbound.binding.state }, { phase: 'Waiting', reason: 'WORLD_NOT_BOUND', state: 'unbound' });
  assert.equal(unbound.conditions[0]?.reason, 'WorldFound');
  const handed = computeDependentStatus('Collapse', dep(), { metadata: { name: 'w', uid: A }, status: { nodeName: 'n1' } }, now);
  assert.equal(handed.nodeName, 'n1');
  assert.equal(handed.phase, undefined, 'once a node has it, the node-agent owns the phase');
});

test('a dependent bound to a replaced World is refused by name and never gets the new World\'s node', () => {
  const col = computeDependentStatus('Collapse', dep(A), { metadata: { name: 'w', uid: B }, status: { nodeName: 'n2' } }, now);
  assert.equal(col.nodeName, undefined);
  assert.deepEqual({ phase: col.phase?.phase, reason: col.phase?.reason }, { phase: 'Denied', reason: 'WORLD_REPLACED' });
  assert.deepEqual({ status: col.conditions[0]?.status, reason: col.conditions[0]?.reason }, { status: 'False', reason: 'WorldReplaced' });
  const chk = computeDependentStatus('Check', dep(A), { metadata: { name: 'w', uid: B } }, now);
  assert.deepEqual({ phase: chk.phase?.phase, reason: chk.phase?.reason, verdict: chk.phase?.verdict }, { phase: 'Refused', reason: 'WORLD_REPLACED', verdict: 'REFUSED' });
  const gone = computeDependentStatus('Check', dep(A), undefined, now);
  assert.deepEqual({ phase: gone.phase?.phase, reason: gone.phase?.reason, cond: gone.conditions[0]?.reason }, { phase: 'Refused', reason: 'WORLD_DELETED', cond: 'WorldDeleted' });
  // Already on a node: the node stays, the condition says it, and the phase is the node-agent's.
  const onNode = computeDependentStatus('Collapse', dep(A, 'n1'), { metadata: { name: 'w', uid: B }, status: { nodeName: 'n2' } }, now);
  assert.equal(onNode.nodeName, 'n1');
  assert.equal(onNode.phase, undefined);
  assert.equal(onNode.conditions[0]?.reason, 'WorldReplaced');
  // A replacement being deleted is still a replacement (the refused dependent is not deleted with it).
  const dying = computeDependentStatus('Collapse', dep(A), { metadata: { name: 'w', uid: B, deletionTimestamp: now.toISOString() } }, now);
  assert.equal(dying.binding.state, 'replaced');
});
