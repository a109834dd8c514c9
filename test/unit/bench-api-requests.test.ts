// The benchmarks' API request counts (test/bench/api-requests.ts) come from the API server's own counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestTotalsOf } from '../bench/api-requests.js';

const METRICS = [
  '# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
  '# TYPE apiserver_request_total counter',
  'apiserver_request_total{code="200",component="apiserver",dry_run="",group="worldline.dev",resource="worlds",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 12',
  'apiserver_request_total{code="409",component="apiserver",dry_run="",group="worldline.dev",resource="worlds",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 1',
  'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 7',
  'apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 3',
  'apiserver_request_duration_seconds_count{resource="worlds",verb="APPLY"} 99',
].join('\n');

test('requestTotalsOf sums the counter by verb and resource[/subresource] over codes, and leaves out non-resource requests', () => {
  const m = requestTotalsOf(METRICS);
  assert.deepEqual([...m].sort(), [['APPLY worlds/status', 13], ['POST events', 7]]);
});

test('requestTotalsOf refuses a text without the counter, or a line without a value', () => {
  assert.throws(() => requestTotalsOf('# nothing here\n'), /no apiserver_request_total/);
  assert.throws(() => requestTotalsOf('apiserver_request_total{resource="worlds",verb="GET"} x'), /no value/);
});
