// The chart's RBAC and admission policies are enough for the real processes, not only least: the chart is
// installed with `helm install` on the real test control plane, and the real controller and node-agent
// (dist/*/main.js, the agent as root on a temporary store) run with kubeconfigs holding only their chart
// service accounts' tokens — the agent's bound to a Pod on its node, as the kubelet would mount it. Then a
// Root is adopted, a World reading a Secret credential runs and is captured, its Collapse commits, the
// receipts key is published, the controller records the node's ledger head, a user with the chart's worldline-view role reads the World's diff through
// the view API, and the World is deleted (the agent takes its finalizer off) — and neither process logs
// a single refusal from the API server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, startNodeAgent, type ControllerProcess } from '../support/controller-process.js';
import { CHART_DIR, helm } from '../support/helm.js';
import { requireRoot } from '../support/require-root.js';
import { removeScratch } from '../support/stack.js';
import { createTestHostAddress, type TestHostAddress } from '../support/test-host-address.js';
import { secretToDir, viewEndpointsYaml, waitViewAvailable } from '../support/view-endpoints.js';
import { getJson, kc, waitFor } from '../support/wait.js';

const NS = 'worldline-system';
const TEAM = 'team';
const NODE = 'node-1';
const SECRET_VALUE = 'token-from-a-secret';

let cp: ControlPlane;
let scratch: string;
let controller: ControllerProcess;
let agent: ControllerProcess;
let addr: TestHostAddress | undefined;

async function token(sa: string, boundObjectRef?: Record<string, string>): Promise<string> {
  const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600, ...(boundObjectRef ? { boundObjectRef } : {}) } });
  const out = await kc(cp, ['create', '--raw', `/api/v1/namespaces/${NS}/serviceaccounts/${sa}/token`, '-f', '-'], body);
  return (JSON.parse(out) as { status: { token: string } }).status.token;
}

/** A kubeconfig that authenticates with nothing but `tok`. */
function kubeconfigWithToken(file: string, tok: string): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cp', cluster: { server: cp.server, 'certificate-authority': cp.tls.caFile } }],
    users: [{ name: 'sa', user: { token: tok } }],
    contexts: [{ name: 'cp', context: { cluster: 'cp', user: 'sa' } }],
    'current-context': 'cp',
  };
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

/** Log records that show the API server refusing the process (403, Forbidden, a policy denial). */
function refusals(p: ControllerProcess): Record<string, unknown>[] {
  return p.logs.filter((r) => /\b403\b|forbidden|Forbidden|ValidatingAdmissionPolicy/.test(JSON.stringify(r)));
}

before(async () => {
  requireRoot('the chart RBAC test with real processes (the node-agent mounts and creates namespaces)');
  scratch = mkdtempSync(join(tmpdir(), 'worldline-chart-procs-'));
  cp = await startControlPlane({ crdDir: join(CHART_DIR, 'crds'), quiet: true });
  const installed = await helm(['install', 'worldline', CHART_DIR, '--namespace', NS, '--create-namespace', '--kubeconfig', cp.kubeconfigPath]);
  if (installed.code !== 0) throw new Error(`helm install failed (${installed.code}):\n${installed.stderr}`);
  await kc(cp, ['create', 'namespace', TEAM]);
  await kc(cp, ['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }));
  const pod = JSON.parse(await kc(cp, ['create', '-o', 'json', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'node-agent-1', namespace: NS },
    spec: { nodeName: NODE, serviceAccountName: 'worldline-node-agent', containers: [{ name: 'node-agent', image: 'worldline.local/worldline:test' }] },
  }))) as { metadata: { name: string; uid: string } };
  const agentKc = kubeconfigWithToken(join(scratch, 'node-agent.kubeconfig'), await token('worldline-node-agent', { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid }));
  const controllerKc = kubeconfigWithToken(join(scratch, 'controller.kubeconfig'), await token('worldline-controller'));

  // The view path with the chart's own certificates, as the pods mount them; the controller listens on
  // an address of the test's own, which the chart's Service gets as its endpoint.
  addr = createTestHostAddress();
  const dir = (secret: string) => secretToDir(cp, NS, secret, join(scratch, secret));
  const [serving, controllerLink, agentLink] = await Promise.all([dir('worldline-view-serving'), dir('worldline-link-controller'), dir('worldline-link-node-agent')]);
  controller = await startController({ kubeconfig: controllerKc, identity: 'chart-controller', namespace: NS, extraArgs: ['--view-tls-dir', serving, '--link-tls-dir', controllerLink, '--view-bind', `${addr.host}:0`] });
  agent = await startNodeAgent({ kubeconfig: agentKc, nodeName: NODE, storeDir: join(scratch, 'store'), namespace: NS, extraArgs: ['--link-tls-dir', agentLink, '--view-bind', '127.0.0.1:0', '--view-address', '127.0.0.1'] });
  await agent.waitForLog((r) => r.msg === 'node-agent started', 60_000);
  const listening = await controller.waitForLog((r) => r.msg === 'view API listening', 60_000);
  await kc(cp, ['apply', '-f', '-'], viewEndpointsYaml(NS, 'worldline-view', addr.host, Number(listening['port'])));
  await waitViewAvailable(cp);
});

after(async () => {
  await agent?.kill('SIGTERM');
  await controller?.kill('SIGTERM');
  await cp?.stop();
  addr?.remove();
  if (scratch) await removeScratch(scratch);
});

void test('the controller and node-agent do their whole job with only the chart RBAC, through the node policy', async () => {
  // A Root on the agent's node: adoption writes its status.
  const rootPath = join(scratch, 'repo');
  mkdirSync(rootPath, { mode: 0o755 });
  writeFileSync(join(rootPath, 'README'), 'hello\n');
  chownSync(rootPath, 1000, 1000);
  chownSync(join(rootPath, 'README'), 1000, 1000);
  await kc(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Root', metadata: { name: 'repo' }, spec: { nodeName: NODE, path: rootPath } }));
  const root = await waitFor('Root repo Ready', async () => {
    const r = await getJson(cp, ['get', 'root', 'repo']);
    return r?.status?.phase === 'Ready' || r?.status?.phase === 'Broken' ? r : undefined;
  }, 60_000);
  assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));

  // A World that reads a credential from a Secret in its namespace (the agent's get on secrets).
  await kc(cp, ['-n', TEAM, 'create', 'secret', 'generic', 'agent-token', `--from-literal=token=${SECRET_VALUE}`]);
  await kc(cp, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'World',
    metadata: { name: 'w1', namespace: TEAM },
    spec: { roots: ['repo'], agent: { command: ['/bin/sh', '-c', 'cat /run/worldline/token > token.txt'], credentials: { secretName: 'agent-token', key: 'token', path: '/run/worldline/token' } } },
  }));
  const world = await waitFor('World w1 in a final phase', async () => {
    const w = await getJson(cp, ['get', 'world', 'w1', '-n', TEAM]);
    return ['Captured', 'Failed', 'Refused'].includes(w?.status?.phase) ? w : undefined;
  }, 90_000);
  assert.equal(world.status.phase, 'Captured', JSON.stringify(world.status));
  assert.equal(world.status.nodeName, NODE);
  assert.ok(world.metadata.finalizers.includes('worldline.dev/node-cleanup'), 'the controller put its finalizer on');

  // A user bound to the chart's worldline-view role reads its diff through the API server: the
  // controller's access reviews, its read of the request-header rules and of the node's Lease, and the
  // node link all run on the chart's RBAC and certificates.
  await kc(cp, ['-n', TEAM, 'create', 'rolebinding', 'dana-views', '--clusterrole=worldline-view', '--user=dana']);
  const diff = await cp.kubectl(['get', '--raw', `/apis/view.worldline.dev/v1alpha1/namespaces/${TEAM}/worlds/w1/diff?format=name-only`, '--as=dana']);
  assert.equal(diff.code, 0, diff.stderr);
  assert.equal(diff.stdout, 'repo/token.txt\n');

  // Its Collapse commits on the node: the host path shows the change; the receipt is in the status.
  await kc(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name: 'c1', namespace: TEAM }, spec: { worldRef: 'w1', mode: 'Candidate' } }));
  const collapse = await waitFor('Collapse c1 Committed or Denied', async () => {
    const c = await getJson(cp, ['get', 'collapse', 'c1', '-n', TEAM]);
    return c?.status?.phase === 'Committed' || c?.status?.phase === 'Denied' ? c : undefined;
  }, 60_000);
  assert.equal(collapse.status.phase, 'Committed', JSON.stringify(collapse.status));
  assert.equal(readFileSync(join(rootPath, 'token.txt'), 'utf8'), SECRET_VALUE);

  // Its heartbeat Lease, its receipts key and the controller's leader Lease exist, written under the chart's names.
  const leases = await getJson<{ items: { metadata: { name: string } }[] }>(cp, ['get', 'leases', '-n', NS]);
  assert.deepEqual(leases?.items.map((l) => l.metadata.name).sort(), ['worldline-controller', `worldline-node-${NODE}`]);
  const key = await getJson(cp, ['get', 'configmap', `worldline-receipts-${NODE}`, '-n', NS]);
  assert.match(String(key?.data?.['public-key.pem']), /BEGIN PUBLIC KEY/);
  // The controller recorded the node's ledger head with the chart's Role (ConfigMap worldline-ledger-heads).
  const heads = await waitFor('the ledger head of node-1 recorded', async () => {
    const cm = await getJson(cp, ['get', 'configmap', 'worldline-ledger-heads', '-n', NS]);
    return typeof cm?.data?.[NODE] === 'string' ? cm : undefined;
  }, 30_000);
  assert.equal(JSON.parse(heads.data[NODE] as string).receipt, collapse.status.receipt.id);

  // Deleting the World: the agent cleans the node and takes its finalizer off.
  await kc(cp, ['-n', TEAM, 'delete', 'world', 'w1', '--wait=false']);
  await waitFor('World w1 gone', async () => (await getJson(cp, ['get', 'world', 'w1', '-n', TEAM])) === undefined, 60_000);

  assert.deepEqual(refusals(controller), [], 'the controller was refused by the API server');
  assert.deepEqual(refusals(agent), [], 'the node-agent was refused by the API server');
});
