// The worldline image as users run it: built by scripts/images/build-local.sh (cached bases; docker's
// layer cache for the rest), then each process started from it in a real container. The controller runs
// as uid 65532 on a read-only root against a real kube-apiserver and takes the leader Lease; the
// node-agent runs as root, privileged, heartbeats, adopts a Root and runs a World (which sees the image's
// system directories); the native addon and better-sqlite3 load in the image and work on the real
// kernel. Needs root and a running dockerd (scripts/kind/host-prep.sh). `npm run test:images`; the first
// build takes about ten minutes (docs/images.md).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { requireRoot } from '../support/require-root.js';
import { getJson, kc, waitFor } from '../support/wait.js';
import { docker, runContainer, type Container } from './docker-run.js';

const exec = promisify(execFile);
const REPO = resolve(import.meta.dirname, '..', '..', '..');
const SMOKE = resolve(import.meta.dirname, 'addon-smoke.js');
const IN_IMAGE_SMOKE = '/app/dist/test/images/addon-smoke.js';
const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

let image = '';
const scratch = mkdtempSync(join(tmpdir(), 'worldline-image-test-'));
const containers: Container[] = [];
after(async () => {
  for (const c of containers) await c.remove();
  rmSync(scratch, { recursive: true, force: true });
});

before(async () => {
  requireRoot('the image tests (docker, privileged containers)');
  const info = await docker(['info', '--format', '{{.ServerVersion}}']);
  if (info.code !== 0) throw new Error(`dockerd is not answering (run scripts/kind/host-prep.sh as root): ${info.stderr}`);
  const { stdout } = await exec('bash', [join(REPO, 'scripts/images/build-local.sh')], { timeout: 3_600_000, maxBuffer: 16 * 1024 * 1024 });
  image = stdout.trim();
});

async function inspect(ref: string): Promise<Record<string, any>> {
  const r = await docker(['image', 'inspect', ref]);
  assert.equal(r.code, 0, `docker image inspect ${ref}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as Record<string, any>[])[0]!;
}

test('build-local.sh tags the package version and :dev; the image runs as 65532 and has no toolchain or dev dependencies', async () => {
  assert.equal(image, `worldline.local/worldline:${version}`);
  const img = await inspect(image);
  assert.equal(img.Id, (await inspect('worldline.local/worldline:dev')).Id, ':dev is the same image');
  assert.equal(img.Config.User, '65532:65532');
  assert.deepEqual(img.Config.Cmd, ['worldline-controller']);
  assert.equal(img.Config.Labels['org.opencontainers.image.version'], version);
  const present = await docker(['run', '--rm', '--entrypoint', 'stat', image, '/app/dist/controller/main.js']);
  assert.equal(present.code, 0, `stat works in the image and finds the controller: ${present.stderr}`);
  for (const absent of ['/usr/bin/gcc', '/usr/bin/make', '/usr/bin/python3', '/app/node_modules/typescript', '/app/dist/test']) {
    const r = await docker(['run', '--rm', '--entrypoint', 'stat', image, absent]);
    assert.notEqual(r.code, 0, `${absent} must not be in the runtime image`);
  }
});

test('the CLI answers --help with exit 0', async () => {
  const r = await docker(['run', '--rm', '--read-only', image, 'worldline', '--help']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /receipts verify/);
});

test('the controller with no cluster, as 65532 on a read-only root, exits 1 naming what is missing', async () => {
  const r = await docker(['run', '--rm', '--read-only', image]);
  assert.equal(r.code, 1);
  const line = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { level: string; error: string };
  assert.equal(line.level, 'error');
  assert.match(line.error, /no Kubernetes configuration found: pass --kubeconfig/);
});

describe('on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let kubeconfig = '';
  before(async () => {
    cp = await startControlPlane({ crdDir: join(REPO, 'crds'), quiet: true });
    await kc(cp, ['create', 'namespace', 'worldline-system']);
    // A self-contained copy the container's uid 65532 can read (the harness's directory is root's, 0700).
    const dir = mkdtempSync(join(scratch, 'kube-'));
    chmodSync(dir, 0o755);
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, await kc(cp, ['config', 'view', '--raw', '--flatten']), { mode: 0o644 });
  });
  after(async () => {
    await cp?.stop();
  });

  test('the controller runs as uid 65532 on a read-only root: leads, is ready, stops cleanly', async () => {
    const c = runContainer(
      ['--network', 'host', '--read-only', '--user', '65532:65532', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '-v', `${kubeconfig}:/etc/worldline/kubeconfig:ro`],
      image,
      ['worldline-controller', '--kubeconfig', '/etc/worldline/kubeconfig', '--metrics-bind', '127.0.0.1:0', '--identity', 'image-test-controller', '--lease-duration', '6'],
    );
    containers.push(c);
    const serving = await c.waitForLog('serving health and metrics', (r) => r.msg === 'serving health and metrics');
    await c.waitForLog('became leader', (r) => r.msg === 'became leader');
    const lease = await getJson(cp, ['get', 'lease', 'worldline-controller', '-n', 'worldline-system']);
    assert.equal(lease?.spec?.holderIdentity, 'image-test-controller');
    await waitFor('controller /readyz 200', async () => (await fetch(`http://127.0.0.1:${String(serving.port)}/readyz`)).status === 200, 30_000);
    const status = await docker(['exec', c.name, 'cat', '/proc/1/status']);
    assert.match(status.stdout, /^Uid:\s+65532\s+65532\s+65532\s+65532$/m);
    assert.match(status.stdout, /^CapEff:\s+0+$/m);
    const ro = await docker(['exec', c.name, 'touch', '/tmp/probe']);
    assert.notEqual(ro.code, 0, 'the root filesystem is read-only');
    assert.match(ro.stderr, /Read-only file system/);
    assert.equal(await c.stop(), 0, 'SIGTERM ends the controller with exit 0');
    assert.ok(!c.logs.some((l) => l.level === 'error'), `no error logged:\n${c.logs.map((l) => JSON.stringify(l)).join('\n')}`);
  });

  test('the node-agent as root, privileged, with the controller beside it: heartbeats, adopts a Root, runs a World on the image\'s tools', async () => {
    // Host paths mounted at the same paths, as a DaemonSet's hostPath volumes are: the adopted Root becomes
    // a link into the store, which must resolve on the host and in the container alike.
    const store = mkdtempSync(join(scratch, 'store-'));
    const roots = mkdtempSync(join(scratch, 'roots-'));
    const proj = join(roots, 'proj');
    mkdirSync(proj, { mode: 0o755 });
    writeFileSync(join(proj, 'a.txt'), 'alpha\n');
    chownSync(proj, 1000, 1000);
    chownSync(join(proj, 'a.txt'), 1000, 1000);
    const kube = ['-v', `${kubeconfig}:/etc/worldline/kubeconfig:ro`];
    const controller = runContainer(
      ['--network', 'host', '--read-only', '--user', '65532:65532', '--cap-drop', 'ALL', ...kube],
      image,
      ['worldline-controller', '--kubeconfig', '/etc/worldline/kubeconfig', '--metrics-bind', '127.0.0.1:0', '--identity', 'image-test-controller-2', '--lease-duration', '6'],
    );
    containers.push(controller);
    const agent = runContainer(
      ['--network', 'host', '--privileged', '--user', '0:0', ...kube, '-v', `${store}:${store}`, '-v', `${roots}:${roots}`],
      image,
      ['worldline-node-agent', '--kubeconfig', '/etc/worldline/kubeconfig', '--node-name', 'image-node', '--store', store, '--metrics-bind', '127.0.0.1:0'],
    );
    containers.push(agent);
    await agent.waitForLog('node-agent started', (r) => r.msg === 'node-agent started', 90_000);
    await waitFor('the node heartbeat Lease', () => getJson(cp, ['get', 'lease', 'worldline-node-image-node', '-n', 'worldline-system']), 30_000);
    await controller.waitForLog('became leader', (r) => r.msg === 'became leader', 60_000);

    await kc(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Root', metadata: { name: 'proj' }, spec: { nodeName: 'image-node', path: proj } }));
    const root = await waitFor('Root proj Ready or Broken', async () => {
      const r = await getJson(cp, ['get', 'root', 'proj']);
      return r?.status?.phase === 'Ready' || r?.status?.phase === 'Broken' ? r : undefined;
    }, 60_000);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));

    const script = [
      'set -e',
      'echo "a=$(cat a.txt)"',
      'echo "node=$(/usr/local/bin/node --version)"',
      'if [ -e /app ]; then echo app=visible; else echo app=absent; fi',
      'echo made > made-in-image.txt',
    ].join('\n');
    await kc(cp, ['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'worldline.dev/v1alpha1', kind: 'World', metadata: { name: 'in-image', namespace: 'default' },
      spec: { roots: ['proj'], agent: { command: ['/bin/sh', '-c', script] } },
    }));
    const world = await waitFor('World in-image ended', async () => {
      const w = await getJson(cp, ['get', 'world', 'in-image', '-n', 'default']);
      return ['Captured', 'Failed', 'Refused'].includes(w?.status?.phase) ? w : undefined;
    }, 120_000);
    const logPath = join(store, 'worlds', `${String(world.metadata.uid)}.output.log`);
    const output = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '(no output log)';
    assert.equal(world.status.phase, 'Captured', `${JSON.stringify(world.status)}\n--- output ---\n${output}`);
    assert.match(output, /^a=alpha$/m, 'the Root is visible in the world');
    const nodeInImage = await docker(['run', '--rm', image, 'node', '--version']);
    assert.match(output, new RegExp(`^node=${nodeInImage.stdout.trim()}$`, 'm'), "the world's /usr is the image's");
    assert.match(output, /^app=absent$/m, "worldline's own code (/app) is not bound into worlds");

    assert.equal(await agent.stop(), 0, 'SIGTERM ends the node-agent with exit 0');
    assert.equal(await controller.stop(), 0, 'SIGTERM ends the controller with exit 0');
  });
});

test('inside the image, as root in a privileged container, the addon and better-sqlite3 load and work', async () => {
  assert.ok(existsSync(SMOKE), `${SMOKE} missing: build first (npx tsc -p tsconfig.json)`);
  const dir = mkdtempSync(join(scratch, 'smoke-'));
  const r = await docker(['run', '--rm', '--privileged', '--user', '0:0', '-v', `${SMOKE}:${IN_IMAGE_SMOKE}:ro`, '-v', `${dir}:/smoke`, image, 'node', IN_IMAGE_SMOKE, '/smoke']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as Record<string, unknown>;
  const nodeInImage = await docker(['run', '--rm', image, 'node', '-p', 'process.versions.modules']);
  assert.equal(report.abi, nodeInImage.stdout.trim());
  assert.equal(report.uid, 0);
  assert.equal(report.idmappedUid, 201000, 'host uid 1000 seen through the idmapped mount');
  assert.equal(report.overlayWrote, true);
  assert.deepEqual(report.namespaces, ['cgroup', 'ipc', 'mnt', 'net', 'pid', 'user', 'uts']);
  assert.match(String(report.sqlite), /^3\.\d+\.\d+$/);
});
