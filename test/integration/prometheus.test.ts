// A real Prometheus (Debian's /usr/bin/prometheus) scrapes the node-agent and the controller of a real stack;
// what the components count is read back through Prometheus's HTTP API: an admission refusal on the node
// (worldline_admission_decisions_total{outcome="RESOURCES_UNAVAILABLE"}), what setting favordynmods found at
// the agent's start, and the controller's reconciles.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { parseMountinfo } from '../../node-agent/store/mount-table.js';
import { startPrometheus, type Prometheus } from '../support/prometheus.js';
import { startStack, type Stack } from '../support/stack.js';
import { kc, waitFor } from '../support/wait.js';
import { adoptSmallRoot, shWorld, worldManifest } from '../support/worlds.js';

const OWNER = 1000;
const PROMETHEUS = '/usr/bin/prometheus';

/** The single value of an instant query that sums to one series; undefined when the result is empty. */
async function scalar(p: Prometheus, promql: string): Promise<number | undefined> {
  const r = await p.query(promql);
  if (r.length === 0) return undefined;
  assert.equal(r.length, 1, `${promql} returned ${r.length} series`);
  return Number(r[0]!.value[1]);
}

describe('Prometheus scrapes the node-agent and the controller', () => {
  let s: Stack;
  let prom: Prometheus;

  before(async () => {
    // A real Prometheus is what this test is about: missing, it fails saying so (.ci/run installs it).
    assert.ok(existsSync(PROMETHEUS), `${PROMETHEUS} is not installed: apt-get install prometheus`);
    s = await startStack({ nodeName: 'prom-node', agentArgs: ['--node-worlds', '1'] });
    await adoptSmallRoot(s, 'proj', OWNER);
    prom = await startPrometheus([
      { job: 'node-agent', address: new URL(s.agent.metricsUrl).host },
      { job: 'controller', address: new URL(s.controller.metricsUrl).host },
    ]);
    await prom.waitTargetsUp();
  });

  after(async () => {
    await prom?.stop();
    await s?.stop();
  });

  test('an admission refusal on the node shows up in Prometheus', async () => {
    const unavailable = 'sum(worldline_admission_decisions_total{job="node-agent",stage="agent",outcome="RESOURCES_UNAVAILABLE"})';
    // The series exists from the agent's start, at zero: a rate over it has a zero to start from.
    const start = await waitFor('the refusal counter scraped', async () => scalar(prom, unavailable).then((v) => (v === undefined ? undefined : { v })));
    assert.equal(start.v, 0);
    assert.equal(await scalar(prom, 'worldline_admission_capacity{job="node-agent",resource="worlds"}'), 1);

    await s.apply(worldManifest('holder', shWorld(['proj'], 'sleep 298.5', { resources: { wallTime: '5m' } })));
    await s.waitWorld('holder', ['Running']);
    await s.apply(worldManifest('waiter', shWorld(['proj'], 'echo waited')));
    const w = await s.waitFor('waiter refused for room', async () => {
      const x = await s.get('world', 'waiter', 'default');
      return x?.status?.admission?.outcome === 'RESOURCES_UNAVAILABLE' ? x : undefined;
    });
    assert.equal(w.status.phase, 'Pending');

    const risen = await waitFor('Prometheus to see the refusal', async () => {
      const v = await scalar(prom, unavailable);
      return v !== undefined && v > start.v ? { v } : undefined;
    });
    assert.ok(risen.v >= 1);
    await waitFor('Prometheus to see the one reservation', async () => (await scalar(prom, 'worldline_admission_reserved{job="node-agent",resource="worlds"}')) === 1);
    const admitted = await scalar(prom, 'sum(worldline_admission_decisions_total{job="node-agent",outcome="ADMITTED"})');
    assert.equal(admitted, 1);

    // Releasing the holder admits the waiter; Prometheus sees the ADMITTED count rise too.
    await kc(s.cp, ['delete', 'world', 'holder', '-n', 'default', '--wait=false']);
    await s.waitWorld('waiter', ['Captured']);
    await waitFor('Prometheus to see the second admission', async () => (await scalar(prom, 'sum(worldline_admission_decisions_total{job="node-agent",outcome="ADMITTED"})')) === 2);
  });

  test("what setting favordynmods found at the agent's start is one series at 1, read back from the kernel", async () => {
    // The agent runs on this host, in its cgroup namespace: the option was set (enabled) or found set (already).
    const on = await waitFor('worldline_cgroup_favor_dynmods scraped', async () => {
      const r = await prom.query('worldline_cgroup_favor_dynmods{job="node-agent"} == 1');
      return r.length > 0 ? r : undefined;
    });
    assert.equal(on.length, 1, JSON.stringify(on));
    const state = on[0]!.metric['state'];
    const shown = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')).find((m) => m.fsType === 'cgroup2');
    assert.ok(shown, 'this host has a cgroup2 mount');
    assert.ok(state === 'enabled' || state === 'already', `state ${String(state)}`);
    assert.ok(shown.superOptions.includes('favordynmods'), `the kernel shows the option the gauge says is set: ${shown.superOptions.join(',')}`);
    // Every other state is a series at 0.
    const zeros = (await prom.query('worldline_cgroup_favor_dynmods{job="node-agent"} == 0')).map((r) => r.metric['state']).sort();
    assert.deepEqual(zeros, ['already', 'enabled', 'no-cgroup2', 'off', 'refused'].filter((x) => x !== state));
  });

  test('the controller\'s reconciles are scraped', async () => {
    const v = await waitFor('worldline_reconcile_total from the controller', async () => {
      const x = await scalar(prom, 'sum(worldline_reconcile_total{job="controller",kind="World"})');
      return x !== undefined && x > 0 ? { x } : undefined;
    });
    assert.ok(v.x > 0);
    const up = await prom.query('up');
    assert.deepEqual(up.map((r) => `${r.metric.job}=${r.value[1]}`).sort(), ['controller=1', 'node-agent=1']);
  });
});
