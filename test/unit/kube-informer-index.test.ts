import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Informer } from '../../kube/informer.js';
import { InformerIndex } from '../../kube/informer-index.js';
import { schemaParser } from '../../kube/object-schema.js';
import { configMapsRef } from '../../kube/resource-ref.js';
import { FakeApiserver, type Obj } from './kube-fake-apiserver.js';

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

// A ConfigMap whose data.v is "bad" is refused by its schema; data.v is a comma-separated list of index values.
const schema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.object({ name: z.string(), namespace: z.string(), resourceVersion: z.string() }).passthrough(),
  data: z.object({ v: z.string().refine((v) => v !== 'bad', 'bad value') }),
});

test('informer index: files each object under its values through add, update, delete, refusal and a relist', async (t) => {
  const api = new FakeApiserver();
  const kubeConfig = await api.start();
  const informer = new Informer<Obj>({ kubeConfig, resource: configMapsRef, namespace: 'ns', backoff: { initialMs: 5, maxMs: 20 }, parse: schemaParser('ConfigMap', schema) });
  const index = new InformerIndex(informer, (o) => (o.data?.v ?? '').split(',').filter((x) => x !== ''));
  // A handler registered after the index sees it already updated for the event it is handling.
  const seenByHandler: string[][] = [];
  informer.onAdd((o) => seenByHandler.push(index.keys(o.data?.v ?? '')));
  t.after(async () => {
    informer.stop();
    await informer.stopped();
    await api.stop();
  });

  api.put('a', { v: 'x,y' });
  api.put('b', { v: 'x' });
  await informer.start();
  assert.deepEqual(index.keys('x').sort(), ['ns/a', 'ns/b']);
  assert.deepEqual(index.keys('y'), ['ns/a']);
  assert.deepEqual(index.keysOfAny(['x', 'y', 'x']).sort(), ['ns/a', 'ns/b'], 'each key once');
  assert.deepEqual(index.keys('none'), []);

  api.put('a', { v: 'y,z' }); // update: leaves x, stays in y, joins z
  await until(() => index.keys('z').length === 1, 'update filed');
  assert.deepEqual(index.keys('x'), ['ns/b']);
  assert.deepEqual(index.keys('y'), ['ns/a']);

  api.put('c', { v: 'w' });
  await until(() => index.keys('w').length === 1, 'add filed');
  assert.deepEqual(seenByHandler.at(-1), ['ns/c']);

  api.put('b', { v: 'bad' }); // refused: leaves the cache without a delete, and leaves the index too
  await until(() => informer.refusal('ns/b') !== undefined, 'refusal');
  assert.deepEqual(index.keys('x'), []);

  api.remove('a');
  await until(() => informer.get('ns/a') === undefined, 'delete');
  assert.deepEqual(index.keys('y'), []);
  assert.deepEqual(index.keys('z'), []);

  // Missed events (a changed and a deleted object) come back through a relist's diff.
  await until(() => api.openWatches === 1, 'watch');
  api.put('c', { v: 'v2' }, false);
  api.put('d', { v: 'x' }, false);
  api.nextWatch.push('gone-event');
  api.closeWatches();
  await until(() => index.keys('v2').length === 1 && index.keys('x').length === 1, 'relist filed');
  assert.deepEqual(index.keys('w'), []);
  assert.deepEqual(index.keys('x'), ['ns/d']);
});
