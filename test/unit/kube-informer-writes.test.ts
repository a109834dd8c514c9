// The informer's own-write path: observeWrite puts a write's result in the cache and runs the handlers at
// once, and the watch's events up to that version (older ones and the echo) are dropped, unless the watch
// got there first; managedFields stripped on ingest. Against the in-memory apiserver of kube-fake-apiserver.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Informer } from '../../kube/informer.js';
import { configMapsRef } from '../../kube/resource-ref.js';
import { FakeApiserver, type Obj } from './kube-fake-apiserver.js';

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function setup(t: { after: (fn: () => Promise<void>) => void }, opts: { labelSelector?: string } = {}) {
  const api = new FakeApiserver();
  const kubeConfig = await api.start();
  const informer = new Informer<Obj>({ kubeConfig, resource: configMapsRef, namespace: 'ns', backoff: { initialMs: 5, maxMs: 20 }, stripManagedFields: true, ...opts });
  const events: string[] = [];
  informer.onAdd((o) => events.push(`add ${o.metadata.name} ${o.data?.v ?? ''}`));
  informer.onUpdate((o, old) => events.push(`update ${o.metadata.name} ${old.data?.v ?? ''}->${o.data?.v ?? ''}`));
  t.after(async () => {
    informer.stop();
    await informer.stopped();
    await api.stop();
  });
  return { api, informer, events };
}

test('observeWrite: the write is seen at once; older events and its echo are dropped; later ones delivered', async (t) => {
  const { api, informer, events } = await setup(t);
  api.put('a', { v: '1' });
  await informer.start();
  await until(() => api.openWatches === 1, 'watch');
  // Another writer's change, then ours on top of it; the watch has delivered neither yet.
  api.put('a', { v: 'other' }, false);
  const ours = api.put('a', { v: '2' }, false);
  informer.observeWrite(ours);
  assert.deepEqual(events, ['add a 1', 'update a 1->2'], 'handlers run on the write, not on the watch');
  assert.equal(informer.get('ns/a')?.data?.v, '2');
  informer.observeWrite(ours);
  assert.equal(events.length, 2, 'the same version again is nothing new');
  // The watch resumes from before both and replays them: the older one and the echo change nothing.
  api.closeWatches();
  await until(() => api.openWatches === 1, 'watch resumed');
  api.put('a', { v: '3' });
  await until(() => events.length === 3, 'the next change');
  assert.deepEqual(events, ['add a 1', 'update a 1->2', 'update a 2->3']);
  assert.equal(informer.get('ns/a')?.data?.v, '3');
});

test('observeWrite: a write the watch delivered first (with a newer change) does not roll the cache back', async (t) => {
  const { api, informer, events } = await setup(t);
  api.put('a', { v: '1' });
  await informer.start();
  await until(() => api.openWatches === 1, 'watch');
  const ours = api.put('a', { v: '2' });
  api.put('a', { v: '3' });
  await until(() => events.length === 3, 'both changes watched');
  informer.observeWrite(ours);
  assert.equal(informer.get('ns/a')?.data?.v, '3', 'the response came after its echo: nothing to take');
  api.put('a', { v: '4' });
  await until(() => events.length === 4, 'later changes still delivered');
  assert.deepEqual(events, ['add a 1', 'update a 1->2', 'update a 2->3', 'update a 3->4']);
});

test('observeWrite: ignored for an unknown key and by an informer with a selector; managedFields stripped', async (t) => {
  const { api, informer, events } = await setup(t);
  api.put('a', { v: '1' });
  await informer.start();
  informer.observeWrite({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'zz', namespace: 'ns', resourceVersion: '999' } });
  assert.equal(informer.get('ns/zz'), undefined);
  const a = api.put('a', { v: '2' }, false);
  informer.observeWrite({ ...a, metadata: { ...a.metadata, managedFields: [{ manager: 'm', operation: 'Apply' }] } } as Obj);
  assert.equal(informer.get('ns/a')?.data?.v, '2');
  assert.equal('managedFields' in (informer.get('ns/a')?.metadata ?? {}), false, 'managedFields dropped on ingest');
  assert.deepEqual(events, ['add a 1', 'update a 1->2']);

  const sel = await setup(t, { labelSelector: 'x=y' });
  sel.api.put('b', { v: '1' });
  await sel.informer.start();
  sel.informer.observeWrite(sel.api.put('b', { v: '2' }, false));
  assert.equal(sel.informer.get('ns/b')?.data?.v, '1', 'a selector informer waits for its watch');
});
