// npm run dev:up — starts the local stack in the background: a real etcd + kube-apiserver with the
// worldline CRDs, the controller and a node-agent. Idempotent, and it heals: whatever part is down is
// started again, the rest is left running, and nothing is deleted (etcd keeps its objects until
// `npm run dev:reset`, as a kind cluster keeps them until it is deleted).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startControlPlane, stopControlPlaneAt } from './controlplane/harness.js';
import { devPaths, repoRoot, type DevState } from './dev-paths.js';
import { alive } from './process-util.js';

const NAMESPACE = 'worldline-system';
/** The node the dev node-agent serves; examples/root.yaml names it. */
export const DEV_NODE = 'dev-node';

async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(200);
  }
  throw new Error(`${url} did not become healthy: ${last}`);
}

function usage(state: DevState): string {
  return [
    'worldline dev stack is up.',
    `  API server:  ${state.server}`,
    `  kubeconfig:  ${devPaths.kubeconfig}`,
    `  kubectl:     ${devPaths.kubectlLink} (v1.34, matches the API server)`,
    `  controller:  metrics ${state.controllerMetrics}/metrics, log ${devPaths.controllerLog}`,
    `  node-agent:  node "${state.nodeName}", store ${devPaths.store}, metrics ${state.agentMetrics}/metrics, log ${devPaths.agentLog}`,
    '',
    'Try:',
    `  export KUBECONFIG=${devPaths.kubeconfig} PATH=${dirname(devPaths.kubectlLink)}:$PATH`,
    '  kubectl apply -f examples/',
    '  kubectl get worldline',
    '  kubectl explain world.spec.agent',
    'Stop with: npm run dev:down (keeps every object); start afresh with: npm run dev:reset',
  ].join('\n');
}

const CONTROLLER_PORT = 18080;
const AGENT_PORT = 19090;

function previousState(): DevState | undefined {
  return existsSync(devPaths.state) ? (JSON.parse(readFileSync(devPaths.state, 'utf8')) as DevState) : undefined;
}

const pidOf = (state: DevState | undefined, name: string): number | undefined => state?.pids.find((p) => p.name === name)?.pid;
const isUp = (state: DevState | undefined, name: string): boolean => {
  const pid = pidOf(state, name);
  return pid !== undefined && alive(pid);
};

/** etcd + kube-apiserver: kept when both run; otherwise (re)started on the same directory, so etcd's data, the certificates and the ports stay. */
async function ensureControlPlane(prev: DevState | undefined): Promise<{ server: string; kubectl: string; etcd: number; apiserver: number; restarted: boolean }> {
  if (prev && isUp(prev, 'etcd') && isUp(prev, 'kube-apiserver')) {
    return { server: prev.server, kubectl: prev.kubectl, etcd: pidOf(prev, 'etcd')!, apiserver: pidOf(prev, 'kube-apiserver')!, restarted: false };
  }
  await stopControlPlaneAt(devPaths.controlPlaneDir); // whichever half still runs; its data stays
  const cp = await startControlPlane({ dir: devPaths.controlPlaneDir, keep: true, crdDir: join(repoRoot, 'crds') });
  copyFileSync(cp.kubeconfigPath, devPaths.kubeconfig);
  mkdirSync(dirname(devPaths.kubectlLink), { recursive: true });
  rmSync(devPaths.kubectlLink, { force: true });
  symlinkSync(cp.binaries.kubectl, devPaths.kubectlLink);
  const ns = await cp.kubectl(['create', 'namespace', NAMESPACE]);
  if (ns.code !== 0 && !ns.stderr.includes('AlreadyExists')) throw new Error(`creating namespace ${NAMESPACE}: ${ns.stderr}`);
  return { server: cp.server, kubectl: cp.binaries.kubectl, etcd: cp.pids.etcd, apiserver: cp.pids.apiserver, restarted: true };
}

function startDetached(component: 'controller' | 'node-agent', args: string[], logFile: string): number {
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [join(repoRoot, 'dist', component, 'main.js'), '--kubeconfig', devPaths.kubeconfig, '--namespace', NAMESPACE, ...args], { detached: true, stdio: ['ignore', log, log], cwd: repoRoot });
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start the ${component}`);
  return child.pid;
}

/**
 * Brings the stack up, starting only what is not running: etcd and kube-apiserver (on their kept data),
 * the controller, the node-agent (on its kept store). Nothing is deleted; `npm run dev:reset` does that.
 */
async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    throw new Error('the dev stack runs a node-agent, which mounts overlays and creates namespaces: run it as root');
  }
  const prev = previousState();
  mkdirSync(devPaths.dir, { recursive: true });
  const cp = await ensureControlPlane(prev);
  const started: string[] = cp.restarted ? ['etcd', 'kube-apiserver'] : [];
  let controller = pidOf(prev, 'controller');
  if (!isUp(prev, 'controller')) {
    controller = startDetached('controller', ['--metrics-bind', `127.0.0.1:${CONTROLLER_PORT}`], devPaths.controllerLog);
    started.push('controller');
  }
  let agent = pidOf(prev, 'node-agent');
  if (!isUp(prev, 'node-agent')) {
    agent = startDetached('node-agent', ['--node-name', DEV_NODE, '--store', devPaths.store, '--metrics-bind', `127.0.0.1:${AGENT_PORT}`], devPaths.agentLog);
    started.push('node-agent');
  }
  const state: DevState = {
    pids: [
      { name: 'etcd', pid: cp.etcd },
      { name: 'kube-apiserver', pid: cp.apiserver },
      { name: 'controller', pid: controller! },
      { name: 'node-agent', pid: agent! },
    ],
    server: cp.server,
    controllerMetrics: `http://127.0.0.1:${CONTROLLER_PORT}`,
    agentMetrics: `http://127.0.0.1:${AGENT_PORT}`,
    nodeName: DEV_NODE,
    kubectl: cp.kubectl,
    startedAt: prev && started.length < 4 ? prev.startedAt : new Date().toISOString(),
  };
  writeFileSync(devPaths.state, `${JSON.stringify(state, null, 2)}\n`);
  await waitHealthy(`${state.controllerMetrics}/readyz`, 60_000);
  await waitHealthy(`${state.agentMetrics}/readyz`, 60_000);
  console.log(started.length === 0 ? 'every part was already running.' : `started: ${started.join(', ')}${prev ? ' (the rest was running; data kept)' : ''}`);
  console.log(usage(state));
}

main().catch((err: unknown) => {
  console.error(`dev:up failed: ${(err as Error).message}`);
  process.exit(1);
});
