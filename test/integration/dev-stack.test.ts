// The local dev stack survives a bad day: `dev:up` run again after a part died starts only that part and
// keeps every object (etcd's data is never deleted by it), `dev:down` stops without deleting, and only
// `dev:reset` deletes the control plane's data. Runs the real scripts as a user would, on a scratch
// directory (WORLDLINE_DEV_DIR), with the real controller and node-agent.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DevState } from '../../scripts/dev-paths.js';

const DIST = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'worldline-dev-'));
const env = { ...process.env, WORLDLINE_DEV_DIR: dir };

function script(name: 'dev-up' | 'dev-down', ...args: string[]): string {
  return execFileSync(process.execPath, [join(DIST, 'scripts', `${name}.js`), ...args], { env, encoding: 'utf8', timeout: 180_000 });
}
const state = (): DevState => JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as DevState;
const pid = (name: string): number => state().pids.find((p) => p.name === name)!.pid;
const alive = (p: number): boolean => {
  try {
    process.kill(p, 0);
    return true;
  } catch {
    return false;
  }
};
function kubectl(...args: string[]): string {
  return execFileSync(join(dir, 'bin', 'kubectl'), ['--kubeconfig', join(dir, 'kubeconfig'), ...args], { encoding: 'utf8' });
}
async function killAndWait(p: number): Promise<void> {
  process.kill(p, 'SIGKILL');
  while (alive(p)) await new Promise((r) => setTimeout(r, 50));
}

describe('the dev stack keeps its objects', () => {
  after(() => {
    try {
      script('dev-down', '--reset');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a dead node-agent is restarted alone; a dead API server comes back on the same etcd data; dev:down keeps, dev:reset deletes', async () => {
    script('dev-up');
    kubectl('create', 'configmap', 'keep-me', '-n', 'default', '--from-literal=k=v');
    const etcd = pid('etcd');
    const controller = pid('controller');

    // The node-agent dies: dev:up starts it alone.
    await killAndWait(pid('node-agent'));
    const out = script('dev-up');
    assert.match(out, /^started: node-agent \(the rest was running; data kept\)$/m, out);
    assert.equal(pid('etcd'), etcd, 'etcd was left running');
    assert.equal(pid('controller'), controller, 'the controller was left running');
    assert.ok(alive(pid('node-agent')));
    assert.match(kubectl('get', 'configmap', 'keep-me', '-n', 'default', '-o', 'jsonpath={.data.k}'), /^v$/);

    // The API server dies: the control plane comes back on the same etcd data.
    await killAndWait(pid('kube-apiserver'));
    const again = script('dev-up');
    assert.match(again, /^started: etcd, kube-apiserver /m, again);
    assert.equal(kubectl('get', 'configmap', 'keep-me', '-n', 'default', '-o', 'jsonpath={.data.k}'), 'v', 'the object survived the control plane restart');

    // dev:down stops everything and deletes nothing; the next dev:up finds the object.
    const pids = state().pids.map((p) => p.pid);
    script('dev-down');
    assert.deepEqual(pids.filter(alive), [], 'dev:down stopped every process');
    assert.ok(existsSync(join(dir, 'controlplane', 'etcd-data')), 'etcd data kept');
    script('dev-up');
    assert.equal(kubectl('get', 'configmap', 'keep-me', '-n', 'default', '-o', 'jsonpath={.data.k}'), 'v');

    // dev:reset deletes the control plane's data; the store stays.
    script('dev-down', '--reset');
    assert.equal(existsSync(join(dir, 'controlplane')), false);
    assert.ok(existsSync(join(dir, 'store')), 'the node-agent store stays');
  });
});
