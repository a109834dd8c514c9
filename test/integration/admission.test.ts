// Resource admission on a real stack (kube-apiserver + etcd, controller, node-agent as root): Worlds fill
// the node's ceilings and the next one waits (Pending, RESOURCES_UNAVAILABLE) until a reservation is
// released; a request over the per-world limit is refused; a malformed ceiling refuses every World by
// name; an unmeasurable node is RESOURCE_STATE_UNKNOWN, never "full"; 50 Worlds created at once never
// hold more than the ceilings; an agent restart keeps running Worlds and exactly their reservations.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { metricSum } from '../support/metrics-text.js';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, describeRun, FINAL_PHASES, hostProcesses, outputOf, runWorld, shWorld, worldManifest, type WorldSpec } from '../support/worlds.js';
import { getJson, kc, waitFor } from '../support/wait.js';

const OWNER = 1000;
const MiB = 2 ** 20;
/** Three worlds of 64Mi fill the node: by count and by memory alike. */
const CEILING_WORLDS = 3;
const CEILING_MEMORY = 3 * 64 * MiB;
const BASE_ARGS = [
  '--node-worlds', String(CEILING_WORLDS),
  '--node-memory', '192Mi',
  '--node-cpu', '64',
  '--world-memory', '128Mi',
  '--world-default-memory', '64Mi',
  '--world-default-cpu', '100m',
];

/** A world that sleeps (long) with a wall time; `tag` makes its sleep findable among host processes. */
function sleeper(tag: string): WorldSpec {
  return shWorld(['proj'], `echo started; sleep ${tag}; echo woke`, { resources: { wallTime: '5m' } });
}

async function deleteWorld(s: Stack, name: string): Promise<void> {
  await kc(s.cp, ['delete', 'world', name, '-n', 'default', '--wait=false']);
}

async function waitGone(s: Stack, name: string): Promise<void> {
  await s.waitFor(`World ${name} gone`, async () => (await s.get('world', name, 'default')) === undefined, 60_000);
}

async function reserved(s: Stack, resource: 'worlds' | 'memory_bytes'): Promise<number> {
  return metricSum(await s.agent.metrics(), 'worldline_admission_reserved', { resource });
}

async function decisions(s: Stack, outcome: string): Promise<number> {
  return metricSum(await s.agent.metrics(), 'worldline_admission_decisions_total', { stage: 'agent', outcome });
}

describe('resource admission on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'admission-node', agentArgs: BASE_ARGS });
    await adoptSmallRoot(s, 'proj', OWNER);
  });

  after(async () => {
    await s?.stop();
  });

  test('a request over the per-world limit is Refused with RESOURCE_LIMIT_EXCEEDED and never runs', async () => {
    const r = await runWorld(s, 'too-big', shWorld(['proj'], 'echo RAN', { resources: { memory: '256Mi' } }));
    assert.equal(r.status.phase, 'Refused', describeRun(r));
    assert.equal(r.status.reason, 'RESOURCE_LIMIT_EXCEEDED');
    assert.equal(r.status.admission?.outcome, 'RESOURCE_LIMIT_EXCEEDED');
    assert.match(r.status.admission.message, /memoryBytes .* above the limit/);
    assert.doesNotMatch(r.output, /RAN/);
    // A refusal is final: it neither turns back into Pending nor gets retried into a run.
    await sleep(3000);
    const again = await s.get('world', 'too-big', 'default');
    assert.equal(again?.status?.phase, 'Refused', JSON.stringify(again?.status));
    assert.equal(again?.status?.reason, 'RESOURCE_LIMIT_EXCEEDED');
    assert.equal(again?.status?.candidate, undefined);
    assert.equal(await reserved(s, 'worlds'), 0);
  });

  test('a full node makes the next World wait (Pending, RESOURCES_UNAVAILABLE); deleting one admits it', async () => {
    const names = ['fill-1', 'fill-2', 'fill-3'];
    for (const [i, n] of names.entries()) await s.apply(worldManifest(n, sleeper(`29${i}.25`)));
    for (const n of names) await s.waitWorld(n, ['Running']);
    assert.equal(await reserved(s, 'worlds'), CEILING_WORLDS);
    assert.equal(await reserved(s, 'memory_bytes'), CEILING_MEMORY);
    const unavailableBefore = await decisions(s, 'RESOURCES_UNAVAILABLE');

    await s.apply(worldManifest('fill-4', sleeper('293.25')));
    const waiting = await s.waitFor('fill-4 waiting for room', async () => {
      const w = await s.get('world', 'fill-4', 'default');
      return w?.status?.admission?.outcome === 'RESOURCES_UNAVAILABLE' ? w : undefined;
    });
    assert.equal(waiting.status.phase, 'Pending', JSON.stringify(waiting.status));
    assert.match(waiting.status.admission.message, /worlds: asks 1 reservation, 0 reservations left of the node ceiling 3 reservations/);
    assert.ok((await decisions(s, 'RESOURCES_UNAVAILABLE')) > unavailableBefore, 'the refusal is not counted');
    // Still waiting a while later: not refused, not run, nothing reserved for it.
    await sleep(2000);
    const still = await s.get('world', 'fill-4', 'default');
    assert.equal(still?.status?.phase, 'Pending', JSON.stringify(still?.status));
    assert.equal(still?.status?.admission?.outcome, 'RESOURCES_UNAVAILABLE');
    assert.equal(still?.status?.reason, 'RESOURCES_UNAVAILABLE');
    assert.equal(await reserved(s, 'worlds'), CEILING_WORLDS);

    const deletedAt = Date.now();
    await deleteWorld(s, 'fill-1');
    const admitted = await s.waitWorld('fill-4', ['Admitted', 'Running'], 'default', 20_000);
    // Woken by the release, not by the retry backoff (which by now is several seconds).
    assert.ok(Date.now() - deletedAt < 15_000, `fill-4 admitted only after ${Date.now() - deletedAt} ms`);
    assert.equal(admitted.status.admission.outcome, 'ADMITTED');
    await s.waitWorld('fill-4', ['Running']);
    assert.equal(await reserved(s, 'worlds'), CEILING_WORLDS);

    for (const n of ['fill-2', 'fill-3', 'fill-4']) await deleteWorld(s, n);
    for (const n of names.concat('fill-4')) await waitGone(s, n);
    await s.waitFor('no reservation left', async () => (await reserved(s, 'worlds')) === 0 && (await reserved(s, 'memory_bytes')) === 0, 10_000);
  });

  test('50 Worlds created at once never reserve more than the ceilings, and all of them run', async () => {
    const N = 50;
    const names = Array.from({ length: N }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
    const items = names.map((n) => {
      const m = JSON.parse(worldManifest(n, shWorld(['proj'], `sleep 0.3; echo done-${n}`))) as Record<string, any>;
      m.metadata.labels = { 'test.worldline.dev/batch': 'burst' };
      return m;
    });
    const unavailableBefore = await decisions(s, 'RESOURCES_UNAVAILABLE');
    const samples: { worlds: number; memory: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const text = await s.agent.metrics();
        samples.push({ worlds: metricSum(text, 'worldline_admission_reserved', { resource: 'worlds' }), memory: metricSum(text, 'worldline_admission_reserved', { resource: 'memory_bytes' }) });
        await sleep(25);
      }
    })();
    try {
      await s.apply(JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      await waitFor(`all ${N} Worlds ended`, async () => {
        const list = await getJson<{ items: Record<string, any>[] }>(s.cp, ['get', 'worlds', '-n', 'default', '-l', 'test.worldline.dev/batch=burst']);
        return (list?.items ?? []).filter((w) => FINAL_PHASES.includes(w.status?.phase)).length === N ? list : undefined;
      }, 240_000);
    } finally {
      sampling = false;
      await sampler;
    }
    const list = await getJson<{ items: Record<string, any>[] }>(s.cp, ['get', 'worlds', '-n', 'default', '-l', 'test.worldline.dev/batch=burst']);
    for (const w of list?.items ?? []) {
      assert.equal(w.status.phase, 'Captured', `${w.metadata.name}: ${JSON.stringify(w.status)}`);
      assert.match(outputOf(s, w.metadata.uid), new RegExp(`^done-${w.metadata.name}$`, 'm'));
    }
    assert.ok(samples.length > 20, `only ${samples.length} samples`);
    const over = samples.filter((x) => x.worlds > CEILING_WORLDS || x.memory > CEILING_MEMORY);
    assert.deepEqual(over, [], 'a sample showed more reserved than the ceilings');
    assert.equal(Math.max(...samples.map((x) => x.worlds)), CEILING_WORLDS, 'the burst never filled the node, so the ceiling was not exercised');
    assert.ok((await decisions(s, 'RESOURCES_UNAVAILABLE')) > unavailableBefore, 'no World of the burst ever had to wait');
    await s.waitFor('no reservation left', async () => (await reserved(s, 'worlds')) === 0, 10_000);
    await kc(s.cp, ['delete', 'worlds', '-n', 'default', '-l', 'test.worldline.dev/batch=burst', '--wait=false']);
  });

  test('an agent restart while Worlds run keeps them and their reservations; deleting them releases both, and admits again', async () => {
    const tags = ['296.75', '297.75'];
    await s.apply(worldManifest('restart-1', sleeper(tags[0]!)));
    await s.apply(worldManifest('restart-2', sleeper(tags[1]!)));
    await s.waitWorld('restart-1', ['Running']);
    await s.waitWorld('restart-2', ['Running']);
    assert.equal(await reserved(s, 'worlds'), 2);
    const sleeping = (): number => hostProcesses().filter((p) => p.cmdline[0] === 'sleep' && tags.includes(p.cmdline[1] ?? '')).length;
    // Running is reported at the exec of the World's shell; its sleep is forked a moment later.
    await s.waitFor('both workloads sleeping', async () => sleeping() === 2, 30_000);

    // kill -9: each World's supervisor keeps it running; the new agent re-attaches and keeps what it holds.
    await s.restartAgent();
    await s.waitFor('the new agent holds both reservations', async () => (await reserved(s, 'worlds')) === 2 && (await reserved(s, 'memory_bytes')) === 2 * 64 * MiB, 30_000);
    assert.equal(sleeping(), 2, 'a world\'s workload did not outlive its agent');
    for (const n of ['restart-1', 'restart-2']) {
      const w = await s.get('world', n, 'default');
      assert.equal(w?.status?.phase, 'Running', JSON.stringify(w?.status));
    }

    await deleteWorld(s, 'restart-1');
    await deleteWorld(s, 'restart-2');
    await waitGone(s, 'restart-1');
    await waitGone(s, 'restart-2');
    await s.waitFor('the deleted worlds\' workloads gone', async () => sleeping() === 0, 30_000);
    await s.waitFor('their reservations released', async () => (await reserved(s, 'worlds')) === 0 && (await reserved(s, 'memory_bytes')) === 0, 10_000);
    const r = await runWorld(s, 'after-restart', shWorld(['proj'], 'echo AFTER'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal(r.status.admission.outcome, 'ADMITTED');
    assert.match(r.output, /^AFTER$/m);
    await s.waitFor('its reservation released', async () => (await reserved(s, 'worlds')) === 0, 10_000);
  });

  test('a malformed ceiling (--node-memory lots) refuses every World with RESOURCE_POLICY_INVALID naming the field', async () => {
    const args = BASE_ARGS.map((a, i) => (BASE_ARGS[i - 1] === '--node-memory' ? 'lots' : a));
    await s.restartAgent({ agentArgs: args, signal: 'SIGTERM' });
    await s.agent.waitForLog((l) => /admission policy is invalid/.test(String(l.msg)) && l.field === 'node-memory');
    for (const n of ['bad-policy-1', 'bad-policy-2']) {
      const r = await runWorld(s, n, shWorld(['proj'], 'echo RAN'));
      assert.equal(r.status.phase, 'Refused', describeRun(r));
      assert.equal(r.status.reason, 'RESOURCE_POLICY_INVALID');
      assert.equal(r.status.admission.outcome, 'RESOURCE_POLICY_INVALID');
      assert.match(r.status.admission.message, /node-memory "lots"/);
      assert.doesNotMatch(r.output, /RAN/);
    }
    assert.equal(await decisions(s, 'RESOURCE_POLICY_INVALID'), 2);
    assert.equal(await decisions(s, 'ADMITTED'), 0);
  });

  test('an unreadable node state is RESOURCE_STATE_UNKNOWN (Pending), never RESOURCES_UNAVAILABLE; once readable the World runs', async () => {
    const emptyProc = mkdtempSync(join(s.scratch, 'empty-proc-'));
    await s.restartAgent({ agentArgs: [...BASE_ARGS, '--observe-proc-dir', emptyProc], signal: 'SIGTERM' });
    await s.apply(worldManifest('blind', shWorld(['proj'], 'echo RAN-BLIND')));
    const w = await s.waitFor('blind waiting on an unknown state', async () => {
      const x = await s.get('world', 'blind', 'default');
      return x?.status?.admission?.outcome === 'RESOURCE_STATE_UNKNOWN' ? x : undefined;
    });
    assert.equal(w.status.phase, 'Pending', JSON.stringify(w.status));
    assert.match(w.status.admission.message, /could not be measured \(memAvailableBytes, tasks, pidMax\)/);
    // Over several retries it stays unknown: never reported as a full node, never run.
    const deadline = Date.now() + 4000;
    while (Date.now() < deadline) {
      const x = await s.get('world', 'blind', 'default');
      assert.equal(x?.status?.phase, 'Pending', JSON.stringify(x?.status));
      assert.equal(x?.status?.admission?.outcome, 'RESOURCE_STATE_UNKNOWN');
      assert.equal(x?.status?.reason, 'RESOURCE_STATE_UNKNOWN');
      await sleep(250);
    }
    assert.ok((await decisions(s, 'RESOURCE_STATE_UNKNOWN')) >= 1);
    assert.equal(await decisions(s, 'RESOURCES_UNAVAILABLE'), 0);
    assert.equal(await reserved(s, 'worlds'), 0);
    assert.equal(outputOf(s, w.metadata.uid), '');

    await s.restartAgent({ agentArgs: BASE_ARGS, signal: 'SIGTERM' });
    const ran = await s.waitWorld('blind', FINAL_PHASES);
    assert.equal(ran.status.phase, 'Captured', JSON.stringify(ran.status));
    assert.match(outputOf(s, ran.metadata.uid), /^RAN-BLIND$/m);
  });
});
