// Reading a World through the Kubernetes API (issue 15, item 1): the controller serves the aggregated
// API view.worldline.dev behind a real kube-apiserver (front proxy with its own CA, aggregator routing
// to an endpoint on a test host address), asks the node-agent over the mutually authenticated node link,
// and authorizes each user with SubjectAccessReviews. Users are told apart by impersonation, which the
// API server turns into the front-proxy headers exactly as it does for a user's own credentials.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { createTestHostAddress, type TestHostAddress } from '../support/test-host-address.js';
import { viewEndpointsYaml, waitViewAvailable } from '../support/view-endpoints.js';
import { makeViewPki, signClientCert, type ViewPki } from '../support/view-pki.js';
import { applyRoot, hostProcesses, ownedDir, ownedFile, runWorld, shWorld, worldManifest } from '../support/worlds.js';

const NS = 'worldline-system';
const SERVICE = 'worldline-view';
const VIEW = '/apis/view.worldline.dev/v1alpha1/namespaces/default/worlds';

/** The Service and the APIService (the endpoints: view-endpoints.ts). */
function viewRegistration(pki: ViewPki, port: number): string {
  return `apiVersion: v1
kind: Service
metadata: { name: ${SERVICE}, namespace: ${NS} }
spec:
  ports: [{ name: https, port: 443, targetPort: ${port} }]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: { name: v1alpha1.view.worldline.dev }
spec:
  group: view.worldline.dev
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: { name: ${SERVICE}, namespace: ${NS}, port: 443 }
  caBundle: ${Buffer.from(pki.caPem).toString('base64')}
`;
}

/** RBAC for the test's users: alice may read Worlds and their log and diff; bob only the diff subresource. */
const RBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: world-reader, namespace: default }
rules:
- { apiGroups: [worldline.dev], resources: [worlds], verbs: [get, list] }
- { apiGroups: [view.worldline.dev], resources: [worlds/log, worlds/diff], verbs: [get] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: alice-reads, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: world-reader }
subjects: [{ apiGroup: rbac.authorization.k8s.io, kind: User, name: alice }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: diff-only, namespace: default }
rules:
- { apiGroups: [view.worldline.dev], resources: [worlds/diff], verbs: [get] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: bob-diffs, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: diff-only }
subjects: [{ apiGroup: rbac.authorization.k8s.io, kind: User, name: bob }]
`;

/**
 * RBAC for exec, with ServiceAccounts (their tokens drive the CLI, which has no impersonation): dana may
 * read Worlds and exec into them; erin may read them and their log but not exec; frank has the exec
 * subresource but may not read the World.
 */
const EXEC_RBAC = `apiVersion: v1
kind: ServiceAccount
metadata: { name: dana, namespace: default }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: erin, namespace: default }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: frank, namespace: default }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: world-exec, namespace: default }
rules:
- { apiGroups: [worldline.dev], resources: [worlds], verbs: [get] }
- { apiGroups: [view.worldline.dev], resources: [worlds/exec], verbs: [create] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: dana-execs, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: world-exec }
subjects: [{ kind: ServiceAccount, name: dana, namespace: default }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: erin-reads, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: world-reader }
subjects: [{ kind: ServiceAccount, name: erin, namespace: default }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: exec-only, namespace: default }
rules:
- { apiGroups: [view.worldline.dev], resources: [worlds/exec], verbs: [create] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: frank-execs, namespace: default }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: exec-only }
subjects: [{ kind: ServiceAccount, name: frank, namespace: default }]
`;

/** A plain HTTPS GET with the given client material (or none); resolves with the status and body, or the TLS error. */
function rawGet(url: string, tls: { ca: Buffer; cert?: Buffer; key?: Buffer; servername?: string }): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = https.get(url, { ...tls, checkServerIdentity: () => undefined }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
  });
}

/** An upgrade request straight to a server (no API server between); resolves with its refusal, or that it switched. */
function rawUpgrade(url: string, tls: { ca: Buffer; cert?: Buffer; key?: Buffer }, headers: Record<string, string>, method = 'POST'): Promise<{ status: number; body: string } | { switched: true } | { error: string }> {
  return new Promise((resolve) => {
    const req = https.request(url, { ...tls, method, headers, checkServerIdentity: () => undefined });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ switched: true });
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

/** Refuses, on World wq only, every status write that raises status.execs.count: the node-agent cannot record an exec there. */
const NO_EXEC_RECORDS = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: no-exec-records-on-wq }
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - { apiGroups: [worldline.dev], apiVersions: [v1alpha1], operations: [UPDATE], resources: [worlds/status] }
  validations:
  - expression: "object.metadata.name != 'wq' || !has(object.status.execs) || (has(oldObject.status) && has(oldObject.status.execs) && object.status.execs.count == oldObject.status.execs.count)"
    message: no new exec may be recorded on wq
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: no-exec-records-on-wq }
spec: { policyName: no-exec-records-on-wq, validationActions: [Deny] }
`;

describe('a World read through the Kubernetes API, authorized per user', () => {
  let s: Stack;
  let addr: TestHostAddress;
  let pkiDir: string;
  let pki: ViewPki;
  let viewPort: number;
  let agentViewAddress: string;

  before(async () => {
    addr = createTestHostAddress();
    pkiDir = mkdtempSync(join(tmpdir(), 'worldline-view-pki-'));
    pki = makeViewPki(pkiDir, `${SERVICE}.${NS}.svc`);
    s = await startStack({
      nodeName: 'view-node',
      agentArgs: ['--link-tls-dir', pki.agentLinkDir, '--view-bind', '127.0.0.1:0', '--view-address', '127.0.0.1'],
      controllerArgs: ['--view-tls-dir', pki.servingDir, '--link-tls-dir', pki.controllerLinkDir, '--view-bind', `${addr.host}:0`],
    });
    const listening = await s.controller.waitForLog((r) => r.msg === 'view API listening', 60_000);
    viewPort = Number(listening['port']);
    await s.apply(viewRegistration(pki, viewPort));
    await s.apply(viewEndpointsYaml(NS, SERVICE, addr.host, viewPort));
    await s.apply(RBAC);
    await waitViewAvailable(s.cp);
    const lease = await s.get('lease', 'worldline-node-view-node', NS);
    agentViewAddress = String(lease?.metadata?.annotations?.['worldline.dev/view-address']);

    const proj = join(s.scratch, 'proj');
    ownedDir(proj);
    ownedFile(join(proj, 'a.txt'), 'alpha\nbeta\n');
    ownedFile(join(proj, 'b.txt'), 'bravo\n');
    const root = await applyRoot(s, 'proj', proj);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    const r = await runWorld(s, 'w1', shWorld(['proj'], 'set -e\necho "hello from the agent"\necho gamma >> a.txt\nrm b.txt\necho new > n.txt'));
    assert.equal(r.status.phase, 'Captured', JSON.stringify(r.status));
  });

  after(async () => {
    await s?.stop();
    addr?.remove();
    if (pkiDir) rmSync(pkiDir, { recursive: true, force: true });
  });

  const raw = (path: string, as?: string) => s.cp.kubectl(['get', '--raw', path, ...(as ? [`--as=${as}`] : [])]);

  test('the node-agent advertises its view address on its heartbeat Lease', () => {
    assert.match(agentViewAddress, /^127\.0\.0\.1:\d+$/);
  });

  test('a user who may get the World reads its log and its diff (patch, stat, name-only)', async () => {
    const log = await raw(`${VIEW}/w1/log`, 'alice');
    assert.equal(log.code, 0, log.stderr);
    assert.equal(log.stdout, 'hello from the agent\n');

    const diff = await raw(`${VIEW}/w1/diff`, 'alice');
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, /--- a\/proj\/a\.txt\n\+\+\+ b\/proj\/a\.txt\n@@ -1,2 \+1,3 @@\n alpha\n beta\n\+gamma\n/);
    assert.match(diff.stdout, /deleted file[\s\S]*-bravo\n/);
    assert.match(diff.stdout, /new file[\s\S]*\+new\n/);

    const names = await raw(`${VIEW}/w1/diff?format=name-only`, 'alice');
    assert.equal(names.code, 0, names.stderr);
    assert.deepEqual(names.stdout.trim().split('\n').sort(), ['proj/a.txt', 'proj/b.txt', 'proj/n.txt']);

    const stat = await raw(`${VIEW}/w1/diff?format=stat`, 'alice');
    assert.equal(stat.code, 0, stat.stderr);
    assert.match(stat.stdout, /3 paths changed, 2 insertions\(\+\), 1 deletion\(-\)/);
  });

  test('a user with the diff subresource but without get on the World is refused by the view API, naming what is missing', async () => {
    const r = await raw(`${VIEW}/w1/diff`, 'bob');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /User "bob" cannot get worlds in worldline\.dev for World default\/w1/);
    assert.doesNotMatch(r.stderr + r.stdout, /gamma/);
  });

  test('a user with no grant at all is refused by the API server before the view API is asked', async () => {
    const r = await raw(`${VIEW}/w1/log`, 'carol');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /forbidden/i);
    assert.doesNotMatch(r.stderr, /hello from the agent/);
  });

  test('bad requests are refused by name: an unknown subresource, format or World', async () => {
    const sub = await raw(`${VIEW}/w1/secrets`);
    assert.notEqual(sub.code, 0);
    const fmt = await raw(`${VIEW}/w1/diff?format=html`);
    assert.match(fmt.stderr, /format must be one of patch, stat, name-only/);
    const missing = await raw(`${VIEW}/nope/diff`);
    assert.match(missing.stderr, /"nope" not found/);
  });

  test('nobody reaches the view API around the API server, nor a node-agent without the controller\'s certificate', async () => {
    const ca = Buffer.from(pki.caPem);
    // The controller's port with no client certificate (or one of another CA): anonymous, refused.
    const direct = await rawGet(`https://${addr.host}:${viewPort}${VIEW}/w1/log`, { ca });
    assert.ok('status' in direct && direct.status === 401, JSON.stringify(direct));
    const asAgent = await rawGet(`https://${addr.host}:${viewPort}${VIEW}/w1/log`, { ca, cert: readFileSync(join(pki.agentLinkDir, 'tls.crt')), key: readFileSync(join(pki.agentLinkDir, 'tls.key')) });
    assert.ok('status' in asAgent && asAgent.status === 401, JSON.stringify(asAgent));
    // The node-agent: without a client certificate, or with a node-agent's (a serving certificate), the
    // TLS handshake fails; a client certificate of the link CA that does not name the controller is refused.
    const url = `https://${agentViewAddress}/v1/namespaces/default/worlds/w1/log`;
    const noCert = await rawGet(url, { ca });
    assert.ok('error' in noCert, JSON.stringify(noCert));
    const peer = await rawGet(url, { ca, cert: readFileSync(join(pki.agentLinkDir, 'tls.crt')), key: readFileSync(join(pki.agentLinkDir, 'tls.key')) });
    assert.ok('error' in peer, JSON.stringify(peer));
    const impostor = await rawGet(url, { ca, ...signClientCert(pkiDir, 'mallory') });
    assert.ok('status' in impostor && impostor.status === 403, JSON.stringify(impostor));
    assert.match(impostor.body, /LINK_CLIENT_REFUSED/);
    // The controller's own link certificate is served (the positive control for the three refusals).
    const controller = await rawGet(url, { ca, cert: readFileSync(join(pki.controllerLinkDir, 'tls.crt')), key: readFileSync(join(pki.controllerLinkDir, 'tls.key')) });
    assert.ok('status' in controller && controller.status === 200 && controller.body === 'hello from the agent\n', JSON.stringify(controller));
  });

  test('following a running World\'s log streams what it prints until its run ends', async () => {
    await s.apply(worldManifest('w2', shWorld(['proj'], 'echo first\nsleep 3\necho second')));
    await s.waitWorld('w2', ['Running', 'Captured']);
    const started = Date.now();
    const r = await raw(`${VIEW}/w2/log?follow=true`, 'alice');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'first\nsecond\n');
    const w2 = await s.waitWorld('w2', ['Captured']);
    assert.equal(w2.status.phase, 'Captured');
    assert.ok(Date.now() - started < 60_000);
  });

  test('a World on a node without a live agent, without a view, or with an unreachable view is refused by name', async () => {
    const now = new Date().toISOString().replace(/Z$/, '000Z').replace(/\.(\d{3})000Z$/, '.$1000Z');
    // Two stand-in nodes: one whose agent serves no view (a live Lease without the address), one whose
    // advertised address answers nothing; a third node has no agent at all.
    for (const [node, address] of [['plain-node', undefined], ['gone-node', '127.0.0.1:1']] as const) {
      await s.apply(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: worldline-node-${node}
  namespace: ${NS}
  labels: { worldline.dev/component: node-agent, worldline.dev/node: ${node} }
${address ? `  annotations: { worldline.dev/view-address: "${address}" }\n` : ''}spec: { holderIdentity: test, leaseDurationSeconds: 3600, renewTime: "${now}" }
`);
    }
    for (const node of ['plain-node', 'gone-node', 'ghost-node']) {
      await s.apply(`apiVersion: worldline.dev/v1alpha1
kind: Root
metadata: { name: root-${node} }
spec: { nodeName: ${node}, path: /srv/${node} }
---
apiVersion: worldline.dev/v1alpha1
kind: World
metadata: { name: w-${node}, namespace: default }
spec: { roots: [root-${node}], agent: { command: [/bin/true] } }
`);
      // Stand in for that node's agent: its Root reads Ready (the controller binds a World to Ready Roots).
      const patched = await s.cp.kubectl(['patch', 'root', `root-${node}`, '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Ready"}}']);
      assert.equal(patched.code, 0, patched.stderr);
      await s.waitFor(`World w-${node} bound to ${node}`, async () => (await s.get('world', `w-${node}`))?.status?.nodeName === node, 30_000);
    }
    const plain = await raw(`${VIEW}/w-plain-node/log`);
    assert.match(plain.stderr, /VIEW_NOT_SERVED/);
    const gone = await raw(`${VIEW}/w-gone-node/log`);
    assert.match(gone.stderr, /NODE_AGENT_UNREACHABLE/);
    const ghost = await raw(`${VIEW}/w-ghost-node/diff`);
    assert.match(ghost.stderr, /NODE_AGENT_UNAVAILABLE/);
  });

  test('the node-agent names what it cannot serve: a World not on it, a format it does not know', async () => {
    const tls = { ca: Buffer.from(pki.caPem), cert: readFileSync(join(pki.controllerLinkDir, 'tls.crt')), key: readFileSync(join(pki.controllerLinkDir, 'tls.key')) };
    const notHere = await rawGet(`https://${agentViewAddress}/v1/namespaces/default/worlds/nope/diff`, tls);
    assert.ok('status' in notHere && notHere.status === 404 && /WORLD_NOT_ON_NODE/.test(notHere.body), JSON.stringify(notHere));
    const w1 = await s.get('world', 'w1');
    const replaced = await rawGet(`https://${agentViewAddress}/v1/namespaces/default/worlds/w1/diff?uid=00000000-0000-0000-0000-000000000000`, tls);
    assert.ok('status' in replaced && replaced.status === 404 && /WORLD_NOT_ON_NODE/.test(replaced.body), 'another uid under the same name is not this World');
    const format = await rawGet(`https://${agentViewAddress}/v1/namespaces/default/worlds/w1/diff?uid=${String(w1?.metadata?.uid)}&format=html`, tls);
    assert.ok('status' in format && format.status === 400 && /FORMAT_INVALID/.test(format.body), JSON.stringify(format));
  });

  test('a reader that leaves a followed log does not leave the log open on the node', async () => {
    await s.apply(worldManifest('w3', shWorld(['proj'], 'echo start\nsleep 300\necho never-read')));
    await s.waitWorld('w3', ['Running']);
    const w3 = await s.get('world', 'w3');
    const log = `${String(w3?.metadata?.uid)}.output.log`;
    const openLogs = (): number => readdirSync(`/proc/${s.agent.pid}/fd`).filter((fd) => {
      try {
        return readlinkSync(`/proc/${s.agent.pid}/fd/${fd}`).endsWith(log);
      } catch {
        return false;
      }
    }).length;
    const reader = spawn(s.cp.binaries.kubectl, ['--kubeconfig', s.cp.kubeconfigPath, 'get', '--raw', `${VIEW}/w3/log?follow=true`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let got = '';
    reader.stdout.on('data', (b: Buffer) => (got += b.toString()));
    await s.waitFor('the followed log to start', async () => got.includes('start\n') && openLogs() === 1, 30_000);
    // Not captured yet: its diff is refused by name.
    const early = await raw(`${VIEW}/w3/diff`);
    assert.match(early.stderr, /NOT_CAPTURED/);
    reader.kill('SIGKILL');
    await s.waitFor('the node-agent to close the log after its reader left', async () => openLogs() === 0, 15_000);
    await s.cp.kubectl(['delete', 'world', 'w3', '--wait=false']);
  });

  /** Runs the CLI (dist/cli/worldline.js) with a kubeconfig (the admin's by default), feeding `input` on its stdin. */
  const cli = (args: string[], o: { kubeconfig?: string; input?: string } = {}) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      // --kubeconfig right after the command: an exec's command follows --.
      const p = spawn(process.execPath, [join('dist', 'cli', 'worldline.js'), args[0]!, '--kubeconfig', o.kubeconfig ?? s.cp.kubeconfigPath, ...args.slice(1)], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (b: Buffer) => (out += b.toString()));
      p.stderr.on('data', (b: Buffer) => (err += b.toString()));
      p.on('close', (code) => resolve({ code, out, err }));
      p.stdin.end(o.input ?? '');
    });

  /** A kubeconfig that authenticates as ServiceAccount `sa` of default (a bound token). */
  const saKubeconfig = async (sa: string): Promise<string> => {
    const token = await s.cp.kubectl(['-n', 'default', 'create', 'token', sa]);
    assert.equal(token.code, 0, token.stderr);
    const path = join(pkiDir, `${sa}.kubeconfig`);
    writeFileSync(path, `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${s.cp.server}", certificate-authority: "${s.cp.tls.caFile}" } }]
users: [{ name: ${sa}, user: { token: "${token.stdout.trim()}" } }]
contexts: [{ name: c, context: { cluster: c, user: ${sa}, namespace: default } }]
current-context: c
`);
    return path;
  };

  describe('kubectl worldline exec', () => {
    let dana: string;
    let erin: string;
    let frank: string;
    const execsOf = async (name: string): Promise<{ count?: number; recent?: Record<string, any>[] } | undefined> => (await s.get('world', name))?.status?.execs;

    before(async () => {
      await s.apply(EXEC_RBAC);
      [dana, erin, frank] = [await saKubeconfig('dana'), await saKubeconfig('erin'), await saKubeconfig('frank')];
      // A World that prints who it runs as, then waits until something creates "release" beside it.
      await s.apply(worldManifest('wx', shWorld(['proj'], 'echo "workload uid $(id -u) pidns $(readlink /proc/self/ns/pid)"\nwhile [ ! -f release ]; do sleep 0.1; done\necho released')));
      await s.waitWorld('wx', ['Running']);
      await s.waitFor('the workload to start', async () => (await raw(`${VIEW}/wx/log`)).stdout.includes('workload uid'), 30_000);
    });

    test('a user allowed to exec runs a command inside the running World: its sandbox, identity and files; recorded on the World and in an Event; its change lands in the candidate', async () => {
      const r = await cli(['exec', 'wx', '--', 'sh', '-c', 'echo "exec uid $(id -u) pidns $(readlink /proc/self/ns/pid)"; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; cat a.txt; echo from-exec > added-by-exec.txt'], { kubeconfig: dana });
      assert.equal(r.code, 0, r.err);
      const log = (await raw(`${VIEW}/wx/log`)).stdout;
      const workload = /workload uid (\d+) pidns (\S+)/.exec(log);
      assert.ok(workload, log);
      assert.match(r.out, new RegExp(`^exec uid ${workload[1]} pidns ${workload[2]!.replace(/[[\]]/g, '\\$&')}$`, 'm'), 'the workload\'s uid and pid namespace');
      assert.match(r.out, /^CapEff:\t0{16}$/m);
      assert.match(r.out, /^CapBnd:\t0{16}$/m);
      assert.match(r.out, /^NoNewPrivs:\t1$/m);
      assert.match(r.out, /^alpha\nbeta$/m, 'the World\'s view of the Root');

      const seven = await cli(['exec', 'wx', '--', 'sh', '-c', 'echo to-stderr >&2; exit 7'], { kubeconfig: dana });
      assert.equal(seven.code, 7, `the command's exit status is the CLI's: ${seven.err}`);
      assert.equal(seven.err, 'to-stderr\n', 'stderr stays stderr');

      const piped = await cli(['exec', '-i', 'wx', '--', 'sh', '-c', 'read line; echo got=$line'], { kubeconfig: dana, input: 'hello world\n' });
      assert.equal(piped.code, 0, piped.err);
      assert.equal(piped.out, 'got=hello world\n');
      const tty = await cli(['exec', '-i', '-t', 'wx', '--', 'sh', '-c', 'test -t 0 && test -t 1 && echo on-a-terminal'], { kubeconfig: dana });
      assert.equal(tty.code, 0, tty.err);
      assert.match(tty.out, /on-a-terminal/);

      const execs = await s.waitFor('the exec records to show their ends', async () => {
        const e = await execsOf('wx');
        return e?.count === 4 && e.recent?.every((x) => x['finishedAt']) ? e : undefined;
      }, 30_000);
      const first = execs.recent![0]!;
      assert.equal(first['user'], 'system:serviceaccount:default:dana');
      assert.equal(first['command'][0], 'sh');
      assert.equal(first['exitCode'], 0);
      assert.equal(first['tty'], false);
      assert.equal(execs.recent![1]!['exitCode'], 7);
      assert.equal(execs.recent![3]!['tty'], true);
      const events = await s.cp.kubectl(['get', 'events', '-n', 'default', '--field-selector', 'reason=Exec', '-o', 'json']);
      const messages = (JSON.parse(events.stdout) as { items: { note?: string; message?: string; regarding?: { name?: string }; involvedObject?: { name?: string } }[] }).items
        .filter((e) => (e.regarding ?? e.involvedObject)?.name === 'wx')
        .map((e) => e.note ?? e.message ?? '');
      assert.ok(messages.some((m) => m.includes('system:serviceaccount:default:dana ran ["sh","-c"')), JSON.stringify(messages));

      // The exec ends the wait: the World is captured, and the file the exec wrote is in its candidate.
      const released = await cli(['exec', 'wx', '--', 'touch', 'release'], { kubeconfig: dana });
      assert.equal(released.code, 0, released.err);
      await s.waitWorld('wx', ['Captured']);
      const names = await raw(`${VIEW}/wx/diff?format=name-only`);
      assert.deepEqual(names.stdout.trim().split('\n').sort(), ['proj/added-by-exec.txt', 'proj/release']);
      assert.equal((await execsOf('wx'))?.count, 5);
    });

    test('exec is refused by name: without exec permission (by the API server), without get on the World (by the view API), into a World that no longer runs, and for a program the World lacks', async () => {
      const before = (await execsOf('w1'))?.count ?? 0;
      const noExec = await cli(['exec', 'w1', '--', 'true'], { kubeconfig: erin });
      assert.equal(noExec.code, 1);
      assert.match(noExec.err, /forbidden/i);
      const noGet = await cli(['exec', 'w1', '--', 'true'], { kubeconfig: frank });
      assert.equal(noGet.code, 1);
      assert.match(noGet.err, /cannot get worlds in worldline\.dev for World default\/w1/);
      const captured = await cli(['exec', 'w1', '--', 'true'], { kubeconfig: dana });
      assert.equal(captured.code, 1);
      assert.match(captured.err, /WORLD_NOT_RUNNING/);
      assert.equal((await execsOf('w1'))?.count ?? 0, before, 'nothing refused was recorded as run');

      await s.apply(worldManifest('wy', shWorld(['proj'], 'sleep 300')));
      await s.waitWorld('wy', ['Running']);
      const missing = await cli(['exec', 'wy', '--', '/no/such/program'], { kubeconfig: dana });
      assert.equal(missing.code, 1);
      assert.match(missing.err, /COMMAND_NOT_FOUND: .*\/no\/such\/program: no such program in the World/);
      const usage = await cli(['exec', 'wy'], { kubeconfig: dana });
      assert.equal(usage.code, 2);

      // At most four at once per World: a fifth is refused while they run.
      const long = [1, 2, 3, 4].map(() => spawn(process.execPath, [join('dist', 'cli', 'worldline.js'), 'exec', 'wy', '--kubeconfig', dana, '--', 'sleep', '1001'], { stdio: 'ignore' }));
      try {
        await s.waitFor('four execs running', async () => hostProcesses().filter((h) => h.cmdline.join(' ') === 'sleep 1001').length === 4, 30_000);
        const fifth = await cli(['exec', 'wy', '--', 'true'], { kubeconfig: dana });
        assert.equal(fifth.code, 1);
        assert.match(fifth.err, /EXEC_LIMIT/);
      } finally {
        for (const p of long) p.kill('SIGKILL');
      }
      await s.waitFor('the four execs ended', async () => hostProcesses().every((h) => h.cmdline.join(' ') !== 'sleep 1001'), 15_000);
      const afterLimit = await cli(['exec', 'wy', '--', 'true'], { kubeconfig: dana });
      assert.equal(afterLimit.code, 0, afterLimit.err);
      await s.cp.kubectl(['delete', 'world', 'wy', '--wait=false']);

      // A World at its process limit: the exec's process cannot be forked there, and the limit is named.
      await s.apply(worldManifest('wp', shWorld(['proj'], 'sleep 300 & sleep 300 & wait', { resources: { pids: 3 } })));
      await s.waitWorld('wp', ['Running']);
      await s.waitFor('wp to hold its three processes', async () => hostProcesses().filter((h) => h.cmdline.join(' ') === 'sleep 300').length >= 2, 30_000);
      const full = await cli(['exec', 'wp', '--', 'true'], { kubeconfig: dana });
      assert.equal(full.code, 1);
      assert.match(full.err, /EXEC_FAILED: .*clone3: EAGAIN \(the World is at its process limit, spec\.resources\.pids\)/);
      await s.cp.kubectl(['delete', 'world', 'wp', '--wait=false']);
    });

    test('an exec that cannot be recorded on the World does not run (EXEC_NOT_RECORDED)', async () => {
      await s.apply(worldManifest('wq', shWorld(['proj'], 'while [ ! -f release ]; do sleep 0.1; done')));
      await s.waitWorld('wq', ['Running']);
      await s.apply(NO_EXEC_RECORDS);
      try {
        // Until the API server enforces the policy, a probe runs (and is recorded); then every exec is refused.
        await s.waitFor('the policy to refuse exec records on wq', async () => /EXEC_NOT_RECORDED/.test((await cli(['exec', 'wq', '--', 'true'], { kubeconfig: dana })).err), 60_000);
        const refused = await cli(['exec', 'wq', '--', 'touch', 'should-not-exist'], { kubeconfig: dana });
        assert.equal(refused.code, 1);
        assert.match(refused.err, /EXEC_NOT_RECORDED: .*no new exec may be recorded on wq/);
      } finally {
        await s.cp.kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', 'no-exec-records-on-wq']);
      }
      const listed = await s.waitFor('execs on wq recorded again', async () => {
        const r = await cli(['exec', 'wq', '--', 'ls'], { kubeconfig: dana });
        return r.code === 0 ? r : undefined;
      }, 60_000);
      assert.doesNotMatch(listed.out, /should-not-exist/, 'the refused command never ran');
      assert.match(listed.out, /a\.txt/, 'control: ls lists the World\'s Root');
      assert.equal((await cli(['exec', 'wq', '--', 'touch', 'release'], { kubeconfig: dana })).code, 0);
      await s.waitWorld('wq', ['Captured']);
    });

    test('the node-agent serves an exec upgrade only to the controller, and names a malformed one', async () => {
      const w = await s.get('world', 'wx');
      const base = `https://${agentViewAddress}/v1/namespaces/default/worlds/wx/exec`;
      const ok = { ca: Buffer.from(pki.caPem), cert: readFileSync(join(pki.controllerLinkDir, 'tls.crt')), key: readFileSync(join(pki.controllerLinkDir, 'tls.key')) };
      const upgrade = { Connection: 'Upgrade', Upgrade: 'worldline-exec.v1', 'X-Worldline-User': 'test' };
      const q = `uid=${String(w?.metadata?.uid)}&command=true`;
      const impostor = await rawUpgrade(`${base}?${q}`, { ca: ok.ca, ...signClientCert(pkiDir, 'mallory') }, upgrade);
      assert.ok('status' in impostor && impostor.status === 403 && /LINK_CLIENT_REFUSED/.test(impostor.body), JSON.stringify(impostor));
      const get = await rawUpgrade(`${base}?${q}`, ok, upgrade, 'GET');
      assert.ok('status' in get && get.status === 404 && /UPGRADE_NOT_SERVED/.test(get.body), JSON.stringify(get));
      const proto = await rawUpgrade(`${base}?${q}`, ok, { ...upgrade, Upgrade: 'websocket' });
      assert.ok('status' in proto && proto.status === 400 && /PROTOCOL_INVALID/.test(proto.body), JSON.stringify(proto));
      const noCommand = await rawUpgrade(`${base}?uid=${String(w?.metadata?.uid)}`, ok, upgrade);
      assert.ok('status' in noCommand && noCommand.status === 400 && /COMMAND_INVALID/.test(noCommand.body), JSON.stringify(noCommand));
      const { 'X-Worldline-User': _user, ...anonymous } = upgrade;
      const noUser = await rawUpgrade(`${base}?${q}`, ok, anonymous);
      assert.ok('status' in noUser && noUser.status === 400 && /USER_MISSING/.test(noUser.body), JSON.stringify(noUser));
      const captured = await rawUpgrade(`${base}?${q}`, ok, upgrade);
      assert.ok('status' in captured && captured.status === 409 && /WORLD_NOT_RUNNING/.test(captured.body), 'wx is Captured by now: ' + JSON.stringify(captured));
    });

    test('an exec whose client goes away is ended: nothing it started stays in the World', async () => {
      await s.apply(worldManifest('wz', shWorld(['proj'], 'sleep 300')));
      await s.waitWorld('wz', ['Running']);
      const p = spawn(process.execPath, [join('dist', 'cli', 'worldline.js'), 'exec', 'wz', '--kubeconfig', dana, '--', 'sh', '-c', 'echo started; exec sleep 1000'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (b: Buffer) => (out += b.toString()));
      await s.waitFor('the exec to start', async () => out.includes('started'), 30_000);
      const sleepers = (): number => hostProcesses().filter((h) => h.cmdline.join(' ') === 'sleep 1000').length;
      assert.equal(sleepers(), 1);
      p.kill('SIGKILL');
      await s.waitFor('the exec to be ended on the node', async () => sleepers() === 0, 15_000);
      const e = await s.waitFor('its end recorded', async () => {
        const r = (await execsOf('wz'))?.recent?.[0];
        return r?.['finishedAt'] ? r : undefined;
      }, 15_000);
      assert.equal(e['signal'], 'SIGKILL');
      await s.cp.kubectl(['delete', 'world', 'wz', '--wait=false']);
    });
  });

  test('kubectl-worldline diff --stat and logs print through the same path', async () => {
    const stat = await cli(['diff', 'w1', '--stat', '-n', 'default']);
    assert.equal(stat.code, 0, stat.err);
    assert.match(stat.out, /proj\/a\.txt/);
    assert.match(stat.out, /3 paths changed, 2 insertions\(\+\), 1 deletion\(-\)/);
    const logs = await cli(['logs', 'w1']);
    assert.equal(logs.code, 0, logs.err);
    assert.equal(logs.out, 'hello from the agent\n');
    const missing = await cli(['diff', 'nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /"nope" not found/);
  });
});
