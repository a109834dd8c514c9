import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubernetesObject } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../kube/client.js';
import { EventRecorder } from '../../kube/events.js';
import { httpClientFor } from '../../kube/http.js';
import { startControlPlane } from '../../scripts/controlplane/harness.js';

interface EventsV1 {
  items: { reason: string; note: string; type: string; reportingController: string; reportingInstance: string; regarding: { kind: string; name: string; uid: string }; series?: { count: number } }[];
}

test('EventRecorder writes events.k8s.io/v1 Events; repeats become a series; failures never throw', async (t) => {
  const cp = await startControlPlane({ quiet: true });
  t.after(() => cp.stop());
  const ok = async (args: string[]) => {
    const r = await cp.kubectl(args);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  await ok(['create', 'namespace', 'ev']);
  await ok(['create', 'configmap', 'target', '-n', 'ev']);
  const kc = loadKubeConfig({ kubeconfig: cp.kubeconfigPath });
  const target = JSON.parse(await ok(['get', 'configmap', 'target', '-n', 'ev', '-o', 'json'])) as KubernetesObject;

  const recorder = new EventRecorder(kc, { component: 'worldline.dev/controller', instance: 'controller-0', seriesFlushMs: 60_000 });
  recorder.normal(target, 'Admitted', 'world admitted on node-1');
  for (let i = 0; i < 3; i++) recorder.warning(target, 'CheckFailed', 'check lint failed');
  recorder.warning(target, 'CheckFailed', 'a different message');
  await recorder.flush();

  const list = await httpClientFor(kc).request<EventsV1>({ path: '/apis/events.k8s.io/v1/namespaces/ev/events' });
  const summary = list.items.map((e) => `${e.type} ${e.reason} ${e.note} x${e.series?.count ?? 1}`).sort();
  assert.deepEqual(summary, [
    'Normal Admitted world admitted on node-1 x1',
    'Warning CheckFailed a different message x1',
    'Warning CheckFailed check lint failed x3',
  ]);
  for (const e of list.items) {
    assert.equal(e.reportingController, 'worldline.dev/controller');
    assert.equal(e.reportingInstance, 'controller-0');
    assert.equal(e.regarding.kind, 'ConfigMap');
    assert.equal(e.regarding.name, 'target');
    assert.equal(e.regarding.uid, target.metadata?.uid);
  }
  // Visible through the core API and kubectl too.
  assert.match(await ok(['get', 'events', '-n', 'ev']), /CheckFailed/);

  // A write the apiserver rejects (namespace does not exist) is logged, not thrown.
  recorder.warning({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ghost', namespace: 'missing-ns' } }, 'X', 'y');
  await recorder.flush();
});
