import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CoreV1Event, V1ConfigMap } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../kube/client.js';
import { Informer } from '../../kube/informer.js';
import { configMapsRef, type ResourceRef } from '../../kube/resource-ref.js';
import { startControlPlane } from '../../scripts/controlplane/harness.js';

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('informer against a real apiserver', async (t) => {
  const cp = await startControlPlane({ quiet: true });
  t.after(() => cp.stop());
  const kubectl = async (...args: string[]) => {
    const r = await cp.kubectl(args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  await kubectl('create', 'namespace', 'inf');
  await kubectl('create', 'configmap', 'pre', '-n', 'inf', '--from-literal=v=0');

  const informer = new Informer<V1ConfigMap>({
    kubeConfig: loadKubeConfig({ kubeconfig: cp.kubeconfigPath }),
    resource: configMapsRef,
    namespace: 'inf',
    labelSelector: 'app=wl',
    backoff: { initialMs: 50, maxMs: 500 },
  });
  const events: string[] = [];
  informer.onAdd((o) => events.push(`add ${o.metadata?.name} ${o.data?.v}`));
  informer.onUpdate((o, old) => events.push(`update ${o.metadata?.name} ${old.data?.v}->${o.data?.v}`));
  informer.onDelete((o) => events.push(`delete ${o.metadata?.name}`));
  t.after(async () => { informer.stop(); await informer.stopped(); });

  await kubectl('label', 'configmap', 'pre', '-n', 'inf', 'app=wl');
  await informer.start();
  assert.deepEqual(events, ['add pre 0']);
  assert.equal(informer.get('inf/pre')?.kind, 'ConfigMap');

  await t.test('sees add, update and delete; ignores objects outside the selector', async () => {
    await kubectl('create', 'configmap', 'a', '-n', 'inf', '--from-literal=v=1');
    await kubectl('label', 'configmap', 'a', '-n', 'inf', 'app=wl');
    await kubectl('create', 'configmap', 'other', '-n', 'inf', '--from-literal=v=1');
    await kubectl('patch', 'configmap', 'a', '-n', 'inf', '--type=merge', '-p', '{"data":{"v":"2"}}');
    await kubectl('delete', 'configmap', 'pre', '-n', 'inf');
    await until(() => events.length >= 4, 'watch events').catch((e: Error) => { throw new Error(`${e.message}: ${events.join(', ')}`); });
    assert.deepEqual(events, ['add pre 0', 'add a 1', 'update a 1->2', 'delete pre'], 'a starts matching the selector when labelled: add');
    assert.equal(informer.get('inf/a')?.data?.v, '2');
    assert.equal(informer.get('inf/pre'), undefined);
    assert.equal(informer.get('inf/other'), undefined);
  });

  await t.test('recovers from 410 Gone (watch from a compacted resourceVersion) by relisting', async () => {
    // Core Events are watched from etcd (no watch cache), so an old resourceVersion after an etcd
    // compaction reliably yields the watch ERROR event with code 410.
    const coreEvents: ResourceRef = { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true };
    const evInformer = new Informer<CoreV1Event>({
      kubeConfig: loadKubeConfig({ kubeconfig: cp.kubeconfigPath }),
      resource: coreEvents,
      namespace: 'inf',
      backoff: { initialMs: 50, maxMs: 500 },
    });
    const seen: string[] = [];
    evInformer.onAdd((e) => seen.push(`add ${e.metadata?.name}`));
    evInformer.onDelete((e) => seen.push(`delete ${e.metadata?.name}`));
    t.after(async () => { evInformer.stop(); await evInformer.stopped(); });
    const event = (name: string) =>
      `apiVersion: v1\nkind: Event\nmetadata: {name: ${name}, namespace: inf}\ninvolvedObject: {kind: ConfigMap, name: a, namespace: inf}\nreason: Test\nmessage: m\ntype: Normal\n`;
    const apply = async (name: string) => {
      const r = await cp.kubectl(['apply', '-f', '-'], { input: event(name) });
      assert.equal(r.code, 0, r.stderr);
    };
    await apply('e1');
    await evInformer.start();
    assert.deepEqual(seen, ['add e1']);

    await compactEtcd(cp.etcdUrl);
    // Changes made while the watch is "away", then resume from an ancient resourceVersion.
    await apply('e2');
    await kubectl('delete', 'event', 'e1', '-n', 'inf');
    evInformer.restartWatchFrom('1');
    await until(() => evInformer.relists >= 1, 'relist after 410');
    await until(() => seen.length >= 3, 'diff after relist');
    assert.deepEqual(seen.slice(1).sort(), ['add e2', 'delete e1']);
    await apply('e3');
    await until(() => evInformer.get('inf/e3') !== undefined, 'watch resumed after relist');
    assert.deepEqual(evInformer.list().map((o) => o.metadata?.name).sort(), ['e2', 'e3']);
  });
});

/** Compacts etcd to its current revision through its HTTP gateway. */
async function compactEtcd(url: string): Promise<void> {
  const range = (await (await fetch(`${url}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'AA==' }) })).json()) as { header: { revision: string } };
  const r = await fetch(`${url}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
  assert.equal(r.status, 200, await r.text());
}
