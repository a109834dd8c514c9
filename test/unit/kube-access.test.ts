// The light cluster-access loader (kube/kube-access.ts) against the full @kubernetes/client-node
// KubeConfig: the same TLS material and credentials for each kind of kubeconfig it handles, the full
// KubeConfig for the kinds it does not, and the in-cluster service account (token read again on rotation).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../kube/client.js';
import { loadKubeAccess, type KubeAccess } from '../../kube/kube-access.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function applied(kc: KubeAccess): Promise<{ server?: string | undefined; ca?: unknown; authorization?: unknown } & Record<string, unknown>> {
  const o: https.RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(o);
  const str = (v: unknown): unknown => (Buffer.isBuffer(v) ? v.toString('utf8') : v);
  return {
    server: kc.getCurrentCluster()?.server,
    ca: str(o.ca), cert: str(o.cert), key: str(o.key),
    rejectUnauthorized: o.rejectUnauthorized, servername: o.servername, auth: o.auth,
    authorization: (o.headers as Record<string, unknown>).Authorization,
  };
}

function kubeconfig(dir: string, name: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'other', cluster: { server: 'https://wrong:1' } }, { name: 'k', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  }));
  return file;
}

test('kubeconfig files: the light loader applies what the full KubeConfig applies', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-access-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'ca.crt'), 'CA-FROM-FILE');
  fs.writeFileSync(path.join(dir, 'client.crt'), 'CERT-FROM-FILE');
  fs.writeFileSync(path.join(dir, 'client.key'), 'KEY-FROM-FILE');
  fs.writeFileSync(path.join(dir, 'token'), 'file-token');
  const cases = {
    inlineCerts: kubeconfig(dir, 'a', { server: 'https://h:6443/', 'certificate-authority-data': b64('CA') }, { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') }),
    relativeFiles: kubeconfig(dir, 'b', { server: 'https://h:6443', 'certificate-authority': 'ca.crt', 'tls-server-name': 'api.local' }, { 'client-certificate': 'client.crt', 'client-key': 'client.key' }),
    token: kubeconfig(dir, 'c', { server: 'https://h:6443', 'insecure-skip-tls-verify': true }, { token: 'tok' }),
    tokenFile: kubeconfig(dir, 'd', { server: 'https://h:6443' }, { 'token-file': path.join(dir, 'token') }),
    basic: kubeconfig(dir, 'e', { server: 'https://h:8443' }, { username: 'me', password: 'pw' }),
  };
  for (const [what, file] of Object.entries(cases)) {
    const light = await loadKubeAccess({ kubeconfig: file });
    assert.equal(light instanceof KubeConfig, false, `${what}: handled without the full KubeConfig`);
    assert.deepEqual(await applied(light), await applied(loadKubeConfig({ kubeconfig: file })), what);
  }
  assert.equal((await applied(await loadKubeAccess({ kubeconfig: cases.relativeFiles }))).cert, 'CERT-FROM-FILE');
});

test('kubeconfig files it does not handle load the full KubeConfig; a bad file is a clear error', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-access-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const exec = kubeconfig(dir, 'x', { server: 'https://h:6443' }, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/false' } });
  assert.ok((await loadKubeAccess({ kubeconfig: exec })) instanceof KubeConfig, 'exec plugin');
  const proxy = kubeconfig(dir, 'y', { server: 'https://h:6443', 'proxy-url': 'http://proxy:3128' }, { token: 't' });
  assert.ok((await loadKubeAccess({ kubeconfig: proxy })) instanceof KubeConfig, 'proxy');
  await assert.rejects(loadKubeAccess({ kubeconfig: path.join(dir, 'missing') }), /does not exist or is not readable/);
  const noContext = path.join(dir, 'z');
  fs.writeFileSync(noContext, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [], users: [], contexts: [] }));
  await assert.rejects(loadKubeAccess({ kubeconfig: noContext }), /has no current context\/cluster/);
});

test('in cluster: server from the environment, the CA and the service account token (re-read when rotated)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-access-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const sa = path.join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
  fs.mkdirSync(sa, { recursive: true });
  fs.writeFileSync(path.join(sa, 'token'), 'sa-token-1');
  fs.writeFileSync(path.join(sa, 'ca.crt'), 'SA-CA');
  const opts = { env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountTokenPath: path.join(sa, 'token') };
  const light = await loadKubeAccess(opts);
  const got = await applied(light);
  assert.deepEqual(got, { ...(await applied(loadKubeConfig(opts))), authorization: 'Bearer sa-token-1' });
  assert.equal(got.server, 'https://[fd00::1]:443');
  assert.equal(got.ca, 'SA-CA');
  fs.writeFileSync(path.join(sa, 'token'), 'sa-token-2');
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() + 61_000 });
  assert.equal((await applied(light)).authorization, 'Bearer sa-token-2', 'a rotated token is read again');
});
