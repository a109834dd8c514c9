import { test } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import { loadKubeConfig } from '../../kube/client.js';
import { LeaderElector } from '../../kube/leader-election.js';
import { startControlPlane } from '../../scripts/controlplane/harness.js';
import { startStallProxy } from '../support/stall-proxy.js';

async function until(cond: () => boolean, what: string, ms: number): Promise<number> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - start;
}

const timing = { leaseDurationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 1 };

test('leader election on a Lease: one leader; hand-over on stop and on crash', async (t) => {
  const cp = await startControlPlane({ quiet: true });
  t.after(() => cp.stop());
  const created = await cp.kubectl(['create', 'namespace', 'le']);
  assert.equal(created.code, 0, created.stderr);
  const kubeConfig = loadKubeConfig({ kubeconfig: cp.kubeconfigPath });

  const log: string[] = [];
  const make = (identity: string, releaseOnStop = true) => {
    const e = new LeaderElector({ kubeConfig, namespace: 'le', name: 'worldline-controller', identity, releaseOnStop, ...timing });
    const signals: AbortSignal[] = [];
    const done = e.run({
      onStartedLeading: (signal) => { signals.push(signal); log.push(`${identity} started`); },
      onStoppedLeading: () => log.push(`${identity} stopped`),
    });
    return { e, done, signals };
  };
  const holder = async () => {
    const r = await cp.kubectl(['get', 'lease', '-n', 'le', 'worldline-controller', '-o', 'jsonpath={.spec.holderIdentity}']);
    return r.stdout;
  };

  const a = make('a');
  const b = make('b');
  await until(() => a.e.isLeader() || b.e.isLeader(), 'a leader', 10_000);
  await new Promise((r) => setTimeout(r, 2500)); // a few renew periods
  assert.equal(Number(a.e.isLeader()) + Number(b.e.isLeader()), 1, 'exactly one leader');
  const [first, second] = a.e.isLeader() ? [a, b] : [b, a];
  const firstId = first === a ? 'a' : 'b';
  const secondId = first === a ? 'b' : 'a';
  assert.equal(await holder(), firstId);

  // Graceful stop releases the lease: the standby takes over within about one retry period.
  await first.e.stop();
  await first.done;
  assert.equal(first.signals[0]?.aborted, true, "the old leader's signal is aborted");
  assert.ok(log.includes(`${firstId} stopped`));
  const handover = await until(() => second.e.isLeader(), 'standby to lead after release', 4000);
  assert.ok(handover < 3000, `hand-over after release took ${handover}ms`);
  assert.equal(await holder(), secondId);

  await second.e.stop();
  await second.done;
  assert.equal(await holder(), '', 'released on graceful stop');

  // A crashed leader (modelled by stopping without releasing): a candidate takes over only once the lease
  // expires, i.e. within leaseDuration + a retry period.
  const crashy = make('crashy', false);
  await until(() => crashy.e.isLeader(), 'crashy to lead', 4000);
  const c = make('c');
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(c.e.isLeader(), false, 'no takeover while the lease is being renewed');
  await crashy.e.stop();
  await crashy.done;
  assert.equal(await holder(), 'crashy', 'not released');
  const takeover = await until(() => c.e.isLeader(), 'takeover after expiry', (timing.leaseDurationSeconds + 3) * 1000);
  assert.ok(takeover >= 2000, `takeover waited for expiry (${takeover}ms)`);
  assert.equal(await holder(), 'c');
  await c.e.stop();
  await c.done;
});

test('a renewal that gets no answer is retried within the renew deadline: the leader keeps its lease', async (t) => {
  const cp = await startControlPlane({ quiet: true });
  t.after(() => cp.stop());
  const created = await cp.kubectl(['create', 'namespace', 'le']);
  assert.equal(created.code, 0, created.stderr);
  // The elector talks to the API server through a relay that can stop answering.
  const server = new URL(cp.server);
  const proxy = await startStallProxy({ host: server.hostname, port: Number(server.port) });
  t.after(() => proxy.close());
  const relayed = join(mkdtempSync(join(tmpdir(), 'wl-le-')), 'kubeconfig');
  const original = readFileSync(cp.kubeconfigPath, 'utf8');
  assert.ok(original.includes(cp.server), 'the kubeconfig names the API server');
  writeFileSync(relayed, original.replaceAll(cp.server, `https://${proxy.address}`));
  t.after(() => rmSync(dirname(relayed), { recursive: true, force: true }));
  const kubeConfig = loadKubeConfig({ kubeconfig: relayed });
  const log: string[] = [];
  const e = new LeaderElector({ kubeConfig, namespace: 'le', name: 'stalled', identity: 'steady', ...timing });
  const done = e.run({ onStartedLeading: () => void log.push('started'), onStoppedLeading: () => void log.push('stopped') });
  await until(() => e.isLeader(), 'steady to lead', 10_000);
  const renewTime = async (): Promise<number> => Date.parse((await cp.kubectl(['get', 'lease', '-n', 'le', 'stalled', '-o', 'jsonpath={.spec.renewTime}'])).stdout);
  await new Promise((r) => setTimeout(r, 1500)); // a renewal or two through the relay
  // Nothing answers for 1.8 s, more than half the 3 s renew deadline: a request waiting out the whole
  // deadline would give the lease up; a third of it per request leaves room for the retry that succeeds.
  const before = await renewTime();
  proxy.stall(1800);
  await new Promise((r) => setTimeout(r, 1900));
  assert.ok(proxy.dropped() > 0, 'the relay dropped requests while stalled');
  const after = await waitForRenewal(renewTime, before, 6000);
  assert.ok(after > before, 'renewals resumed after the stall');
  assert.equal(e.isLeader(), true, 'still the leader');
  assert.deepEqual(log, ['started'], 'leadership was never given up');
  await e.stop();
  await done;
});

async function waitForRenewal(read: () => Promise<number>, after: number, ms: number): Promise<number> {
  const start = Date.now();
  for (;;) {
    const t = await read();
    if (t > after) return t;
    if (Date.now() - start > ms) return t;
    await new Promise((r) => setTimeout(r, 200));
  }
}
