import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setCondition, type Condition } from '../../kube/conditions.js';
import { loadKubeConfig } from '../../kube/client.js';
import { httpClientFor } from '../../kube/http.js';
import { objectPath } from '../../kube/api-paths.js';
import type { ResourceRef } from '../../kube/resource-ref.js';
import { StatusWriter, statusEqual } from '../../kube/status-writer.js';
import { Informer } from '../../kube/informer.js';
import { waitFor } from '../support/wait.js';
import { startControlPlane } from '../../scripts/controlplane/harness.js';

const gadgets: ResourceRef = { group: 'test.worldline.dev', version: 'v1', plural: 'gadgets', kind: 'Gadget', namespaced: true };

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.test.worldline.dev}
spec:
  group: test.worldline.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    selectableFields: [{jsonPath: .status.nodeName}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status:
            type: object
            properties:
              phase: {type: string}
              nodeName: {type: string}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status, reason, message, lastTransitionTime]
                  properties:
                    type: {type: string}
                    status: {type: string, enum: ["True", "False", "Unknown"]}
                    reason: {type: string}
                    message: {type: string}
                    lastTransitionTime: {type: string, format: date-time}
                    observedGeneration: {type: integer}
`;

interface Gadget {
  metadata: { name: string; namespace: string; resourceVersion: string; generation: number; finalizers?: string[]; managedFields?: { manager: string; subresource?: string }[] };
  status?: { phase?: string; nodeName?: string; conditions?: Condition[] };
}

test('StatusWriter: server-side apply by two field managers on a CRD status', async (t) => {
  const cp = await startControlPlane({ quiet: true });
  t.after(() => cp.stop());
  const kubectl = async (args: string[], input?: string) => {
    const r = await cp.kubectl(args, input === undefined ? undefined : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  await kubectl(['apply', '-f', '-'], crd);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/gadgets.test.worldline.dev']);
  await kubectl(['create', 'namespace', 'ssa']);
  await kubectl(['apply', '-f', '-'], 'apiVersion: test.worldline.dev/v1\nkind: Gadget\nmetadata: {name: g1, namespace: ssa}\nspec: {size: 1}\n');

  const kc = loadKubeConfig({ kubeconfig: cp.kubeconfigPath });
  const controller = new StatusWriter(kc, 'worldline-controller');
  const agent = new StatusWriter(kc, 'worldline-node-agent');
  const get = () => httpClientFor(kc).request<Gadget>({ path: objectPath(gadgets, 'g1', 'ssa') });
  const t0 = new Date('2025-01-01T00:00:00Z');
  const meta = { name: 'g1', namespace: 'ssa' };

  const admitted = setCondition(undefined, { type: 'Admitted', status: 'True', reason: 'Admitted', message: 'ok' }, 1, t0);
  const a1 = await controller.applyStatus<Gadget>(gadgets, { metadata: meta, status: { phase: 'Admitted', conditions: admitted } });
  assert.equal(a1.status?.phase, 'Admitted');

  const running = setCondition(undefined, { type: 'Running', status: 'True', reason: 'Started', message: 'pid 42' }, 1, t0);
  const b1 = await agent.applyStatus<Gadget>(gadgets, { metadata: meta, status: { nodeName: 'node-1', conditions: running } });
  assert.equal(b1.status?.phase, 'Admitted', "controller's phase survives the agent's apply");
  assert.equal(b1.status?.nodeName, 'node-1');
  assert.deepEqual(b1.status?.conditions?.map((c) => c.type), ['Admitted', 'Running'], 'condition list merged by type');

  await t.test('re-applying the same status is a no-op (resourceVersion unchanged)', async () => {
    const again = await controller.applyStatus<Gadget>(gadgets, { metadata: meta, status: { phase: 'Admitted', conditions: admitted } });
    assert.equal(again.metadata.resourceVersion, b1.metadata.resourceVersion);
    assert.ok(statusEqual(again.status, b1.status));
  });

  await t.test("a manager's later apply updates and prunes only its own fields", async () => {
    const captured = setCondition(admitted, { type: 'Admitted', status: 'True', reason: 'Admitted', message: 'still ok' }, 2, new Date());
    const a2 = await controller.applyStatus<Gadget>(gadgets, { metadata: meta, status: { conditions: captured } });
    assert.equal(a2.status?.phase, undefined, 'phase dropped from the apply set is removed');
    assert.equal(a2.status?.nodeName, 'node-1', "agent's field untouched");
    const byType = new Map(a2.status?.conditions?.map((c) => [c.type, c]));
    assert.equal(byType.get('Admitted')?.message, 'still ok');
    assert.equal(byType.get('Admitted')?.lastTransitionTime, '2025-01-01T00:00:00Z', 'transition time kept');
    assert.equal(byType.get('Admitted')?.observedGeneration, 2);
    assert.equal(byType.get('Running')?.reason, 'Started', "agent's condition untouched");
    const managers = (await get()).metadata.managedFields?.filter((m) => m.subresource === 'status').map((m) => m.manager).sort();
    assert.deepEqual(managers, ['worldline-controller', 'worldline-node-agent']);
  });

  await t.test("applyOwnedStatus writes only when the owned keys or condition types differ from what the object shows", async () => {
    const owned = { keys: ['nodeName'], conditionTypes: new Set(['Running']) };
    const seen = await get();
    const mine = { nodeName: seen.status?.nodeName, conditions: seen.status?.conditions?.filter((c) => c.type === 'Running') };
    assert.equal(await agent.applyOwnedStatus(gadgets, seen, mine, owned), undefined, 'nothing to write: the object shows it');
    assert.equal((await get()).metadata.resourceVersion, seen.metadata.resourceVersion);
    // The other manager's fields do not count: the agent's view is still unchanged.
    assert.equal(await agent.applyOwnedStatus(gadgets, { ...seen, status: { ...seen.status, phase: 'Other' } }, mine, owned), undefined);
    const written = await agent.applyOwnedStatus<Gadget>(gadgets, seen, { ...mine, nodeName: 'node-2' }, owned);
    assert.equal(written?.status?.nodeName, 'node-2', 'the write returns the object as written');
    const after = await get();
    assert.equal(after.status?.nodeName, 'node-2');
    assert.equal(written?.metadata.resourceVersion, after.metadata.resourceVersion);
    assert.equal((await agent.applyOwnedStatus<Gadget>(gadgets, after, { ...mine, nodeName: 'node-1' }, owned))?.status?.nodeName, 'node-1');
    assert.equal((await get()).status?.nodeName, 'node-1');
  });

  await t.test('applyObject: each manager adds its own finalizer and label; neither removes the other', async () => {
    await controller.applyObject(gadgets, { metadata: { ...meta, finalizers: ['worldline.dev/controller'], labels: { 'worldline.dev/node': 'node-1' } } });
    await agent.applyObject(gadgets, { metadata: { ...meta, finalizers: ['worldline.dev/node-agent'] } });
    const g = await get();
    assert.deepEqual(g.metadata.finalizers?.slice().sort(), ['worldline.dev/controller', 'worldline.dev/node-agent']);
    assert.equal(g.status?.nodeName, 'node-1', 'status untouched by main-resource apply');
    await controller.applyObject(gadgets, { metadata: { ...meta } });
    const g2 = await get();
    assert.deepEqual(g2.metadata.finalizers, ['worldline.dev/node-agent'], 'controller released only its finalizer');
    await agent.applyObject(gadgets, { metadata: { ...meta } });
  });

  await t.test('an informer on status.nodeName takes its own status writes at once, drops their echo, and leaves a write that moves the object away to its watch', async () => {
    await agent.applyStatus(gadgets, { metadata: meta, status: { nodeName: 'node-1', phase: 'A' } });
    const informer = new Informer<Gadget>({ kubeConfig: kc, resource: gadgets, namespace: 'ssa', fieldSelector: 'status.nodeName=node-1', backoff: { initialMs: 50, maxMs: 500 } });
    const seen: string[] = [];
    informer.onUpdate((o) => seen.push(`${o.status?.nodeName ?? ''}/${o.status?.phase ?? ''}`));
    informer.onDelete((o) => seen.push(`gone ${o.metadata.name}`));
    await informer.start();
    t.after(() => informer.stop());
    const until = (cond: () => boolean, what: string): Promise<true> => waitFor(`${what} (seen so far: ${seen.join(', ')})`, () => Promise.resolve(cond()), 20_000, 20);
    const owned = { keys: ['nodeName', 'phase'] };
    const written = await agent.applyOwnedStatus<Gadget>(gadgets, informer.get('ssa/g1')!, { nodeName: 'node-1', phase: 'B' }, owned);
    informer.observeWrite(written);
    assert.deepEqual(seen, ['node-1/B'], 'the handlers ran on the write, before any watch event');
    assert.equal(informer.get('ssa/g1')?.metadata.resourceVersion, written?.metadata.resourceVersion);
    assert.equal(await agent.applyOwnedStatus(gadgets, informer.get('ssa/g1')!, { nodeName: 'node-1', phase: 'B' }, owned), undefined, 'the cache shows the write: nothing to apply again');
    // Another writer's change is delivered by the watch after the echo, which changes nothing.
    await kubectl(['annotate', '--overwrite', 'gadget', 'g1', '-n', 'ssa', 'touched=yes']);
    await until(() => seen.length === 2, "the other writer's change");
    assert.deepEqual(seen, ['node-1/B', 'node-1/B']);
    // A write that takes the object off the selector is not taken: the watch says it left.
    informer.observeWrite(await agent.applyStatus<Gadget>(gadgets, { metadata: meta, status: { nodeName: 'node-2', phase: 'B' } }));
    // Not taken (the watch will not echo it): no handler ever sees node-2, whether or not the watch's
    // delete has arrived yet (it may already have).
    assert.notEqual(informer.get('ssa/g1')?.status?.nodeName, 'node-2', 'not taken: the watch will not echo it');
    await until(() => seen.includes('gone g1'), 'the object leaving the watch');
    assert.equal(informer.get('ssa/g1'), undefined);
    assert.ok(!seen.some((x) => x.startsWith('node-2/')), `no handler saw the write that left the selector: ${seen.join(', ')}`);
    await agent.applyStatus(gadgets, { metadata: meta, status: { nodeName: 'node-1', phase: 'A' } });
  });

  await t.test('errors are typed ApiErrors with status code and reason', async () => {
    await assert.rejects(
      controller.applyStatus(gadgets, { metadata: { name: 'g1', namespace: 'ssa' }, status: { conditions: [{ type: 'Bad', status: 'Maybe' }] } }),
      (e: { statusCode?: number; reason?: string }) => e.statusCode === 422 && e.reason === 'Invalid',
    );
  });
});
