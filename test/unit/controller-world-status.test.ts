import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { RootPhase } from '../../crds/index.js';
import { computeWorldStatus, bindWorld, type RootView, type WorldView } from '../../controller/world-status.js';

const now = new Date('2026-11-30T10:00:00Z');
const later = new Date('2026-11-30T10:05:00Z');

function root(name: string, node: string, phase?: RootPhase): [string, RootView] {
  return [name, { metadata: { name }, spec: { nodeName: node, path: `/srv/${name}` }, ...(phase ? { status: { phase } } : {}) }];
}
function world(roots: string[], status?: WorldView['status']): WorldView {
  return { metadata: { name: 'w', namespace: 'default', generation: 3 }, spec: { roots }, ...(status ? { status } : {}) };
}
const cond = (s: ReturnType<typeof computeWorldStatus>, type: string) => s.conditions.find((c) => c.type === type);

test('a World naming a missing Root waits, Pending, with ROOT_NOT_FOUND', () => {
  const s = computeWorldStatus({ world: world(['a', 'b']), roots: new Map([root('a', 'n1', 'Ready')]), nodeAgentPresent: () => true, now });
  assert.equal(s.phase, 'Pending');
  assert.equal(s.reason, 'ROOT_NOT_FOUND');
  assert.equal(cond(s, 'Accepted')?.status, 'False');
  assert.equal(cond(s, 'Accepted')?.reason, 'RootNotFound');
  assert.match(cond(s, 'Accepted')?.message ?? '', /"b"/);
  assert.equal(cond(s, 'Accepted')?.observedGeneration, 3);
  assert.equal(s.nodeName, undefined);
});

test('Roots on two nodes refuse the World for good (Refused)', () => {
  const s = computeWorldStatus({ world: world(['a', 'b']), roots: new Map([root('a', 'n1', 'Ready'), root('b', 'n2', 'Ready')]), nodeAgentPresent: () => true, now });
  assert.equal(s.phase, 'Refused');
  assert.equal(s.reason, 'ROOTS_ON_DIFFERENT_NODES');
  assert.match(s.message ?? '', /n1/);
  assert.match(s.message ?? '', /n2/);
});

test('a Root that is not Ready keeps the World Pending with ROOT_NOT_READY and no binding', () => {
  const s = computeWorldStatus({ world: world(['a']), roots: new Map([root('a', 'n1', 'Adopting')]), nodeAgentPresent: () => true, now });
  assert.equal(s.reason, 'ROOT_NOT_READY');
  assert.equal(s.nodeName, undefined);
  assert.match(s.message ?? '', /Adopting/);
});

test('Ready Roots on one node bind the World; without a node-agent it waits with WaitingForNodeAgent', () => {
  const s = computeWorldStatus({ world: world(['a', 'b']), roots: new Map([root('a', 'n1', 'Ready'), root('b', 'n1', 'Ready')]), nodeAgentPresent: () => false, now });
  assert.equal(s.nodeName, 'n1');
  assert.equal(s.phase, 'Pending');
  assert.equal(s.reason, 'WAITING_FOR_NODE_AGENT');
  assert.equal(cond(s, 'Accepted')?.status, 'True');
  assert.equal(cond(s, 'Ready')?.reason, 'WaitingForNodeAgent');
});

test('lastTransitionTime is kept while a condition keeps its status, and moves when it changes', () => {
  const roots = new Map([root('a', 'n1', 'Ready')]);
  const first = computeWorldStatus({ world: world(['a']), roots, nodeAgentPresent: () => false, now });
  const again = computeWorldStatus({ world: world(['a'], { conditions: first.conditions, nodeName: 'n1', phase: 'Pending' }), roots, nodeAgentPresent: () => false, now: later });
  assert.deepEqual(again.conditions, first.conditions);
  const present = computeWorldStatus({ world: world(['a'], { conditions: first.conditions, nodeName: 'n1', phase: 'Pending' }), roots, nodeAgentPresent: () => true, now: later });
  assert.equal(cond(present, 'Accepted')?.lastTransitionTime, cond(first, 'Accepted')?.lastTransitionTime);
  // Ready stays False (only its reason changes), so its transition time stays too.
  assert.equal(cond(present, 'Ready')?.reason, 'NodeAgentPresent');
  assert.equal(cond(present, 'Ready')?.lastTransitionTime, cond(first, 'Ready')?.lastTransitionTime);
  const captured = computeWorldStatus({ world: world(['a'], { conditions: present.conditions, nodeName: 'n1', phase: 'Captured' }), roots, nodeAgentPresent: () => true, now: later });
  assert.equal(cond(captured, 'Ready')?.status, 'True');
  assert.notEqual(cond(captured, 'Ready')?.lastTransitionTime, cond(first, 'Ready')?.lastTransitionTime);
});

test('Ready changes only when the run ends: the agent picking the World up, Admitted and Running leave it as it was', () => {
  const roots = new Map([root('a', 'n1', 'Ready')]);
  const step = (prev: ReturnType<typeof computeWorldStatus> | undefined, status: WorldView['status']) =>
    computeWorldStatus({ world: world(['a'], { ...status, ...(prev ? { conditions: prev.conditions } : {}) }), roots, nodeAgentPresent: () => true, now: later });
  const bound = step(undefined, { nodeName: 'n1', phase: 'Pending' });
  const admission = { outcome: 'ADMITTED', message: 'm' } as const;
  const admitted = step(bound, { nodeName: 'n1', phase: 'Admitted', admission });
  const running = step(admitted, { nodeName: 'n1', phase: 'Running', admission });
  // The controller's whole condition list is unchanged, so it has nothing to apply for these steps.
  assert.deepEqual(admitted.conditions, bound.conditions);
  assert.deepEqual(running.conditions, bound.conditions);
  assert.equal(cond(running, 'Ready')?.reason, 'NodeAgentPresent');
  const captured = step(running, { nodeName: 'n1', phase: 'Captured', admission });
  assert.deepEqual([cond(captured, 'Ready')?.status, cond(captured, 'Ready')?.reason], ['True', 'CandidateCaptured']);
  const collapsed = step(captured, { nodeName: 'n1', phase: 'Collapsed', admission });
  assert.deepEqual(collapsed.conditions, captured.conditions, 'a collapse of a captured World costs the controller no write');
  // A run that stopped short says so by phase.
  for (const phase of ['Failed', 'Refused'] as const) {
    const ended = step(running, { nodeName: 'n1', phase, admission });
    assert.deepEqual([cond(ended, 'Ready')?.status, cond(ended, 'Ready')?.reason], ['False', `Phase${phase}`], phase);
  }
});

test('a binding is permanent: a vanished Root does not unbind the World', () => {
  const s = computeWorldStatus({ world: world(['a'], { nodeName: 'n1', phase: 'Pending' }), roots: new Map(), nodeAgentPresent: () => true, now });
  assert.equal(s.nodeName, 'n1');
  assert.equal(cond(s, 'Accepted')?.status, 'False');
});

test('once the node-agent owns the phase, the controller leaves phase, reason and message alone', () => {
  const s = computeWorldStatus({
    world: world(['a'], { nodeName: 'n1', phase: 'Running', conditions: [{ type: 'Admitted', status: 'True', reason: 'ADMITTED', message: '', lastTransitionTime: now.toISOString() }] }),
    roots: new Map([root('a', 'n1', 'Ready')]),
    nodeAgentPresent: () => true,
    now,
  });
  assert.equal(s.phase, undefined);
  assert.equal(s.reason, undefined);
  assert.equal(s.message, undefined);
  assert.deepEqual(s.conditions.map((c) => c.type).sort(), ['Accepted', 'Ready']);
});

test('a Pending or Refused phase the node-agent wrote (it answered admission) is left to the node-agent', () => {
  for (const [phase, outcome] of [['Refused', 'RESOURCE_LIMIT_EXCEEDED'], ['Pending', 'RESOURCES_UNAVAILABLE']] as const) {
    const s = computeWorldStatus({
      world: world(['a'], { nodeName: 'n1', phase, admission: { outcome, message: 'm' } }),
      roots: new Map([root('a', 'n1', 'Ready')]),
      nodeAgentPresent: () => true,
      now,
    });
    assert.equal(s.phase, undefined, phase);
    assert.equal(s.reason, undefined, phase);
    assert.equal(s.message, undefined, phase);
    assert.equal(cond(s, 'Ready')?.reason, `Phase${phase}`);
  }
});

test('bindWorld refuses an empty root list', () => {
  const v = bindWorld(world([]), new Map());
  assert.equal(v.bound, false);
});

// Property: for any World shape and any set of Roots, the controller computes a status without
// throwing, applies only its own condition types, and never binds to a node the Roots do not share.
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
const phase = fc.constantFrom(undefined, 'Adopting', 'Ready', 'Broken' as const);
// Every phase the World schema admits (an empty phase is refused at the edge, so it never reaches here).
const worldPhase = fc.constantFrom(undefined, 'Pending', 'Admitted', 'Running', 'Captured', 'Collapsed', 'Refused', 'Failed');
test('property: computeWorldStatus is total and only writes what it owns', () => {
  fc.assert(
    fc.property(
      fc.array(name, { maxLength: 5 }),
      fc.array(fc.tuple(name, fc.constantFrom('n1', 'n2', ''), phase), { maxLength: 6 }),
      worldPhase,
      fc.option(fc.constantFrom('n1', 'n2'), { nil: undefined }),
      fc.boolean(),
      (roots, rootDefs, wphase, bound, agent) => {
        const map = new Map(rootDefs.map(([n, node, p]) => root(n, node, p)));
        const w = world(roots, { ...(wphase !== undefined ? { phase: wphase } : {}), ...(bound ? { nodeName: bound } : {}) });
        const s = computeWorldStatus({ world: w, roots: map, nodeAgentPresent: () => agent, now });
        for (const c of s.conditions) assert.ok(['Accepted', 'Ready'].includes(c.type));
        assert.ok(s.conditions.some((c) => c.type === 'Accepted'));
        if (s.nodeName && !bound) {
          for (const r of roots) assert.equal(map.get(r)?.spec?.nodeName, s.nodeName);
          for (const r of roots) assert.equal(map.get(r)?.status?.phase, 'Ready');
        }
        if (bound) assert.equal(s.nodeName, bound);
      },
    ),
    { numRuns: 500 },
  );
});
