// Parsing at the edge: a kind's schema decides what an informer's cache holds. A valid object comes out
// typed (with the schema's defaults); an invalid one is a named refusal listing zod's field paths, and an
// informer given the parser keeps it out of get()/list() and the add/update/delete handlers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Informer } from '../../kube/informer.js';
import { kindParsers } from '../../kube/kind-parsers.js';
import { formatPath, OBJECT_SCHEMA_INVALID, schemaParser, type ObjectRefusal } from '../../kube/object-schema.js';
import { configMapsRef } from '../../kube/resource-ref.js';
import { FakeApiserver } from './kube-fake-apiserver.js';

function world(spec: Record<string, unknown>, status?: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'World',
    metadata: { name: 'w', namespace: 'ns', uid: 'u-1', generation: 4, resourceVersion: '9', managedFields: [{ manager: 'kubectl', operation: 'Apply' }] },
    spec,
    ...(status ? { status } : {}),
  };
}

test('a valid World parses to the inferred type: defaults applied, unknown metadata (managedFields) kept', () => {
  const r = kindParsers.World(world({ roots: ['r'], agent: { command: ['make'] }, network: {} }, { nodeName: 'n1', phase: 'Running' }));
  assert.ok(r.ok);
  assert.deepEqual(r.value.spec.roots, ['r']);
  assert.equal(r.value.spec.network?.policy, 'None', 'the schema default');
  assert.equal(r.value.status?.phase, 'Running');
  assert.deepEqual(r.value.metadata.managedFields, [{ manager: 'kubectl', operation: 'Apply' }]);
});

test('a World with a field of the wrong type is refused by name, with the field paths zod reports', () => {
  const r = kindParsers.World(world({ roots: ['r'], agent: { command: 'make test' } }, { exit: { code: 'one' } }));
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.refusal.code, OBJECT_SCHEMA_INVALID);
  assert.equal(r.refusal.kind, 'World');
  assert.equal(r.refusal.key, 'ns/w');
  assert.deepEqual(r.refusal.paths, ['spec.agent.command', 'status.exit.code']);
  assert.match(r.refusal.message, /^World ns\/w does not match the World schema: /);
  assert.match(r.refusal.message, /spec\.agent\.command: /);
  assert.match(r.refusal.message, /status\.exit\.code: /);
  assert.deepEqual(r.refusal.metadata, { name: 'w', namespace: 'ns', uid: 'u-1', generation: 4, resourceVersion: '9' });
});

test('an older shape (a Check without spec.name) and a missing spec are refused; the refusal reads status defensively', () => {
  const check = kindParsers.Check({
    apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'c', namespace: 'ns' },
    spec: { worldRef: 'w', check: 'unit' },
    status: { reason: 'CANDIDATE_MISSING', message: 'waiting', conditions: [{ type: 'WorldFound', status: 'True', reason: 'WorldFound', message: 'ok' }, 'junk'] },
  });
  assert.equal(check.ok, false);
  if (check.ok) return;
  // Every path is named: the old spec field, and the malformed status entries (no lastTransitionTime, a string).
  assert.deepEqual(check.refusal.paths, ['spec.name', 'status.conditions[0].lastTransitionTime', 'status.conditions[1]']);
  assert.deepEqual(check.refusal.status, { reason: 'CANDIDATE_MISSING', message: 'waiting', conditions: [{ type: 'WorldFound', status: 'True', reason: 'WorldFound', message: 'ok' }] });
  const root = kindParsers.Root({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Root', metadata: { name: 'r' } });
  assert.equal(root.ok, false);
  if (!root.ok) assert.deepEqual(root.refusal.paths, ['spec']);
});

test('paths name list indexes; many issues are cut to eight in the message', () => {
  assert.equal(formatPath(['spec', 'checks', 0, 'command']), 'spec.checks[0].command');
  assert.equal(formatPath([]), '<root>');
  const many = z.object({ a: z.array(z.number()) });
  const r = schemaParser('Thing', many)({ a: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'] });
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.refusal.paths.length, 10);
  assert.match(r.refusal.message, /and 2 more$/);
  assert.equal(r.refusal.message.match(/a\[\d+\]: /g)?.length, 8);
});

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('an informer with a parser holds only accepted objects; a refused one goes to refusal(key) and onRefuse, never to handlers', async (t) => {
  const api = new FakeApiserver();
  const kubeConfig = await api.start();
  // A ConfigMap "kind" whose data.v must be digits.
  const Digits = z.object({ metadata: z.looseObject({ name: z.string(), namespace: z.string(), resourceVersion: z.string() }), data: z.object({ v: z.string().regex(/^\d+$/) }) });
  const informer = new Informer<z.output<typeof Digits>>({ kubeConfig, resource: configMapsRef, namespace: 'ns', backoff: { initialMs: 5, maxMs: 20 }, parse: schemaParser('ConfigMap', Digits) });
  const events: string[] = [];
  const refusals: ObjectRefusal[] = [];
  informer.onAdd((o) => events.push(`add ${o.metadata.name} ${o.data.v}`));
  informer.onUpdate((o) => events.push(`update ${o.metadata.name} ${o.data.v}`));
  informer.onDelete((o) => events.push(`delete ${o.metadata.name}`));
  informer.onRefuse((r) => refusals.push(r));
  t.after(async () => {
    informer.stop();
    await informer.stopped();
    await api.stop();
  });
  api.put('good', { v: '1' });
  api.put('bad', { v: 'x' });
  await informer.start();
  assert.deepEqual(informer.list().map((o) => o.metadata.name), ['good']);
  assert.equal(informer.get('ns/bad'), undefined);
  assert.deepEqual(informer.refusal('ns/bad')?.paths, ['data.v']);
  assert.deepEqual(refusals.map((r) => r.key), ['ns/bad']);
  assert.deepEqual(events, ['add good 1']);

  await until(() => api.openWatches === 1, 'watch');
  api.put('good', { v: 'not-a-number' }); // valid -> invalid: leaves the cache without a delete
  await until(() => refusals.length === 2, 'refusal of good');
  assert.equal(informer.get('ns/good'), undefined);
  assert.equal(refusals[1]?.key, 'ns/good');
  api.put('bad', { v: '7' }); // invalid -> valid: added
  await until(() => events.length === 2, 'bad fixed');
  assert.equal(informer.refusal('ns/bad'), undefined);
  assert.equal(informer.get('ns/bad')?.data.v, '7');
  api.remove('good'); // a refused object deleted: gone from the refusals, no delete handler (it never was typed)
  api.remove('bad');
  await until(() => events.length === 3, 'delete bad');
  assert.deepEqual(events, ['add good 1', 'add bad 7', 'delete bad']);
  assert.equal(informer.refusal('ns/good'), undefined);
  assert.deepEqual(informer.refusals(), []);
});
