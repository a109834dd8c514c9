// charts/worldline through the real helm (built from the Go module proxy by scripts/helm/build.sh):
// `helm lint --strict` and `helm template` are clean with the defaults and with every optional part on;
// the rendered controller, node-agent, RBAC, policy, Services, PrometheusRule and dashboard say what the
// chart promises; values.schema.json refuses bad values with an error that names the value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR, findObject, helm, helmTemplate, renderChart, type K8sObject } from '../support/helm.js';

const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string; version: string };

/** Every optional part switched on. */
const ALL_ON = {
  metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } },
  prometheusRule: { enabled: true },
  nodeAgent: { credentialNamespaces: ['team-a', 'team-b'], receiptsExport: '/var/log/worldline/ledger.jsonl', admission: { 'node-worlds': '8' } },
};

interface Container {
  name: string;
  image: string;
  imagePullPolicy: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  securityContext: Record<string, unknown> & { capabilities?: { drop?: string[] }; seccompProfile?: { type: string } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts: { name: string; mountPath: string; mountPropagation?: string }[];
}
interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken?: boolean;
  hostPID?: boolean;
  hostNetwork?: boolean;
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes: { name: string; hostPath?: { path: string; type?: string }; projected?: unknown }[];
}
const podSpec = (o: K8sObject): PodSpec => (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
const rules = (o: K8sObject): Rule[] => (o as unknown as { rules: Rule[] }).rules;

async function lint(values: Record<string, unknown>): Promise<{ code: number; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'worldline-chart-lint-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    const r = await helm(['lint', '--strict', CHART_DIR, '--namespace', 'worldline-system', '--values', file]);
    return { code: r.code, out: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void test('helm lint --strict is clean with the default values and with every optional part on', async () => {
  for (const values of [{}, ALL_ON]) {
    const r = await lint(values);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    assert.doesNotMatch(r.out, /\[(WARNING|ERROR)\]/, r.out);
  }
});

void test('helm template is clean and renders the expected objects', async () => {
  const r = await helmTemplate();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const objects = await renderChart();
  const names = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  assert.deepEqual(names, [
    'APIService/v1alpha1.view.worldline.dev',
    'ClusterRole/worldline-controller',
    'ClusterRole/worldline-edit',
    'ClusterRole/worldline-node-agent',
    'ClusterRole/worldline-node-agent-credentials',
    'ClusterRole/worldline-view',
    'ClusterRoleBinding/worldline-controller',
    'ClusterRoleBinding/worldline-node-agent',
    'ClusterRoleBinding/worldline-node-agent-credentials',
    'ConfigMap/worldline-dashboard',
    'DaemonSet/worldline-node-agent',
    'Deployment/worldline-controller',
    'Role/worldline-controller',
    'Role/worldline-node-agent',
    'RoleBinding/worldline-controller',
    'RoleBinding/worldline-controller-auth-reader',
    'RoleBinding/worldline-node-agent',
    'Secret/worldline-link-controller',
    'Secret/worldline-link-node-agent',
    'Secret/worldline-view-ca',
    'Secret/worldline-view-serving',
    'Service/worldline-controller-metrics',
    'Service/worldline-node-agent-metrics',
    'Service/worldline-view',
    'ServiceAccount/worldline-controller',
    'ServiceAccount/worldline-node-agent',
    'ValidatingAdmissionPolicy/worldline-node-agent-leases',
    'ValidatingAdmissionPolicy/worldline-node-agent-objects',
    'ValidatingAdmissionPolicy/worldline-node-agent-roots',
    'ValidatingAdmissionPolicyBinding/worldline-node-agent-leases',
    'ValidatingAdmissionPolicyBinding/worldline-node-agent-objects',
    'ValidatingAdmissionPolicyBinding/worldline-node-agent-roots',
  ]);
  for (const o of objects) {
    assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm', `${o.kind}/${o.metadata.name}`);
    assert.equal(o.metadata.labels?.['app.kubernetes.io/instance'], 'worldline', `${o.kind}/${o.metadata.name}`);
    assert.equal(o.metadata.labels?.['app.kubernetes.io/version'], chart.appVersion, `${o.kind}/${o.metadata.name}`);
  }
});

void test('the controller: 2 replicas with leader election, non-root, read-only, no privileges, probes on its health server, requests and limits', async () => {
  const d = findObject(await renderChart(), 'Deployment', 'worldline-controller');
  assert.equal((d as unknown as { spec: { replicas: number } }).spec.replicas, 2);
  const spec = podSpec(d);
  const [c] = spec.containers;
  assert.ok(c);
  assert.equal(c.image, `worldline.local/worldline:${chart.appVersion}`);
  assert.equal(c.imagePullPolicy, 'IfNotPresent');
  assert.ok(c.args.includes('--leader-elect=true'), c.args.join(' '));
  assert.ok(c.args.includes('--metrics-bind=0.0.0.0:8080'), c.args.join(' '));
  assert.deepEqual(c.ports, [{ name: 'metrics', containerPort: 8080, protocol: 'TCP' }, { name: 'view', containerPort: 8443, protocol: 'TCP' }]);
  assert.ok(c.args.includes('--view-tls-dir=/etc/worldline/view-serving') && c.args.includes('--link-tls-dir=/etc/worldline/link'), c.args.join(' '));
  assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'metrics' });
  assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'metrics' });
  assert.equal(c.securityContext.runAsNonRoot, true);
  assert.equal(c.securityContext.runAsUser, 65532);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.privileged, false);
  assert.deepEqual(c.securityContext.capabilities?.drop, ['ALL']);
  assert.equal(c.securityContext.seccompProfile?.type, 'RuntimeDefault');
  assert.ok(c.resources.requests?.cpu && c.resources.requests.memory && c.resources.limits?.cpu && c.resources.limits.memory, JSON.stringify(c.resources));
  const env = new Map(c.env.map((e) => [e.name, e]));
  assert.equal(env.get('POD_NAME')?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
  assert.equal(env.get('WORLDLINE_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
  assert.equal(spec.serviceAccountName, 'worldline-controller');
});

void test('the node-agent: privileged, the node\'s PID namespace and cgroups (Worlds outlive the pod), node name from the downward API, the store on a hostPath at the same path, a pod-bound token', async () => {
  const ds = findObject(await renderChart(), 'DaemonSet', 'worldline-node-agent');
  const spec = podSpec(ds);
  const [c] = spec.containers;
  assert.ok(c);
  assert.equal(c.securityContext.privileged, true);
  assert.equal(spec.hostPID, true);
  assert.equal(spec.hostNetwork, false);
  const env = new Map(c.env.map((e) => [e.name, e]));
  assert.equal(env.get('NODE_NAME')?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
  assert.equal(env.get('WORLDLINE_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
  assert.ok(c.args.includes('--store=/var/lib/worldline'), c.args.join(' '));
  const store = spec.volumes.find((v) => v.name === 'store');
  assert.deepEqual(store?.hostPath, { path: '/var/lib/worldline', type: 'DirectoryOrCreate' });
  assert.deepEqual(c.volumeMounts.find((m) => m.name === 'store'), { name: 'store', mountPropagation: 'Bidirectional', mountPath: '/var/lib/worldline' });
  // The node's cgroup hierarchies, where Worlds' and supervisors' cgroups live outside the pod's.
  assert.deepEqual(spec.volumes.find((v) => v.name === 'host-cgroup')?.hostPath, { path: '/sys/fs/cgroup', type: 'Directory' });
  assert.deepEqual(c.volumeMounts.find((m) => m.name === 'host-cgroup'), { name: 'host-cgroup', mountPath: '/host/cgroup' });
  assert.ok(c.args.includes('--cgroup-root=/host/cgroup'), c.args.join(' '));
  assert.deepEqual(c.volumeMounts.find((m) => m.name === 'root-0'), { name: 'root-0', mountPath: '/srv', mountPropagation: 'HostToContainer' });
  assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'metrics' });
  assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'metrics' });
  assert.deepEqual(c.ports, [{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }, { name: 'view', containerPort: 9443, protocol: 'TCP' }]);
  assert.ok(c.args.includes('--link-tls-dir=/etc/worldline/link'), c.args.join(' '));
  assert.equal(env.get('POD_IP')?.valueFrom?.fieldRef?.fieldPath, 'status.podIP');
  // The default projected token (bound to the pod) stays: automount on, no hand-made token volume.
  assert.equal(spec.automountServiceAccountToken, true);
  assert.equal(spec.volumes.filter((v) => v.projected !== undefined).length, 0);
  assert.equal(spec.serviceAccountName, 'worldline-node-agent');
  // No container limit: without cgroupHostPath the Worlds' cgroups nest under the agent's.
  assert.equal(c.resources.limits, undefined);
});

void test('the node-agent with cgroupHostPath empty and hostPID off: its container\'s own cgroups, no host cgroup mount', async () => {
  const ds = findObject(await renderChart({ values: { nodeAgent: { cgroupHostPath: '', hostPID: false } } }), 'DaemonSet', 'worldline-node-agent');
  const spec = podSpec(ds);
  const [c] = spec.containers;
  assert.ok(c);
  assert.equal(spec.hostPID, false);
  assert.equal(spec.volumes.find((v) => v.name === 'host-cgroup'), undefined);
  assert.equal(c.volumeMounts.find((m) => m.name === 'host-cgroup'), undefined);
  assert.ok(!c.args.some((a) => a.startsWith('--cgroup-root')), c.args.join(' '));
});

void test('RBAC: no wildcards; separate controller and node-agent roles; the node-agent creates and deletes no worldline object; user roles aggregate', async () => {
  const objects = await renderChart();
  for (const o of objects.filter((x) => x.kind === 'ClusterRole' || x.kind === 'Role')) {
    for (const r of rules(o)) {
      for (const v of [...r.apiGroups, ...r.resources, ...r.verbs]) assert.notEqual(v, '*', `${o.kind}/${o.metadata.name} has a wildcard`);
    }
  }
  const agent = rules(findObject(objects, 'ClusterRole', 'worldline-node-agent'));
  for (const r of agent.filter((x) => x.apiGroups.includes('worldline.dev'))) {
    for (const v of ['create', 'delete', 'update', 'deletecollection']) assert.ok(!r.verbs.includes(v), `node-agent may ${v} ${r.resources.join(',')}`);
    assert.ok(!r.resources.includes('policies/status'), 'the node-agent writes no Policy status');
  }
  const controller = rules(findObject(objects, 'ClusterRole', 'worldline-controller'));
  assert.ok(controller.some((r) => r.resources.includes('checks') && r.verbs.includes('create')));
  assert.ok(!controller.some((r) => r.resources.includes('worlds') && r.verbs.includes('create')), 'the controller creates no Worlds');
  assert.ok(!controller.some((r) => r.resources.includes('secrets')), 'the controller reads no Secrets');
  const leader = rules(findObject(objects, 'Role', 'worldline-controller')).find((r) => r.verbs.includes('update'));
  assert.deepEqual(leader?.resourceNames, ['worldline-controller']);

  const edit = findObject(objects, 'ClusterRole', 'worldline-edit');
  assert.equal(edit.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'], 'true');
  assert.equal(edit.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-admin'], 'true');
  assert.deepEqual(rules(edit).flatMap((r) => r.resources).sort(), ['checks', 'collapses', 'worlds', 'worlds/diff', 'worlds/exec', 'worlds/log']);
  assert.deepEqual(rules(edit).find((r) => r.resources.includes('worlds/exec'))?.verbs, ['create'], 'edit may exec into a World (like pods/exec)');
  const view = findObject(objects, 'ClusterRole', 'worldline-view');
  assert.equal(view.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
  for (const r of rules(view)) assert.deepEqual(r.verbs, r.apiGroups.includes('view.worldline.dev') ? ['get'] : ['get', 'list', 'watch']);
  assert.deepEqual(rules(view).flatMap((r) => r.resources).sort(), ['checks', 'collapses', 'policies', 'roots', 'worlds', 'worlds/diff', 'worlds/log']);
});

void test('the view API: one CA signs the serving certificate (the APIService caBundle) and both ends of the node link, each naming its role', async () => {
  const objects = await renderChart();
  const secret = (name: string) => (findObject(objects, 'Secret', name) as unknown as { data: Record<string, string> }).data;
  const pem = (b64: string | undefined) => new X509Certificate(Buffer.from(b64 ?? '', 'base64'));
  const ca = pem(secret('worldline-view-ca')['tls.crt']);
  assert.ok(ca.ca, 'the view CA is a CA');
  const api = findObject(objects, 'APIService', 'v1alpha1.view.worldline.dev') as unknown as { spec: { caBundle: string; service: { name: string; namespace: string; port: number } } };
  assert.equal(pem(api.spec.caBundle).fingerprint256, ca.fingerprint256);
  assert.deepEqual(api.spec.service, { name: 'worldline-view', namespace: 'worldline-system', port: 443 });
  const serving = pem(secret('worldline-view-serving')['tls.crt']);
  assert.ok(serving.verify(ca.publicKey));
  assert.match(serving.subjectAltName ?? '', /DNS:worldline-view\.worldline-system\.svc/);
  for (const [name, cn] of [['worldline-link-controller', 'worldline-controller'], ['worldline-link-node-agent', 'worldline-node-agent']] as const) {
    const data = secret(name);
    const leaf = pem(data['tls.crt']);
    assert.ok(leaf.verify(ca.publicKey), name);
    assert.match(leaf.subject, new RegExp(`CN=${cn}$`, 'm'), name);
    assert.equal(pem(data['ca.crt']).fingerprint256, ca.fingerprint256, name);
  }
  // view.enabled=false renders none of it, and neither process is given the flags.
  const off = await renderChart({ values: { view: { enabled: false } } });
  assert.equal(off.filter((o) => o.kind === 'APIService' || o.kind === 'Secret').length, 0);
  const ctl = podSpec(findObject(off, 'Deployment', 'worldline-controller')).containers[0];
  assert.ok(ctl && !ctl.args.some((a) => a.startsWith('--view')), ctl?.args.join(' '));
});

void test('the admission policies match exactly the node-agent service account of the release namespace', async () => {
  const objects = await renderChart({ release: 'wl', namespace: 'agents' });
  for (const part of ['objects', 'roots', 'leases']) {
    const name = `wl-worldline-node-agent-${part}`;
    const vap = findObject(objects, 'ValidatingAdmissionPolicy', name) as unknown as { spec: { matchConditions: { expression: string }[]; failurePolicy: string } };
    assert.deepEqual(vap.spec.matchConditions.map((m) => m.expression), ["request.userInfo.username == 'system:serviceaccount:agents:wl-worldline-node-agent'"]);
    assert.equal(vap.spec.failurePolicy, 'Fail');
    const binding = findObject(objects, 'ValidatingAdmissionPolicyBinding', name) as unknown as { spec: { policyName: string; validationActions: string[] } };
    assert.equal(binding.spec.policyName, name);
    assert.deepEqual(binding.spec.validationActions, ['Deny']);
  }
  assert.equal(findObject(objects, 'ServiceAccount', 'wl-worldline-node-agent').metadata.namespace, 'agents');
});

void test('optional parts: ServiceMonitors, the PrometheusRule from files/alerts.yaml, per-namespace credential bindings, receipts export', async () => {
  const objects = await renderChart({ values: ALL_ON });
  const monitors = objects.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name).sort();
  assert.deepEqual(monitors, ['worldline-controller', 'worldline-node-agent']);
  const rule = findObject(objects, 'PrometheusRule', 'worldline') as unknown as { spec: { groups: unknown } };
  const alerts = parse(readFileSync(join(CHART_DIR, 'files', 'alerts.yaml'), 'utf8')) as { groups: unknown };
  assert.deepEqual(rule.spec.groups, alerts.groups);
  const bindings = objects.filter((o) => o.kind === 'RoleBinding' && o.metadata.name === 'worldline-node-agent-credentials').map((o) => o.metadata.namespace).sort();
  assert.deepEqual(bindings, ['team-a', 'team-b']);
  assert.ok(!objects.some((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'worldline-node-agent-credentials'), 'credentialNamespaces set, yet Secrets are readable cluster-wide');
  const [c] = podSpec(findObject(objects, 'DaemonSet', 'worldline-node-agent')).containers;
  assert.ok(c?.args.includes('--receipts-export=/var/log/worldline/ledger.jsonl'), c?.args.join(' '));
  assert.ok(c?.args.includes('--node-worlds=8'), c?.args.join(' '));
  assert.deepEqual(c?.volumeMounts.find((m) => m.name === 'receipts-export')?.mountPath, '/var/log/worldline');

  const defaults = await renderChart();
  assert.ok(!defaults.some((o) => o.kind === 'PrometheusRule' || o.kind === 'ServiceMonitor'), 'PrometheusRule and ServiceMonitor are off by default');
});

void test('the dashboard ConfigMap holds files/dashboard.json under the Grafana sidecar label', async () => {
  const cm = findObject(await renderChart(), 'ConfigMap', 'worldline-dashboard') as unknown as K8sObject & { data: Record<string, string> };
  assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
  const file = readFileSync(join(CHART_DIR, 'files', 'dashboard.json'), 'utf8');
  assert.equal(cm.data['worldline.json'], file.replace(/\n+$/, ''));
  assert.deepEqual(JSON.parse(cm.data['worldline.json'] ?? ''), JSON.parse(file));
});

void test('values.schema.json refuses bad values with an error naming the value', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ logLevel: 'verbose' }, /at '\/logLevel': value must be one of 'debug', 'info', 'warn', 'error'/],
    [{ controller: { replicas: 'two' } }, /at '\/controller\/replicas': got string, want integer/],
    [{ nodeAgent: { privileged: false } }, /at '\/nodeAgent\/privileged': value must be true/],
    [{ nodeAgent: { store: { hostPath: 'var/lib/worldline' } } }, /at '\/nodeAgent\/store\/hostPath': 'var\/lib\/worldline' does not match pattern/],
    [{ nodeAgent: { store: { mountPropagation: 'Shared' } } }, /at '\/nodeAgent\/store\/mountPropagation': value must be one of 'None', 'HostToContainer', 'Bidirectional'/],
    [{ nodeAgent: { rootsMountPropagation: 'Bidirectional' } }, /at '\/nodeAgent\/rootsMountPropagation': value must be one of 'None', 'HostToContainer'/],
    [{ nodeAgent: { cgroupHostPath: 'sys/fs/cgroup' } }, /at '\/nodeAgent\/cgroupHostPath'/],
    [{ nodeAgent: { hostPID: 'yes' } }, /at '\/nodeAgent\/hostPID': got string, want boolean/],
    [{ controler: { replicas: 3 } }, /additional properties 'controler' not allowed/],
  ];
  for (const [values, names] of cases) {
    const r = await helmTemplate({ values });
    assert.notEqual(r.code, 0, `accepted ${JSON.stringify(values)}`);
    assert.match(r.stderr, /values don't meet the specifications of the schema/, r.stderr);
    assert.match(r.stderr, names, r.stderr);
  }
});

void test('the trust policy: off by default; when set, a ConfigMap holding it as JSON, mounted read-only into the node-agent and the controller and named by --trust-policy', async () => {
  const none = await renderChart();
  assert.ok(!none.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'worldline-trust-policy'));
  const [bare] = podSpec(findObject(none, 'DaemonSet', 'worldline-node-agent')).containers;
  assert.ok(!bare?.args.some((a) => a.startsWith('--trust-policy')), bare?.args.join(' '));

  const trustPolicy = {
    signers: [{ issuer: 'platform-team', publicKey: 'ab'.repeat(32), predicateTypes: ['https://worldline.dev/attestations/isolation-waiver/v1'], validFrom: '2026-12-01T00:00:00Z', validUntil: '2027-12-01T00:00:00Z' }],
    revocations: { issuedAt: '2026-12-03T00:00:00Z', maxAgeSeconds: 604800, revokedPublicKeys: [], revokedGrants: ['grant-1'] },
  };
  const objects = await renderChart({ values: { trustPolicy } });
  const cm = findObject(objects, 'ConfigMap', 'worldline-trust-policy') as unknown as K8sObject & { data: Record<string, string> };
  // What the node-agent reads parses back to exactly the values given.
  assert.deepEqual(JSON.parse(cm.data['policy.json'] ?? ''), trustPolicy);
  const spec = podSpec(findObject(objects, 'DaemonSet', 'worldline-node-agent'));
  const [c] = spec.containers;
  assert.ok(c?.args.includes('--trust-policy=/etc/worldline/trust/policy.json'), c?.args.join(' '));
  assert.deepEqual(c?.volumeMounts.find((m) => m.name === 'trust-policy'), { name: 'trust-policy', mountPath: '/etc/worldline/trust', readOnly: true });
  assert.deepEqual((spec.volumes.find((v) => v.name === 'trust-policy') as unknown as { configMap: unknown }).configMap, { name: 'worldline-trust-policy', defaultMode: 0o444 });
  // The controller reads it too: it pins the nodes' receipt keys when it records ledger heads.
  const ctl = podSpec(findObject(objects, 'Deployment', 'worldline-controller'));
  assert.ok(ctl.containers[0]?.args.includes('--trust-policy=/etc/worldline/trust/policy.json'), ctl.containers[0]?.args.join(' '));
  assert.deepEqual(ctl.containers[0]?.volumeMounts.find((m) => m.name === 'trust-policy'), { name: 'trust-policy', mountPath: '/etc/worldline/trust', readOnly: true });
  assert.deepEqual((ctl.volumes.find((v) => v.name === 'trust-policy') as unknown as { configMap: unknown }).configMap, { name: 'worldline-trust-policy', defaultMode: 0o444 });

  const bad = await helmTemplate({ values: { trustPolicy: { signer: [] } } });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /additional properties 'signer' not allowed/, bad.stderr);
});

void test('the collapse grant key: off by default; from a Secret, mounted into the controller alone and named by --grant-key; refused without a trust policy', async () => {
  const none = podSpec(findObject(await renderChart(), 'Deployment', 'worldline-controller'));
  assert.ok(!none.containers[0]?.args.some((a) => a.startsWith('--grant-key')), none.containers[0]?.args.join(' '));
  const trustPolicy = { signers: [], revocations: { issuedAt: '2026-12-03T00:00:00Z', maxAgeSeconds: 604800, revokedPublicKeys: [] } };
  const objects = await renderChart({ values: { trustPolicy, controller: { grantKey: { secretName: 'grant-key' } } } });
  const ctl = podSpec(findObject(objects, 'Deployment', 'worldline-controller'));
  assert.ok(ctl.containers[0]?.args.includes('--grant-key=/etc/worldline/grant/grant-key.pem'), ctl.containers[0]?.args.join(' '));
  assert.deepEqual(ctl.containers[0]?.volumeMounts.find((m) => m.name === 'grant-key'), { name: 'grant-key', mountPath: '/etc/worldline/grant', readOnly: true });
  assert.deepEqual((ctl.volumes.find((v) => v.name === 'grant-key') as unknown as { secret: unknown }).secret, { secretName: 'grant-key', items: [{ key: 'grant-key.pem', path: 'grant-key.pem' }], defaultMode: 0o440 });
  // The node-agents never see it.
  const agent = podSpec(findObject(objects, 'DaemonSet', 'worldline-node-agent'));
  assert.ok(!agent.volumes.some((v) => v.name === 'grant-key'));
  const bad = await helmTemplate({ values: { controller: { grantKey: { secretName: 'grant-key' } } } });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /controller.grantKey.secretName needs trustPolicy/, bad.stderr);
});
