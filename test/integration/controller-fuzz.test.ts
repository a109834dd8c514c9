// Property-based: whatever the API server lets through, the controller neither crashes nor leaves an
// accepted object without its status. fast-check generates Roots, Policies, Worlds, Checks and
// Collapses (valid and invalid); each is submitted to a real API server; the ones it accepts must
// each get the controller's condition while the controller process stays up.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { getJson, kc, waitFor } from '../support/wait.js';

let cp: ControlPlane;
let ctl: ControllerProcess;
before(async () => {
  cp = await startControlPlane({ crdDir: 'crds' });
  await kc(cp, ['create', 'namespace', 'worldline-system']);
  await kc(cp, ['create', 'namespace', 'fuzz']);
  ctl = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'fuzz' });
});
after(async () => {
  await ctl?.kill('SIGKILL');
  await cp?.stop();
});

const dns = fc.stringMatching(/^[a-z]([a-z0-9-]{0,8}[a-z0-9])?$/);
const weird = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('', '..', '/', 'a b', 'ü', '-x', 'a'.repeat(70)));
const name = fc.oneof({ weight: 4, arbitrary: dns }, { weight: 1, arbitrary: weird });
const path = fc.oneof(fc.constantFrom('/srv/a', '/srv/a/b', '/srv/b', '/', 'relative', '/srv/../etc', '/srv//x'), fc.string({ maxLength: 10 }).map((s) => `/srv/${s}`));
const node = fc.constantFrom('n1', 'n2', 'N_BAD', '');
const level = fc.constantFrom('host-yolo', 'process-limited', 'os-sandboxed', 'vm-isolated', 'super-safe');
const control = fc.constantFrom('read-only-inputs', 'network-denied', 'resource-limits', 'wall-time-limit', 'bogus');
const quantity = fc.oneof(fc.constantFrom('1', '500m', '2Gi', '1.5', 'lots', '-1'), fc.integer({ min: -2, max: 1 << 20 }));
const duration = fc.constantFrom('10s', '1h30m', '5m', 'soon', '10', '');

const root = fc.record({ kind: fc.constant('Root'), name, spec: fc.record({ nodeName: node, path }, { requiredKeys: [] }) });
const policy = fc.record({
  kind: fc.constant('Policy'),
  name,
  spec: fc.record({
    roots: fc.array(name, { maxLength: 3 }),
    checks: fc.array(fc.record({ name, command: fc.array(weird, { maxLength: 3 }), verifiers: fc.array(weird, { maxLength: 2 }), timeout: duration, profile: fc.constantFrom('legacy', 'private-evaluator-v1', 'other') }, { requiredKeys: ['name', 'command'] }), { maxLength: 3 }),
  }, { requiredKeys: [] }),
});
const world = fc.record({
  kind: fc.constant('World'),
  name,
  spec: fc.record({
    roots: fc.array(name, { maxLength: 3 }),
    agent: fc.record({ command: fc.array(weird, { maxLength: 3 }), workingDir: path, runAsUser: fc.integer({ min: -1, max: 70000 }) }, { requiredKeys: ['command'] }),
    network: fc.record({ policy: fc.constantFrom('None', 'Allowlist', 'Shared', 'Open'), allow: fc.array(fc.constantFrom('example.com:443', 'x:0', 'bad'), { maxLength: 2 }) }, { requiredKeys: [] }),
    resources: fc.record({ cpu: quantity, memory: quantity, pids: fc.integer({ min: -1, max: 100000 }), wallTime: duration }, { requiredKeys: [] }),
    isolation: fc.record({ minimumLevel: level, controls: fc.array(control, { maxLength: 3 }) }, { requiredKeys: [] }),
  }, { requiredKeys: [] }),
});
const dependent = fc.record({ kind: fc.constantFrom('Check', 'Collapse'), name, spec: fc.record({ worldRef: name, name, mode: fc.constantFrom('Candidate', 'CheckpointReturn', 'Sideways') }, { requiredKeys: [] }) });
const anyObject = fc.oneof(root, policy, world, dependent);

test('the controller survives and reconciles every object the API server accepts', async () => {
  const samples = fc.sample(anyObject, { numRuns: 120, seed: 20261130 });
  const accepted: { kind: string; name: string; namespaced: boolean }[] = [];
  let rejected = 0;
  for (const s of samples) {
    const namespaced = s.kind !== 'Root' && s.kind !== 'Policy';
    const spec = { ...(s.spec as Record<string, unknown>) };
    if (s.kind === 'Check') delete spec.mode;
    if (s.kind === 'Collapse') delete spec.name;
    const obj = { apiVersion: 'worldline.dev/v1alpha1', kind: s.kind, metadata: { name: s.name, ...(namespaced ? { namespace: 'fuzz' } : {}) }, spec };
    const r = await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    if (r.code === 0) accepted.push({ kind: s.kind, name: s.name, namespaced });
    else rejected++;
  }
  // The generator must exercise both sides of the schema for this test to mean anything.
  assert.ok(accepted.length >= 20, `only ${accepted.length} objects were accepted`);
  assert.ok(rejected >= 20, `only ${rejected} objects were rejected`);
  const conditionFor: Record<string, string> = { Root: 'Accepted', Policy: 'Accepted', World: 'Accepted', Check: 'WorldFound', Collapse: 'WorldFound' };
  for (const a of accepted) {
    await waitFor(`${a.kind}/${a.name} reconciled`, async () => {
      const o = await getJson(cp, ['get', a.kind.toLowerCase(), a.name, ...(a.namespaced ? ['-n', 'fuzz'] : [])]);
      return (o?.status?.conditions as { type: string }[] | undefined)?.some((c) => c.type === conditionFor[a.kind]);
    }, 30_000);
  }
  assert.equal(ctl.logs.some((l) => l.msg === 'fatal'), false);
  const health = await fetch(`${ctl.metricsUrl}/healthz`);
  assert.equal(health.status, 200, 'controller still serving');
  assert.doesNotMatch(await ctl.metrics(), /worldline_reconcile_total\{[^}]*result="terminal"[^}]*\} [1-9]/);
});
