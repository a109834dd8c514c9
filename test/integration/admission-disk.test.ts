// The disk dimension of admission on a real stack (kube-apiserver + etcd, controller, node-agent as root):
// a World asking more ephemeral storage than the store's filesystem has free waits by name (Pending,
// RESOURCES_UNAVAILABLE naming ephemeral_storage_bytes, "the kernel reports ... free"), as does one
// asking more than the node ceiling has left; the refusals are counted in worldline_admission_decisions_total
// and the ceiling is worldline_admission_capacity{resource="ephemeral_storage_bytes"}; a World that fits
// runs on a disk of its size (read back on status) and holds it in worldline_admission_reserved while it runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { statfsSync } from 'node:fs';
import { metricSum } from '../support/metrics-text.js';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, describeRun, runWorld, shWorld, worldManifest } from '../support/worlds.js';
import { kc } from '../support/wait.js';

const OWNER = 1000;
const MiB = 2 ** 20;
const PiB = 2 ** 50;
/** A ceiling far above any real disk, so a large request is refused by what the kernel measures. */
const NODE_DISK = 2 * PiB;
const BASE_ARGS = [
  '--node-ephemeral-storage', '2Pi',
  '--world-ephemeral-storage', '2Pi',
  '--world-default-ephemeral-storage', '16Mi',
  '--world-default-memory', '64Mi',
  '--world-default-cpu', '100m',
];

async function metric(s: Stack, name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await s.agent.metrics(), name, labels);
}

async function waitingFor(s: Stack, name: string): Promise<Record<string, any>> {
  return s.waitFor(`${name} waiting for disk`, async () => {
    const w = await s.get('world', name, 'default');
    return w?.status?.admission?.outcome === 'RESOURCES_UNAVAILABLE' ? w : undefined;
  });
}

describe('ephemeral storage admission on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'disk-node', agentArgs: BASE_ARGS });
    await adoptSmallRoot(s, 'proj', OWNER);
  });

  after(async () => {
    await s?.stop();
  });

  test('more ephemeral storage than the store has free waits by name on status, and the metrics show it', async () => {
    assert.equal(await metric(s, 'worldline_admission_capacity', { resource: 'ephemeral_storage_bytes' }), NODE_DISK);
    const before = await metric(s, 'worldline_admission_decisions_total', { stage: 'agent', outcome: 'RESOURCES_UNAVAILABLE' });
    const free = statfsSync(s.storeDir);
    const ask = '1Pi';
    assert.ok(free.bavail * free.bsize < PiB, 'this host has less than 1Pi free: the request must not fit');

    await s.apply(worldManifest('disk-too-big', shWorld(['proj'], 'echo RAN', { resources: { ephemeralStorage: ask } })));
    const w = await waitingFor(s, 'disk-too-big');
    assert.equal(w.status.phase, 'Pending', JSON.stringify(w.status));
    assert.equal(w.status.reason, 'RESOURCES_UNAVAILABLE');
    assert.match(w.status.admission.message, /ephemeral_storage_bytes: asks 1125899906842624 bytes .*, the kernel reports [0-9]+ bytes .* free \(short by/);
    assert.doesNotMatch(w.status.admission.message, /cpu_millis|memory_bytes|pids:|worlds:/, 'only the disk is short');
    assert.ok((await metric(s, 'worldline_admission_decisions_total', { stage: 'agent', outcome: 'RESOURCES_UNAVAILABLE' })) > before, 'the refusal is not counted');
    assert.equal(await metric(s, 'worldline_admission_reserved', { resource: 'ephemeral_storage_bytes' }), 0, 'nothing reserved for it');
    await kc(s.cp, ['delete', 'world', 'disk-too-big', '-n', 'default', '--wait=false']);
  });

  test('a World that fits runs on a disk of its size, read back on status, and reserves it while it runs', async () => {
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await metric(s, 'worldline_admission_reserved', { resource: 'ephemeral_storage_bytes' }));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    let r;
    try {
      r = await runWorld(s, 'disk-fits', shWorld(['proj'], 'sleep 1; df -k . | tail -n 1; echo done', { resources: { ephemeralStorage: '24Mi' } }));
    } finally {
      sampling = false;
      await sampler;
    }
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.status.admission.message, /ephemeral storage 25165824 bytes \(24\.0Mi\)/);
    assert.equal(r.status.isolation?.observation?.ephemeralStorage?.bytes, String(24 * MiB), JSON.stringify(r.status.isolation?.observation));
    assert.equal(peak, 24 * MiB, 'the run held its disk in the reservation gauge');
    assert.equal(await metric(s, 'worldline_admission_reserved', { resource: 'ephemeral_storage_bytes' }), 0);
  });
});
