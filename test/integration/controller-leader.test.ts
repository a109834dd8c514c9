// Two controller replicas on a real control plane: exactly one reconciles; when the leader is killed
// outright, the standby takes the Lease within its duration and carries on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { getJson, kc, waitFor } from '../support/wait.js';

const LEASE_SECONDS = 6;
let cp: ControlPlane;
const procs: ControllerProcess[] = [];

before(async () => {
  cp = await startControlPlane({ crdDir: 'crds' });
  await kc(cp, ['create', 'namespace', 'worldline-system']);
  await kc(cp, ['create', 'namespace', 'le']);
});
after(async () => {
  for (const p of procs) await p.kill('SIGKILL');
  await cp?.stop();
});

function reconciled(metrics: string): number {
  let n = 0;
  for (const m of metrics.matchAll(/^worldline_reconcile_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}
const world = (name: string): string =>
  `apiVersion: worldline.dev/v1alpha1\nkind: World\nmetadata: {name: ${name}, namespace: le}\nspec: {roots: [missing], agent: {command: [/bin/true]}}\n`;

test('one leader reconciles, the standby does not; killing the leader hands over within the lease duration', async () => {
  const a = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'replica-a', leaseDurationSeconds: LEASE_SECONDS });
  procs.push(a);
  await a.waitForLog((r) => r.msg === 'became leader');
  const b = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'replica-b', leaseDurationSeconds: LEASE_SECONDS });
  procs.push(b);

  await kc(cp, ['apply', '-f', '-'], world('one'));
  await waitFor('world one reconciled', async () => (await getJson(cp, ['get', 'world', 'one', '-n', 'le']))?.status?.reason === 'ROOT_NOT_FOUND');
  const lease = await getJson(cp, ['get', 'lease', 'worldline-controller', '-n', 'worldline-system']);
  assert.equal(lease?.spec.holderIdentity, 'replica-a');
  assert.ok(reconciled(await a.metrics()) > 0, 'the leader reconciled');
  assert.equal(reconciled(await b.metrics()), 0, 'the standby reconciled nothing');
  assert.equal(b.logs.some((r) => r.msg === 'became leader'), false);

  const killedAt = Date.now();
  await a.kill('SIGKILL');
  await b.waitForLog((r) => r.msg === 'became leader', (LEASE_SECONDS + 10) * 1000);
  const handover = (Date.now() - killedAt) / 1000;
  // Lease duration plus one retry period and scheduling slack.
  assert.ok(handover <= LEASE_SECONDS + 4, `standby took over after ${handover}s`);
  await kc(cp, ['apply', '-f', '-'], world('two'));
  await waitFor('world two reconciled by the new leader', async () => (await getJson(cp, ['get', 'world', 'two', '-n', 'le']))?.status?.reason === 'ROOT_NOT_FOUND');
  const after2 = await getJson(cp, ['get', 'lease', 'worldline-controller', '-n', 'worldline-system']);
  assert.equal(after2?.spec.holderIdentity, 'replica-b');
});
