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

async function setup(t: { after: (fn: () => Promise<void>) => void }, opts: { pageSize?: number } = {}) {
  const api = new FakeApiserver();
  const kubeConfig = await api.start();
  const informer = new Informer<Obj>({ kubeConfig, resource: configMapsRef, namespace: 'ns', backoff: { initialMs: 5, maxMs: 20 }, ...opts });
  const events: string[] = [];
  informer.onAdd((o) => events.push(`add ${o.metadata.name} ${o.data?.v ?? ''}`));
  informer.onUpdate((o, old) => events.push(`update ${o.metadata.name} ${old.data?.v ?? ''}->${o.data?.v ?? ''}`));
  informer.onDelete((o) => events.push(`delete ${o.metadata.name}`));
  t.after(async () => {
    informer.stop();
    await informer.stopped();
    await api.stop();
  });
  return { api, informer, events };
}

test('informer: initial list (paged) syncs the cache with type meta; watch delivers add/update/delete', async (t) => {
  const { api, informer, events } = await setup(t, { pageSize: 2 });
  for (const n of ['a', 'b', 'c']) api.put(n, { v: '1' });
  assert.equal(informer.hasSynced(), false);
  await informer.start();
  assert.equal(informer.hasSynced(), true);
  assert.deepEqual(informer.list().map((o) => o.metadata.name).sort(), ['a', 'b', 'c']);
  assert.equal(informer.get('ns/a')?.kind, 'ConfigMap', 'list items get kind filled in');
  assert.equal(informer.get('ns/a')?.apiVersion, 'v1');
  assert.ok(api.requests.filter((r) => r.includes('continue=')).length >= 1, 'paged');
  await until(() => api.openWatches === 1, 'watch');
  const watchReq = api.requests.find((r) => r.includes('watch=1'))!;
  assert.match(watchReq, /allowWatchBookmarks=true/);
  assert.match(watchReq, /resourceVersion=103/);
  assert.match(watchReq, /timeoutSeconds=\d+/);

  api.put('d', { v: '1' });
  api.put('a', { v: '2' });
  api.remove('b');
  await until(() => events.length === 6, 'watch events');
  assert.deepEqual(events, ['add a 1', 'add b 1', 'add c 1', 'add d 1', 'update a 1->2', 'delete b']);
  assert.equal(informer.get('ns/a')?.data?.v, '2');
  assert.equal(informer.get('ns/b'), undefined);
  assert.equal(informer.relists, 0);
});

for (const how of ['gone-event', 'gone-http', 'compacted'] as const) {
  test(`informer: 410 Gone (${how}) drops the resourceVersion, relists and emits the missed diff`, async (t) => {
    const { api, informer, events } = await setup(t);
    api.put('a', { v: '1' });
    api.put('b', { v: '1' });
    await informer.start();
    await until(() => api.openWatches === 1, 'watch');
    // Changes the watcher never sees, then the watch breaks and its resourceVersion is gone.
    api.put('a', { v: '2' }, false);
    api.remove('b', false);
    api.put('c', { v: '1' }, false);
    if (how === 'compacted') api.compactedBelow = api.rv;
    else api.nextWatch.push(how);
    api.closeWatches();
    await until(() => informer.relists === 1 && events.length === 5, 'relist diff');
    assert.deepEqual(events.slice(2).sort(), ['add c 1', 'delete b', 'update a 1->2']);
    assert.deepEqual(informer.list().map((o) => o.metadata.name).sort(), ['a', 'c']);
    await until(() => api.openWatches === 1, 'watch resumed after relist');
  });
}

test('informer: other errors back off and re-watch from the last resourceVersion without relisting', async (t) => {
  const { api, informer, events } = await setup(t);
  api.put('a', { v: '1' });
  await informer.start();
  await until(() => api.openWatches === 1, 'watch');
  api.put('a', { v: '2' });
  await until(() => events.length === 2, 'update');
  api.nextWatch.push('http-500', 'http-500', 'close');
  api.closeWatches();
  await until(() => api.openWatches === 1, 'watch restarted');
  const watches = api.requests.filter((r) => r.includes('watch=1'));
  assert.ok(watches.length >= 4, `watch attempts ${watches.length}`);
  assert.match(watches.at(-1)!, /resourceVersion=102/);
  assert.equal(informer.relists, 0);
  api.put('b', { v: '1' });
  await until(() => events.length === 3, 'events flow again');
  assert.deepEqual(events, ['add a 1', 'update a 1->2', 'add b 1']);
});

test('informer: bookmarks advance the resume resourceVersion', async (t) => {
  const { api, informer } = await setup(t);
  await informer.start();
  await until(() => api.openWatches === 1, 'watch');
  api.put('x', { v: '1' }, false);
  api.put('y', { v: '1' }, false);
  api.bookmark();
  await new Promise((r) => setTimeout(r, 50));
  api.closeWatches();
  await until(() => api.openWatches === 1, 're-watch');
  assert.match(api.requests.filter((r) => r.includes('watch=1')).at(-1)!, new RegExp(`resourceVersion=${api.rv}`));
  assert.equal(informer.list().length, 0, 'bookmark carries no object');
});

test('informer: a throwing handler does not break the informer', async (t) => {
  const { api, informer } = await setup(t);
  informer.onAdd(() => { throw new Error('handler bug'); });
  await informer.start();
  api.put('a', { v: '1' });
  api.put('b', { v: '1' });
  await until(() => informer.list().length === 2, 'both objects cached');
});

test('informer: stop() closes the watch connection; start() rejects when stopped before sync', async (t) => {
  const { api, informer } = await setup(t);
  await informer.start();
  await until(() => api.openWatches === 1, 'watch');
  informer.stop();
  await informer.stopped();
  await until(() => api.openWatches === 0, 'watch closed');

  const api2 = new FakeApiserver('other');
  const kc2 = await api2.start();
  const never = new Informer<Obj>({ kubeConfig: kc2, resource: configMapsRef, namespace: 'ns', backoff: { initialMs: 5, maxMs: 10 } });
  const started = never.start(); // lists ns, which this server 404s: keeps retrying
  await new Promise((r) => setTimeout(r, 30));
  never.stop();
  await assert.rejects(started, /stopped before sync/);
  await api2.stop();
});
