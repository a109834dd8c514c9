// Objects the schema refuses, on a real API server. The CRDs are generated from the same zod schemas, so
// the API server refuses a new invalid object itself (shown first). What it does not do is re-validate
// objects already stored: one written under an older, looser version of the CRD stays in etcd as it was.
// Such objects (a World whose spec.agent.command is a string, a Check from before spec.name) reach the
// controller's informers, are refused at the edge with OBJECT_SCHEMA_INVALID naming the field path, and
// the controller keeps running and reconciling everything else.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { condition, getJson, kc, waitFor } from '../support/wait.js';

const NS = 'schema-test';

/** An older CRD version: spec is free-form (the shape an early release stored). */
function loosenSpec(crd: string): string[] {
  const patch = [{ op: 'replace', path: '/spec/versions/0/schema/openAPIV3Schema/properties/spec', value: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }];
  return ['patch', 'crd', crd, '--type=json', '-p', JSON.stringify(patch)];
}

const OLD_WORLD = `apiVersion: worldline.dev/v1alpha1\nkind: World\nmetadata: {name: old-shape, namespace: ${NS}}\nspec: {roots: [repo], agent: {command: "make test"}}\n`;
const OLD_CHECK = `apiVersion: worldline.dev/v1alpha1\nkind: Check\nmetadata: {name: old-check, namespace: ${NS}}\nspec: {worldRef: old-shape}\n`;

describe('objects stored under an older schema, refused at the edge', () => {
  let cp: ControlPlane;
  let ctl: ControllerProcess;

  before(async () => {
    cp = await startControlPlane({ crdDir: 'crds' });
    await kc(cp, ['create', 'namespace', 'worldline-system']);
    await kc(cp, ['create', 'namespace', NS]);
  });
  after(async () => {
    await ctl?.kill('SIGKILL');
    await cp?.stop();
  });

  test('the current CRD refuses the invalid shapes itself (the CRD and the zod schema agree on new writes)', async () => {
    const world = await cp.kubectl(['apply', '-f', '-'], { input: OLD_WORLD });
    assert.notEqual(world.code, 0);
    assert.match(world.stderr, /spec\.agent\.command/);
    const check = await cp.kubectl(['apply', '-f', '-'], { input: OLD_CHECK });
    assert.notEqual(check.code, 0);
    assert.match(check.stderr, /spec\.name/);
  });

  test('stored under an older CRD, they are refused by name on status; the controller lives on and heals them once fixed', async () => {
    await kc(cp, loosenSpec('worlds.worldline.dev'));
    await kc(cp, loosenSpec('checks.worldline.dev'));
    await waitFor('older CRD serves the old shapes', async () => (await cp.kubectl(['apply', '-f', '-'], { input: OLD_WORLD + '---\n' + OLD_CHECK })).code === 0);
    // Back to the current CRDs: the stored objects stay as they are.
    await kc(cp, ['apply', '--server-side', '--force-conflicts', '-f', 'crds/worlds.worldline.dev.yaml', '-f', 'crds/checks.worldline.dev.yaml']);
    await waitFor('current CRD refuses the old shape again', async () => (await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: OLD_WORLD.replace('old-shape', 'probe') })).code !== 0);
    const stored = await getJson(cp, ['get', 'world', 'old-shape', '-n', NS]);
    assert.equal(stored?.spec.agent.command, 'make test', 'the API server still serves the old object unchanged');
    // A valid World beside them, reconciled as usual.
    await kc(cp, ['apply', '-f', '-'], `apiVersion: worldline.dev/v1alpha1\nkind: World\nmetadata: {name: fine, namespace: ${NS}}\nspec: {roots: [nope], agent: {command: [make]}}\n`);

    ctl = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'ctl-schema' });

    const w = await waitFor('World refused by name', async () => {
      const o = await getJson(cp, ['get', 'world', 'old-shape', '-n', NS]);
      return o?.status?.reason === 'OBJECT_SCHEMA_INVALID' ? o : undefined;
    });
    assert.equal(w.status.phase, 'Refused');
    assert.match(w.status.message, /^World schema-test\/old-shape does not match the World schema: spec\.agent\.command: /);
    assert.equal(condition(w, 'Accepted')?.status, 'False');
    assert.equal(condition(w, 'Accepted')?.reason, 'ObjectSchemaInvalid');
    assert.equal(condition(w, 'Accepted')?.observedGeneration, w.metadata.generation);

    const c = await waitFor('Check refused by name', async () => {
      const o = await getJson(cp, ['get', 'check', 'old-check', '-n', NS]);
      return condition(o, 'WorldFound')?.reason === 'ObjectSchemaInvalid' ? o : undefined;
    });
    assert.equal(condition(c, 'WorldFound')?.status, 'False');
    assert.match(condition(c, 'WorldFound')?.message ?? '', /spec\.name: /);
    assert.equal(c.status.nodeName, undefined, 'a refused Check is not linked to any node');

    const fine = await waitFor('the valid World reconciled', async () => {
      const o = await getJson(cp, ['get', 'world', 'fine', '-n', NS]);
      return o?.status?.reason === 'ROOT_NOT_FOUND' ? o : undefined;
    });
    assert.equal(fine.status.phase, 'Pending');
    assert.equal(ctl.logs.some((l) => l.msg === 'refused an object its schema does not accept' && l.key === `${NS}/old-shape`), true);

    // Fixed by hand: the World is typed again and reconciled like any other (its Root is missing).
    await kc(cp, ['patch', 'world', 'old-shape', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { agent: { command: ['make', 'test'] } } })]);
    const healed = await waitFor('fixed World reconciled', async () => {
      const o = await getJson(cp, ['get', 'world', 'old-shape', '-n', NS]);
      return o?.status?.reason === 'ROOT_NOT_FOUND' ? o : undefined;
    });
    assert.equal(condition(healed, 'Accepted')?.reason, 'RootNotFound');
    assert.equal(healed.status.phase, 'Pending');
    const exit = await Promise.race([ctl.waitExit(), new Promise((r) => setTimeout(() => r('alive'), 200))]);
    assert.equal(exit, 'alive', 'the controller never crashed');
  });
});
