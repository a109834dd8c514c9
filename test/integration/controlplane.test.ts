// The real test control plane: pinned version, RBAC enforced with real service-account tokens, and no
// process left behind — neither after stop() nor after the owning process is killed with SIGKILL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { controlPlaneVersions, startControlPlane, stopControlPlaneAt, type ControlPlane } from '../../scripts/controlplane/harness.js';

const harnessUrl = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '../../scripts/controlplane/harness.js')).href;

/** Running (not gone, not a zombie awaiting its reaper). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\S+ \(.*\) [ZX]/s.test(stat);
  } catch {
    return false;
  }
}

async function waitGone(pids: number[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return pids.filter(alive);
}

interface ApiObject {
  kind?: string;
  reason?: string;
  status?: { userInfo?: { username?: string } };
}

function httpsJson(cp: ControlPlane, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: ApiObject }> {
  return new Promise((ok, bad) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${cp.server}${path}`,
      {
        method,
        ca: readFileSync(cp.tls.caFile),
        headers: { authorization: `Bearer ${token}`, ...(data ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => ok({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as ApiObject }));
      },
    );
    req.on('error', bad);
    req.end(data);
  });
}

let cp: ControlPlane;

let crdDir: string;

const WIDGET_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.worldline.dev
spec:
  group: test.worldline.dev
  scope: Namespaced
  names: { plural: widgets, singular: widget, kind: Widget }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer, minimum: 1 }
`;

before(async () => {
  crdDir = mkdtempSync(join(tmpdir(), 'worldline-cp-crds-'));
  writeFileSync(join(crdDir, 'widgets.yaml'), WIDGET_CRD);
  writeFileSync(join(crdDir, 'README.md'), 'not a manifest\n');
  cp = await startControlPlane({ quiet: true, crdDir });
});

after(async () => {
  await cp?.stop();
  rmSync(crdDir, { recursive: true, force: true });
});

void test('CRDs from crdDir are Established and validated by the server', async () => {
  const ok = await cp.kubectl(['apply', '-f', '-'], {
    input: 'apiVersion: test.worldline.dev/v1\nkind: Widget\nmetadata: { name: w1, namespace: default }\nspec: { size: 2 }\n',
  });
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await cp.kubectl(['apply', '-f', '-'], {
    input: 'apiVersion: test.worldline.dev/v1\nkind: Widget\nmetadata: { name: w2, namespace: default }\nspec: { size: 0 }\n',
  });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /spec\.size/);
});

void test('serves the pinned Kubernetes version, and kubectl is the same build', async () => {
  const pinned = controlPlaneVersions().kubernetes;
  const raw = await cp.kubectl(['get', '--raw', '/version']);
  assert.equal(raw.code, 0, raw.stderr);
  const server = JSON.parse(raw.stdout) as { gitVersion: string; major: string; minor: string };
  assert.equal(server.gitVersion, pinned);
  assert.equal(`v${server.major}.${server.minor}`, pinned.split('.').slice(0, 2).join('.'));
  const client = await cp.kubectl(['version', '--client', '-o', 'json']);
  assert.equal(client.code, 0, client.stderr);
  assert.equal((JSON.parse(client.stdout) as { clientVersion: { gitVersion: string } }).clientVersion.gitVersion, pinned);
});

void test('admin is system:masters via its client certificate', async () => {
  const who = await cp.kubectl(['auth', 'whoami', '-o', 'json']);
  assert.equal(who.code, 0, who.stderr);
  const info = (JSON.parse(who.stdout) as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
  assert.equal(info.username, 'admin');
  assert.ok(info.groups.includes('system:masters'));
});

void test('RBAC is enforced for a real service-account token', async () => {
  const ns = 'rbac-check';
  for (const args of [
    ['create', 'namespace', ns],
    ['-n', ns, 'create', 'serviceaccount', 'robot'],
  ]) {
    const r = await cp.kubectl(args);
    assert.equal(r.code, 0, r.stderr);
  }
  const tok = await cp.kubectl(['-n', ns, 'create', 'token', 'robot', '--duration=10m']);
  assert.equal(tok.code, 0, tok.stderr);
  const token = tok.stdout.trim();

  // The token is signed with the harness's key and authenticates as the service account ...
  const review = await httpsJson(cp, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', token, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  assert.equal(review.status, 201);
  assert.equal(review.json.status?.userInfo?.username, `system:serviceaccount:${ns}:robot`);

  // ... but may not list pods until RBAC says so.
  const denied = await httpsJson(cp, 'GET', `/api/v1/namespaces/${ns}/pods`, token);
  assert.equal(denied.status, 403);
  assert.equal(denied.json.reason, 'Forbidden');
  const canI = await cp.kubectl(['auth', 'can-i', 'list', 'pods', '-n', ns, `--as=system:serviceaccount:${ns}:robot`]);
  assert.equal(canI.stdout.trim(), 'no');
  assert.notEqual(canI.code, 0);
  const impersonated = await cp.kubectl(['get', 'pods', '-n', ns, '--as=someone']);
  assert.notEqual(impersonated.code, 0);
  assert.match(impersonated.stderr, /Forbidden/);

  // (A Role of our own: aggregated ClusterRoles such as `view` stay empty without kube-controller-manager.)
  const role = await cp.kubectl(['-n', ns, 'create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods']);
  assert.equal(role.code, 0, role.stderr);
  const bind = await cp.kubectl(['-n', ns, 'create', 'rolebinding', 'robot-reads-pods', '--role=pod-reader', `--serviceaccount=${ns}:robot`]);
  assert.equal(bind.code, 0, bind.stderr);
  // The RBAC authorizer sees the new binding through its informer: allow it a moment.
  let allowed = await httpsJson(cp, 'GET', `/api/v1/namespaces/${ns}/pods`, token);
  for (let i = 0; i < 100 && allowed.status === 403; i++) {
    await new Promise((r) => setTimeout(r, 100));
    allowed = await httpsJson(cp, 'GET', `/api/v1/namespaces/${ns}/pods`, token);
  }
  assert.equal(allowed.status, 200);
  assert.equal(allowed.json.kind, 'PodList');
});

void test('stop() leaves no etcd or kube-apiserver process and removes the directory', async () => {
  const other = await startControlPlane({ quiet: true });
  const pids = [other.pids.etcd, other.pids.apiserver];
  assert.ok(pids.every(alive));
  await other.stop();
  assert.deepEqual(pids.filter(alive), []);
  assert.equal(existsSync(other.dir), false);
  await other.stop(); // idempotent
});

void test('SIGKILL of the owning process leaves no orphan (pdeathsig)', async () => {
  const script = [
    `import { startControlPlane } from ${JSON.stringify(harnessUrl)};`,
    'const cp = await startControlPlane({ quiet: true });',
    'console.log(JSON.stringify({ pids: cp.pids, dir: cp.dir }));',
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((ok, bad) => {
    let buf = '';
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) ok(buf.slice(0, nl));
    });
    child.on('exit', (code) => bad(new Error(`child exited early with ${String(code)}`)));
  });
  const { pids, dir } = JSON.parse(line) as { pids: { etcd: number; apiserver: number }; dir: string };
  try {
    assert.ok(alive(pids.etcd) && alive(pids.apiserver));
    child.kill('SIGKILL');
    assert.deepEqual(await waitGone([pids.etcd, pids.apiserver], 10_000), []);
  } finally {
    for (const pid of [pids.etcd, pids.apiserver]) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('SIGTERM of the owning process stops the control plane and removes its directory', async () => {
  const script = [
    `import { startControlPlane } from ${JSON.stringify(harnessUrl)};`,
    'const cp = await startControlPlane({ quiet: true });',
    'console.log(JSON.stringify({ pids: cp.pids, dir: cp.dir }));',
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<NodeJS.Signals | null>((ok) => child.on('exit', (_code, signal) => ok(signal)));
  const line = await new Promise<string>((ok) => {
    let buf = '';
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) ok(buf.slice(0, nl));
    });
  });
  const { pids, dir } = JSON.parse(line) as { pids: { etcd: number; apiserver: number }; dir: string };
  child.kill('SIGTERM');
  assert.equal(await exited, 'SIGTERM');
  assert.deepEqual(await waitGone([pids.etcd, pids.apiserver], 10_000), []);
  assert.equal(existsSync(dir), false);
});

void test('keep: processes outlive the starting process and stopControlPlaneAt stops them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worldline-cp-keep-'));
  const script = [
    `import { startControlPlane } from ${JSON.stringify(harnessUrl)};`,
    `const cp = await startControlPlane({ quiet: true, keep: true, dir: ${JSON.stringify(dir)} });`,
    'console.log(JSON.stringify(cp.pids));',
  ].join('\n');
  try {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    const code = await new Promise<number | null>((ok) => child.on('close', (c) => ok(c)));
    assert.equal(code, 0);
    const pids = JSON.parse(out) as { etcd: number; apiserver: number };
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(alive(pids.etcd) && alive(pids.apiserver), 'kept processes must survive their starter');
    assert.ok(existsSync(join(dir, 'kubeconfig')) && existsSync(join(dir, 'pids.json')));
    assert.equal(await stopControlPlaneAt(dir), true);
    assert.deepEqual(await waitGone([pids.etcd, pids.apiserver], 10_000), []);
    assert.equal(await stopControlPlaneAt(dir), false);
  } finally {
    await stopControlPlaneAt(dir, { remove: true, graceMs: 0 });
  }
});

void test('a start-up failure is reported with the log tail, and nothing is left behind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worldline-cp-fail-'));
  try {
    const first = await startControlPlane({ quiet: true, keep: true, dir });
    await first.stop();
    writeFileSync(join(dir, 'pki', 'sa.key'), 'not a key\n'); // reused on the next start
    await assert.rejects(startControlPlane({ quiet: true, dir }), (e: Error) => {
      assert.match(e.message, /kube-apiserver \(pid \d+\) exited/);
      assert.match(e.message, /kube-apiserver log tail/);
      assert.match(e.message, /service-account-issuer-key-file/);
      return true;
    });
    assert.equal(existsSync(dir), false, 'a failed non-keep start removes its directory');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
