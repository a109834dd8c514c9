// The chart's RBAC and ValidatingAdmissionPolicy on the real test control plane (kube-apiserver + etcd,
// --authorization-mode=RBAC): the CRDs from charts/worldline/crds/ are applied and the chart is installed
// with `helm install` (so the API server accepts every object); two Node objects and a node-agent Pod bound to
// each (spec.nodeName set; no kubelet runs), and node-agent tokens bound to those Pods by the TokenRequest
// API. Then: node A's token writes the status of objects bound to node A and is refused, by the policy and
// with its message, on node B's; a token with no node is refused; the user roles worldline-view and
// worldline-edit grant what they say and nothing more.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { ApiError } from '../../kube/api-error.js';
import { httpClientFor, type KubeHttpClient } from '../../kube/http.js';
import { APPLY_PATCH_CONTENT_TYPE } from '../../kube/status-writer.js';
import { CHART_DIR, findObject, helm, renderChart, type K8sObject } from '../support/helm.js';
import { join } from 'node:path';

const NS = 'worldline-system';
const TEAM = 'team';
const RELEASE = 'worldline';
const AGENT_SA = 'worldline-node-agent';
const CONTROLLER_SA = 'worldline-controller';
const POLICY = { objects: 'worldline-node-agent-objects', roots: 'worldline-node-agent-roots', leases: 'worldline-node-agent-leases' } as const;
const GROUP = 'worldline.dev/v1alpha1';
const MERGE = 'application/merge-patch+json';

let cp: ControlPlane;
let admin: KubeHttpClient;
let rendered: K8sObject[];
let installNotes = '';
const tokens: Record<'a' | 'b' | 'unbound' | 'controller', KubeHttpClient> = {} as never;

function clientWithToken(token: string): KubeHttpClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'cp', server: cp.server, caFile: cp.tls.caFile, skipTLSVerify: false }],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'cp', cluster: 'cp', user: 'sa' }],
    currentContext: 'cp',
  });
  return httpClientFor(kc);
}

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await cp.kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/** The error a request fails with (the test fails if it succeeds). */
async function refused(p: Promise<unknown>, what: string): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  assert.fail(`${what}: expected a refusal, the request succeeded`);
}

async function tokenFor(sa: string, pod?: { name: string; uid: string }): Promise<string> {
  const body = {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600, ...(pod ? { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid } } : {}) },
  };
  const r = await admin.request<{ status: { token: string } }>({ method: 'POST', path: `/api/v1/namespaces/${NS}/serviceaccounts/${sa}/token`, body });
  return r.status.token;
}

const statusPath = (plural: string, name: string, ns?: string) => `/apis/worldline.dev/v1alpha1/${ns ? `namespaces/${ns}/` : ''}${plural}/${name}/status`;
const objPath = (plural: string, name: string, ns?: string) => `/apis/worldline.dev/v1alpha1/${ns ? `namespaces/${ns}/` : ''}${plural}/${name}`;

/** What the node-agent does: server-side apply of a status fragment under its field manager. */
function applyStatus(c: KubeHttpClient, kind: string, plural: string, name: string, status: Record<string, unknown>, ns?: string): Promise<unknown> {
  const body = { apiVersion: GROUP, kind, metadata: ns ? { name, namespace: ns } : { name }, status };
  return c.request({ method: 'PATCH', path: statusPath(plural, name, ns), query: { fieldManager: 'worldline-node-agent', force: true }, body: JSON.stringify(body), contentType: APPLY_PATCH_CONTENT_TYPE });
}

before(async () => {
  rendered = await renderChart({ release: RELEASE, namespace: NS });
  cp = await startControlPlane({ crdDir: join(CHART_DIR, 'crds'), quiet: true });
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  admin = httpClientFor(kc);
  await kubectl(['create', 'namespace', TEAM]);
  // Installed as a user installs it (no kubelet or controllers run here, so no pod starts; the API server
  // still validates and stores every object).
  const installed = await helm(['install', RELEASE, CHART_DIR, '--namespace', NS, '--create-namespace', '--kubeconfig', cp.kubeconfigPath]);
  if (installed.code !== 0) throw new Error(`helm install failed (${installed.code}):\n${installed.stderr}`);
  installNotes = installed.stdout;

  for (const n of ['node-a', 'node-b']) {
    await admin.request({ method: 'POST', path: '/api/v1/nodes', body: { apiVersion: 'v1', kind: 'Node', metadata: { name: n } } });
  }
  const pods: Record<string, { name: string; uid: string }> = {};
  for (const n of ['a', 'b']) {
    const pod = await admin.request<{ metadata: { name: string; uid: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `node-agent-${n}` },
        spec: { nodeName: `node-${n}`, serviceAccountName: AGENT_SA, containers: [{ name: 'node-agent', image: 'worldline.local/worldline:test' }] },
      },
    });
    pods[n] = pod.metadata;
  }
  tokens.a = clientWithToken(await tokenFor(AGENT_SA, pods.a));
  tokens.b = clientWithToken(await tokenFor(AGENT_SA, pods.b));
  tokens.unbound = clientWithToken(await tokenFor(AGENT_SA));
  tokens.controller = clientWithToken(await tokenFor(CONTROLLER_SA));

  // Objects bound to each node: Roots by spec.nodeName, Worlds, Checks and Collapses by status.nodeName
  // (which the controller writes; here the admin does).
  for (const n of ['a', 'b']) {
    const node = `node-${n}`;
    await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: GROUP, kind: 'Root', metadata: { name: `root-${n}` }, spec: { nodeName: node, path: `/srv/root-${n}` } },
        { apiVersion: GROUP, kind: 'World', metadata: { name: `world-${n}`, namespace: TEAM, finalizers: ['worldline.dev/node-cleanup'] }, spec: { roots: [`root-${n}`], agent: { command: ['/bin/true'] } } },
        { apiVersion: GROUP, kind: 'Check', metadata: { name: `check-${n}`, namespace: TEAM }, spec: { worldRef: `world-${n}`, name: 'verify' } },
        { apiVersion: GROUP, kind: 'Collapse', metadata: { name: `collapse-${n}`, namespace: TEAM }, spec: { worldRef: `world-${n}`, mode: 'Candidate' } },
      ],
    }));
    for (const plural of ['worlds', 'checks', 'collapses']) {
      await admin.request({ method: 'PATCH', path: statusPath(plural, `${plural.slice(0, -1)}-${n}`, TEAM), body: { status: { nodeName: node } }, contentType: MERGE });
    }
  }

  // The policies are enforced once the API server's admission plugin has seen each and its binding: probe
  // each with a write it must refuse until all three do.
  const probes: [string, () => Promise<unknown>][] = [
    [POLICY.objects, () => applyStatus(tokens.a, 'World', 'worlds', 'world-b', { message: 'probe' }, TEAM)],
    [POLICY.roots, () => applyStatus(tokens.a, 'Root', 'roots', 'root-b', { message: 'probe' })],
    [POLICY.leases, () => tokens.a.request({ method: 'POST', path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'probe' } } })],
  ];
  const deadline = Date.now() + 60_000;
  for (const [policy, probe] of probes) {
    for (;;) {
      try {
        await probe();
      } catch (e) {
        if (e instanceof ApiError && e.statusCode === 403 && e.message.includes(policy)) break;
        throw e;
      }
      if (Date.now() > deadline) throw new Error(`ValidatingAdmissionPolicy ${policy} not enforced 60 s after it was applied`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
});

after(async () => {
  await cp?.stop();
});

void test('helm install creates every object the chart renders and tells the user what to do next; a pod-bound token carries its node', async () => {
  assert.match(installNotes, /STATUS: deployed/);
  assert.match(installNotes, /kubectl -n worldline-system rollout status deployment\/worldline-controller/);
  assert.match(installNotes, /kubectl -n worldline-system rollout status daemonset\/worldline-node-agent/);
  assert.match(installNotes, /--clusterrole=worldline-edit/);
  for (const o of rendered) {
    const got = await kubectl(['get', o.kind, o.metadata.name, ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : []), '-o', 'name']);
    assert.ok(got.trim().length > 0, `${o.kind} ${o.metadata.name} is not on the API server`);
  }
  // The DaemonSet's pods would carry their node in the token: the API server says so for our stand-in pod.
  const review = await tokens.a.request<{ status: { userInfo: { username: string; extra?: Record<string, string[]> } } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  assert.equal(review.status.userInfo.username, `system:serviceaccount:${NS}:${AGENT_SA}`);
  assert.deepEqual(review.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], ['node-a']);
  for (const name of Object.values(POLICY)) assert.equal(findObject(rendered, 'ValidatingAdmissionPolicyBinding', name).kind, 'ValidatingAdmissionPolicyBinding');
});

void test("node A's token writes status of World, Check, Collapse and Root bound to node A", async () => {
  await applyStatus(tokens.a, 'World', 'worlds', 'world-a', { phase: 'Running', nodeName: 'node-a' }, TEAM);
  await applyStatus(tokens.a, 'Check', 'checks', 'check-a', { phase: 'Running', nodeName: 'node-a' }, TEAM);
  await applyStatus(tokens.a, 'Collapse', 'collapses', 'collapse-a', { phase: 'Preparing', nodeName: 'node-a' }, TEAM);
  await applyStatus(tokens.a, 'Root', 'roots', 'root-a', { phase: 'Adopting', nodeName: 'node-a' });
  const w = await admin.request<{ status: { phase?: string; nodeName?: string } }>({ path: objPath('worlds', 'world-a', TEAM) });
  assert.equal(w.status.phase, 'Running');
  assert.equal(w.status.nodeName, 'node-a');
});

void test("node A's token is refused by the policy on every kind bound to node B, naming both nodes", async () => {
  const cases: [string, string, string, string | undefined][] = [
    ['World', 'worlds', 'world-b', TEAM],
    ['Check', 'checks', 'check-b', TEAM],
    ['Collapse', 'collapses', 'collapse-b', TEAM],
    ['Root', 'roots', 'root-b', undefined],
  ];
  for (const [kind, plural, name, ns] of cases) {
    const e = await refused(applyStatus(tokens.a, kind, plural, name, { message: 'written by the wrong node' }, ns), `${kind} ${name}`);
    assert.equal(e.statusCode, 403, `${kind}: ${e.message}`);
    assert.match(e.message, new RegExp(`ValidatingAdmissionPolicy '${kind === 'Root' ? POLICY.roots : POLICY.objects}'`), e.message);
    assert.match(e.message, new RegExp(`node-agent of node node-a may write only objects bound to its node: ${plural} ${name} is bound to node node-b`), e.message);
  }
  // And node B's own token may write them: the refusal is about the node, not the kind.
  await applyStatus(tokens.b, 'World', 'worlds', 'world-b', { phase: 'Running', nodeName: 'node-b' }, TEAM);
});

void test('a node-agent cannot move an object to another node, touch a spec, or take a finalizer off another node\'s World', async () => {
  const moved = await refused(applyStatus(tokens.a, 'World', 'worlds', 'world-a', { nodeName: 'node-b' }, TEAM), 'rebinding world-a');
  assert.equal(moved.statusCode, 403, moved.message);
  assert.match(moved.message, /may not bind worlds world-a to another node/);

  const spec = await refused(tokens.a.request({ method: 'PATCH', path: objPath('worlds', 'world-a', TEAM), body: { spec: { agent: { command: ['/bin/sh', '-c', 'echo chosen by the node'] } } }, contentType: MERGE }), 'spec edit');
  assert.equal(spec.statusCode, 403, spec.message);
  assert.match(spec.message, /may only remove finalizers from worlds world-a/);
  const label = await refused(tokens.a.request({ method: 'PATCH', path: objPath('worlds', 'world-a', TEAM), body: { metadata: { labels: { 'worldline.dev/node': 'node-b' } } }, contentType: MERGE }), 'label edit');
  assert.equal(label.statusCode, 403, label.message);
  assert.match(label.message, /may only remove finalizers from worlds world-a/);
  const added = await refused(tokens.a.request({ method: 'PATCH', path: objPath('worlds', 'world-a', TEAM), body: { metadata: { finalizers: ['worldline.dev/node-cleanup', 'example.com/hold'] } }, contentType: MERGE }), 'finalizer added');
  assert.equal(added.statusCode, 403, added.message);

  const other = await refused(tokens.a.request({ method: 'PATCH', path: objPath('worlds', 'world-b', TEAM), body: { metadata: { finalizers: null } }, contentType: MERGE }), 'finalizer of world-b');
  assert.equal(other.statusCode, 403, other.message);
  assert.match(other.message, /world-b is bound to node node-b/);

  // Its own World's finalizer it may remove (what the agent does once the node is clean).
  await tokens.a.request({ method: 'PATCH', path: objPath('worlds', 'world-a', TEAM), body: { metadata: { finalizers: null } }, contentType: MERGE });
  const w = await admin.request<{ metadata: { finalizers?: string[] } }>({ path: objPath('worlds', 'world-a', TEAM) });
  assert.deepEqual(w.metadata.finalizers ?? [], []);
});

void test("a node-agent puts the release finalizer on its own node's Root and takes it off; no other finalizer, no other node's Root", async () => {
  const JSON_PATCH = 'application/json-patch+json';
  const FIN = 'worldline.dev/root-release'; // node-agent/roots/root-finalizer.ts
  const add = (c: KubeHttpClient, plural: string, name: string, value: string, ns?: string) =>
    c.request({ method: 'PATCH', path: objPath(plural, name, ns), body: [{ op: 'add', path: '/metadata/finalizers', value: [value] }], contentType: JSON_PATCH });
  await add(tokens.a, 'roots', 'root-a', FIN);
  const r = await admin.request<{ metadata: { finalizers?: string[] } }>({ path: objPath('roots', 'root-a') });
  assert.deepEqual(r.metadata.finalizers, [FIN]);

  const other = await refused(add(tokens.a, 'roots', 'root-b', FIN), 'release finalizer on root-b');
  assert.equal(other.statusCode, 403, other.message);
  assert.match(other.message, /root-b is bound to node node-b/);
  const hold = await refused(tokens.a.request({ method: 'PATCH', path: objPath('roots', 'root-a'), body: [{ op: 'add', path: '/metadata/finalizers/-', value: 'example.com/hold' }], contentType: JSON_PATCH }), 'another finalizer on root-a');
  assert.equal(hold.statusCode, 403, hold.message);
  assert.match(hold.message, /may only add worldline.dev\/root-release to, or remove finalizers from, roots root-a/);
  const onWorld = await refused(add(tokens.a, 'worlds', 'world-a', FIN, TEAM), 'release finalizer on a World');
  assert.equal(onWorld.statusCode, 403, onWorld.message);
  assert.match(onWorld.message, /may only remove finalizers from worlds world-a/);

  await tokens.a.request({ method: 'PATCH', path: objPath('roots', 'root-a'), body: [{ op: 'test', path: '/metadata/finalizers/0', value: FIN }, { op: 'remove', path: '/metadata/finalizers/0' }], contentType: JSON_PATCH });
  const after = await admin.request<{ metadata: { finalizers?: string[] } }>({ path: objPath('roots', 'root-a') });
  assert.deepEqual(after.metadata.finalizers ?? [], []);
});

void test('a node-agent token with no node in it is refused', async () => {
  const e = await refused(applyStatus(tokens.unbound, 'World', 'worlds', 'world-a', { message: 'no node' }, TEAM), 'unbound token');
  assert.equal(e.statusCode, 403, e.message);
  assert.match(e.message, new RegExp(`ValidatingAdmissionPolicy '${POLICY.objects}'`));
  assert.match(e.message, /authentication\.kubernetes\.io\/node-name is missing/);
});

void test("a node-agent writes only its own node's heartbeat Lease and receipts ConfigMap, never the ledger heads", async () => {
  const lease = (name: string) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: NS }, spec: { holderIdentity: 'x', leaseDurationSeconds: 40 } });
  await tokens.a.request({ method: 'POST', path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, body: lease('worldline-node-node-a') });
  for (const name of ['worldline-node-node-b', 'worldline-controller']) {
    const e = await refused(tokens.a.request({ method: 'POST', path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, body: lease(name) }), `lease ${name}`);
    assert.equal(e.statusCode, 403, e.message);
    assert.match(e.message, new RegExp(`ValidatingAdmissionPolicy '${POLICY.leases}'`));
    assert.match(e.message, new RegExp(`may write only its own heartbeat Lease worldline-node-node-a, not ${name}`));
  }
  const cm = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: { node: 'node-a' } });
  await tokens.a.request({ method: 'PATCH', path: `/api/v1/namespaces/${NS}/configmaps/worldline-receipts-node-a`, query: { fieldManager: 'worldline-node-agent', force: true }, body: cm('worldline-receipts-node-a'), contentType: APPLY_PATCH_CONTENT_TYPE });
  const e = await refused(tokens.a.request({ method: 'PATCH', path: `/api/v1/namespaces/${NS}/configmaps/worldline-receipts-node-b`, query: { fieldManager: 'worldline-node-agent', force: true }, body: cm('worldline-receipts-node-b'), contentType: APPLY_PATCH_CONTENT_TYPE }), 'configmap of node-b');
  assert.equal(e.statusCode, 403, e.message);
  assert.match(e.message, /may write only its own receipts ConfigMap worldline-receipts-node-a/);
  // Nor the cluster's record of ledger heads, which is what catches a node rewriting its own history.
  const heads = await refused(tokens.a.request({ method: 'PATCH', path: `/api/v1/namespaces/${NS}/configmaps/worldline-ledger-heads`, query: { fieldManager: 'worldline-node-agent', force: true }, body: cm('worldline-ledger-heads'), contentType: APPLY_PATCH_CONTENT_TYPE }), 'the ledger heads');
  assert.equal(heads.statusCode, 403, heads.message);
  assert.match(heads.message, /may write only its own receipts ConfigMap worldline-receipts-node-a, not worldline-ledger-heads/);
});

void test('RBAC: the node-agent cannot create or delete worldline objects; the controller is not bound by the node policy', async () => {
  const world = { apiVersion: GROUP, kind: 'World', metadata: { name: 'by-agent', namespace: TEAM }, spec: { roots: ['root-a'], agent: { command: ['/bin/true'] } } };
  const create = await refused(tokens.a.request({ method: 'POST', path: `/apis/worldline.dev/v1alpha1/namespaces/${TEAM}/worlds`, body: world }), 'agent creates a World');
  assert.equal(create.statusCode, 403, create.message);
  assert.match(create.message, /cannot create resource "worlds"/);
  const del = await refused(tokens.a.request({ method: 'DELETE', path: objPath('worlds', 'world-a', TEAM) }), 'agent deletes a World');
  assert.equal(del.statusCode, 403, del.message);
  assert.match(del.message, /cannot delete resource "worlds"/);
  const secrets = await refused(tokens.a.request({ path: `/api/v1/namespaces/${TEAM}/secrets` }), 'agent lists Secrets');
  assert.equal(secrets.statusCode, 403, secrets.message);
  assert.match(secrets.message, /cannot list resource "secrets"/);
  // The controller's token (no node) writes status on any node's objects and creates Checks.
  await applyStatus(tokens.controller, 'World', 'worlds', 'world-b', { message: 'controller' }, TEAM);
  await tokens.controller.request({ method: 'POST', path: `/apis/worldline.dev/v1alpha1/namespaces/${TEAM}/checks`, body: { apiVersion: GROUP, kind: 'Check', metadata: { name: 'by-controller', namespace: TEAM }, spec: { worldRef: 'world-b', name: 'verify' } } });
  const worldByController = await refused(tokens.controller.request({ method: 'POST', path: `/apis/worldline.dev/v1alpha1/namespaces/${TEAM}/worlds`, body: world }), 'controller creates a World');
  assert.equal(worldByController.statusCode, 403, worldByController.message);
});

void test('worldline-view can get and list Worlds but not create one; worldline-edit can create one', async () => {
  await kubectl(['-n', TEAM, 'create', 'rolebinding', 'alice-view', '--clusterrole=worldline-view', '--user=alice']);
  await kubectl(['-n', TEAM, 'create', 'rolebinding', 'bob-edit', '--clusterrole=worldline-edit', '--user=bob']);
  const list = await kubectl(['--as=alice', '-n', TEAM, 'get', 'worlds', '-o', 'name']);
  assert.match(list, /world\.worldline\.dev\/world-a/);
  const one = await kubectl(['--as=alice', '-n', TEAM, 'get', 'world', 'world-b', '-o', 'jsonpath={.metadata.name}']);
  assert.equal(one, 'world-b');

  const world = (name: string) => JSON.stringify({ apiVersion: GROUP, kind: 'World', metadata: { name, namespace: TEAM }, spec: { roots: ['root-a'], agent: { command: ['/bin/true'] } } });
  const denied = await cp.kubectl(['--as=alice', '-n', TEAM, 'create', '-f', '-'], { input: world('by-alice') });
  assert.notEqual(denied.code, 0, 'alice (worldline-view) created a World');
  assert.match(denied.stderr, /Forbidden|forbidden/);
  assert.match(denied.stderr, /User "alice" cannot create resource "worlds" in API group "worldline\.dev" in the namespace "team"/);
  const deleteDenied = await cp.kubectl(['--as=alice', '-n', TEAM, 'delete', 'world', 'world-b']);
  assert.notEqual(deleteDenied.code, 0);
  assert.match(deleteDenied.stderr, /cannot delete resource "worlds"/);

  // exec into a World (kubectl worldline exec): edit may, view may not.
  // A SubjectAccessReview, as the API server makes for the aggregated API (no view API is served here).
  const canExec = async (user: string) =>
    kubectl(['create', '-o', 'jsonpath={.status.allowed}', '-f', '-'], JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user, resourceAttributes: { group: 'view.worldline.dev', resource: 'worlds', subresource: 'exec', verb: 'create', namespace: TEAM, name: 'world-b' } } }));
  assert.equal(await canExec('alice'), 'false');
  assert.equal(await canExec('bob'), 'true');

  await kubectl(['--as=bob', '-n', TEAM, 'create', '-f', '-'], world('by-bob'));
  const created = await kubectl(['-n', TEAM, 'get', 'world', 'by-bob', '-o', 'jsonpath={.metadata.name}']);
  assert.equal(created, 'by-bob');
  // Neither user role reaches into another namespace.
  const elsewhere = await cp.kubectl(['--as=bob', '-n', 'default', 'create', '-f', '-'], { input: JSON.stringify({ ...JSON.parse(world('by-bob')) as object, metadata: { name: 'by-bob', namespace: 'default' } }) });
  assert.notEqual(elsewhere.code, 0);
  assert.match(elsewhere.stderr, /cannot create resource "worlds"/);
});
