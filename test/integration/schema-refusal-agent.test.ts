// The node-agent's side of objects the schema refuses, on a real stack: a Collapse stored under an older,
// looser CRD (spec.mode "Sideways") and bound to this node is never run; the node-agent refuses it by
// name (phase Denied, OBJECT_SCHEMA_INVALID naming spec.mode) and the controller marks WorldFound=False,
// each writing only its own fields; both processes keep running.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from '../support/stack.js';
import { condition, kc } from '../support/wait.js';

describe('a refused Collapse on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'schema-node' });
  });
  after(async () => {
    await s?.stop();
  });

  test('stored under an older CRD and bound to the node, it is Denied by name and never run', async () => {
    const loose = [{ op: 'replace', path: '/spec/versions/0/schema/openAPIV3Schema/properties/spec', value: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }];
    await kc(s.cp, ['patch', 'crd', 'collapses.worldline.dev', '--type=json', '-p', JSON.stringify(loose)]);
    const manifest = 'apiVersion: worldline.dev/v1alpha1\nkind: Collapse\nmetadata: {name: sideways, namespace: default}\nspec: {worldRef: nowhere, mode: Sideways}\n';
    await s.waitFor('older CRD serves the old shape', async () => (await s.cp.kubectl(['apply', '-f', '-'], { input: manifest })).code === 0);
    // Bound to this node as a controller of that older release would have done.
    await kc(s.cp, ['patch', 'collapse', 'sideways', '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeName: s.nodeName } })]);
    await kc(s.cp, ['apply', '--server-side', '--force-conflicts', '-f', 'crds/collapses.worldline.dev.yaml']);

    const c = await s.waitFor('Collapse denied by name, WorldFound refused', async () => {
      const o = await s.get('collapse', 'sideways', 'default');
      return o?.status?.reason === 'OBJECT_SCHEMA_INVALID' && condition(o, 'WorldFound')?.reason === 'ObjectSchemaInvalid' ? o : undefined;
    }, 60_000);
    assert.equal(c.status.phase, 'Denied');
    assert.match(c.status.message, /^Collapse default\/sideways does not match the Collapse schema: spec\.mode: /);
    assert.equal(c.status.transaction, undefined, 'no transaction was prepared');
    assert.equal(c.status.receipt, undefined, 'no receipt was written');
    assert.equal(condition(c, 'WorldFound')?.status, 'False');
    assert.equal(c.status.nodeName, s.nodeName, 'the binding written before is kept');
    assert.ok(s.agent.logs.some((l) => l.msg === 'refused an object its schema does not accept' && l.key === 'default/sideways'));
    for (const p of [s.agent, s.controller]) {
      const exit = await Promise.race([p.waitExit(), new Promise((r) => setTimeout(() => r('alive'), 200))]);
      assert.equal(exit, 'alive');
    }
  });
});
