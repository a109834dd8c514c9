import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { collectionPath, objectPath, statusPath } from '../../kube/api-paths.js';
import { loadKubeConfig } from '../../kube/client.js';
import { createLogger } from '../../kube/logger.js';
import { apiVersionOf, objectKey, splitKey, type ResourceRef } from '../../kube/resource-ref.js';
import { onShutdown } from '../../kube/shutdown.js';

const world: ResourceRef = { group: 'worldline.dev', version: 'v1alpha1', plural: 'worlds', kind: 'World', namespaced: true };
const root: ResourceRef = { group: 'worldline.dev', version: 'v1alpha1', plural: 'roots', kind: 'Root', namespaced: false };
const cm: ResourceRef = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };

test('api paths: table', () => {
  const cases: [string, string][] = [
    [collectionPath(world, 'team-a'), '/apis/worldline.dev/v1alpha1/namespaces/team-a/worlds'],
    [collectionPath(world), '/apis/worldline.dev/v1alpha1/worlds'],
    [collectionPath(root, 'ignored'), '/apis/worldline.dev/v1alpha1/roots'],
    [objectPath(world, 'w1', 'team-a'), '/apis/worldline.dev/v1alpha1/namespaces/team-a/worlds/w1'],
    [statusPath(root, 'r1'), '/apis/worldline.dev/v1alpha1/roots/r1/status'],
    [objectPath(cm, 'a b', 'ns'), '/api/v1/namespaces/ns/configmaps/a%20b'],
    [statusPath(cm, 'x', 'ns'), '/api/v1/namespaces/ns/configmaps/x/status'],
  ];
  for (const [got, want] of cases) assert.equal(got, want);
  assert.throws(() => objectPath(world, 'w1'), /namespace required/);
  assert.equal(apiVersionOf(cm), 'v1');
  assert.equal(apiVersionOf(world), 'worldline.dev/v1alpha1');
});

test('object keys round-trip', () => {
  assert.equal(objectKey({ metadata: { namespace: 'ns', name: 'a' } }), 'ns/a');
  assert.equal(objectKey({ metadata: { name: 'r' } }), 'r');
  assert.deepEqual(splitKey('ns/a'), { namespace: 'ns', name: 'a' });
  assert.deepEqual(splitKey('r'), { name: 'r' });
});

test('logger: one JSON line per record, level filter, child fields, errors serialised', () => {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)));
  const log = createLogger('controller', { level: 'info', stream });
  log.debug('hidden');
  log.info('hello', { key: 'ns/a' });
  log.child({ controller: 'World' }).error('failed', { err: new Error('boom'), level: 'spoofed' });
  assert.equal(lines.length, 2);
  const [a, b] = lines.map((l) => JSON.parse(l) as Record<string, any>) as [Record<string, any>, Record<string, any>];
  assert.equal(a.level, 'info');
  assert.equal(a.component, 'controller');
  assert.equal(a.msg, 'hello');
  assert.equal(a.key, 'ns/a');
  assert.ok(!Number.isNaN(Date.parse(String(a.time))));
  assert.equal(b.level, 'error');
  assert.equal(b.controller, 'World');
  assert.equal(b.err.message, 'boom');
});

test('loadKubeConfig: explicit > KUBECONFIG > in-cluster > ~/.kube/config, clear error otherwise', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wl-kc-'));
  try {
    const write = (file: string, server: string) => {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`);
    };
    const explicit = path.join(dir, 'explicit');
    const fromEnv = path.join(dir, 'env');
    const home = path.join(dir, 'home');
    write(explicit, 'https://explicit:6443');
    write(fromEnv, 'https://env:6443');
    write(path.join(home, '.kube', 'config'), 'https://home:6443');
    const saRoot = path.join(dir, 'sa');
    const token = path.join(saRoot, 'var/run/secrets/kubernetes.io/serviceaccount/token');
    fs.mkdirSync(path.dirname(token), { recursive: true });
    fs.writeFileSync(token, 'tok');
    const inCluster = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const server = (o: Parameters<typeof loadKubeConfig>[0]) => loadKubeConfig(o).getCurrentCluster()?.server;

    assert.equal(server({ kubeconfig: explicit, env: { KUBECONFIG: fromEnv }, homeDir: home }), 'https://explicit:6443');
    assert.equal(server({ env: { KUBECONFIG: fromEnv, ...inCluster }, serviceAccountTokenPath: token, homeDir: home }), 'https://env:6443');
    assert.equal(server({ env: inCluster, serviceAccountTokenPath: token, homeDir: home }), 'https://10.0.0.1:443');
    assert.equal(server({ env: {}, serviceAccountTokenPath: token, homeDir: home }), 'https://home:6443');
    assert.throws(() => loadKubeConfig({ env: {}, serviceAccountTokenPath: path.join(dir, 'none'), homeDir: path.join(dir, 'nohome') }), /no Kubernetes configuration found/);
    assert.throws(() => loadKubeConfig({ kubeconfig: path.join(dir, 'missing') }), /does not exist/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('onShutdown: runs once on the first signal, exits 0; exits 1 on error or timeout', async () => {
  const run = async (fn: () => Promise<void>, timeoutMs = 1000): Promise<number> => {
    const sig = 'SIGUSR2';
    let calls = 0;
    const keepAlive = setInterval(() => undefined, 1000); // the hard-timeout timer is unref'd
    const code = await new Promise<number>((resolve) => {
      onShutdown(async () => { calls++; await fn(); }, undefined, { signals: [sig], timeoutMs, exit: resolve });
      process.emit(sig, sig);
      process.emit(sig, sig);
    });
    clearInterval(keepAlive);
    process.removeAllListeners(sig);
    assert.equal(calls, 1);
    return code;
  };
  assert.equal(await run(async () => undefined), 0);
  assert.equal(await run(async () => { throw new Error('x'); }), 1);
  assert.equal(await run(() => new Promise(() => undefined), 20), 1);
});
