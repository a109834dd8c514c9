import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Registry } from 'prom-client';
import { startHttpServer } from '../../kube/http-server.js';
import { createReconcileMetrics } from '../../kube/metrics.js';

test('http server: /healthz, /readyz (503 with reason), /metrics with reconcile metrics', async (t) => {
  const registry = new Registry();
  const metrics = createReconcileMetrics(registry);
  assert.equal(createReconcileMetrics(registry) !== undefined, true, 'creating twice on one registry is fine');
  metrics.observe('World', 'success', 0.02);
  metrics.observe('World', 'terminal', 0.5);
  new Counter({ name: 'extra_total', help: 'x', registers: [registry] }).inc();
  let ready = false;
  let live = true;
  const srv = await startHttpServer({ host: '127.0.0.1', port: 0, registry, ready: () => ready, readyReason: () => 'informers not synced', live: () => live });
  t.after(() => srv.close());
  const base = `http://127.0.0.1:${srv.port}`;

  let r = await fetch(`${base}/healthz`);
  assert.equal(r.status, 200);
  r = await fetch(`${base}/readyz`);
  assert.equal(r.status, 503);
  assert.match(await r.text(), /informers not synced/);
  ready = true;
  r = await fetch(`${base}/readyz`);
  assert.equal(r.status, 200);
  live = false;
  r = await fetch(`${base}/healthz`);
  assert.equal(r.status, 503);

  r = await fetch(`${base}/metrics`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), registry.contentType);
  const text = await r.text();
  assert.match(text, /worldline_reconcile_total\{kind="World",result="success"\} 1/);
  assert.match(text, /worldline_reconcile_total\{kind="World",result="terminal"\} 1/);
  assert.match(text, /worldline_reconcile_duration_seconds_count\{kind="World"\} 2/);
  assert.match(text, /extra_total 1/);
  r = await fetch(`${base}/nope`);
  assert.equal(r.status, 404);
});
