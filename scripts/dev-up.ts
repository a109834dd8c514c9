// npm run dev:up — starts the local stack in the background: a real etcd + kube-apiserver with the
// worldline CRDs, and the controller. Idempotent: a running stack is reported, not restarted.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startControlPlane } from './controlplane/harness.js';
import { devPaths, repoRoot, type DevState } from './dev-paths.js';
import { alive } from './process-util.js';

const NAMESPACE = 'worldline-system';
/** The node the dev node-agent serves; examples/root.yaml names it. */
export const DEV_NODE = 'dev-node';

function running(): DevState | undefined {
  if (!existsSync(devPaths.state)) return undefined;
  const state = JSON.parse(readFileSync(devPaths.state, 'utf8')) as DevState;
  return state.pids.every((p) => alive(p.pid)) ? state : undefined;
}

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
    'Stop with: npm run dev:down',
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    throw new Error('the dev stack runs a node-agent, which mounts overlays and creates namespaces: run it as root');
  }
  const existing = running();
  if (existing) {
    console.log(usage(existing));
    return;
  }
  if (existsSync(devPaths.state)) {
    console.error('a previous dev stack is partly gone; cleaning it up first (npm run dev:down)');
    const { stopDevStack } = await import('./dev-down.js');
    await stopDevStack();
  }
  mkdirSync(devPaths.dir, { recursive: true });
  rmSync(devPaths.controlPlaneDir, { recursive: true, force: true });
  const cp = await startControlPlane({ dir: devPaths.controlPlaneDir, keep: true, crdDir: join(repoRoot, 'crds') });
  copyFileSync(cp.kubeconfigPath, devPaths.kubeconfig);
  mkdirSync(dirname(devPaths.kubectlLink), { recursive: true });
  rmSync(devPaths.kubectlLink, { force: true });
  symlinkSync(cp.binaries.kubectl, devPaths.kubectlLink);

  const ns = await cp.kubectl(['create', 'namespace', NAMESPACE]);
  if (ns.code !== 0 && !ns.stderr.includes('AlreadyExists')) throw new Error(`creating namespace ${NAMESPACE}: ${ns.stderr}`);

  const metricsPort = 18080;
  const log = openSync(devPaths.controllerLog, 'a');
  const controller = spawn(
    process.execPath,
    [join(repoRoot, 'dist', 'controller', 'main.js'), '--kubeconfig', devPaths.kubeconfig, '--namespace', NAMESPACE, '--metrics-bind', `127.0.0.1:${metricsPort}`],
    { detached: true, stdio: ['ignore', log, log], cwd: repoRoot },
  );
  controller.unref();
  if (controller.pid === undefined) throw new Error('could not start the controller');
  const agentPort = 19090;
  const agentLog = openSync(devPaths.agentLog, 'a');
  const agent = spawn(
    process.execPath,
    [join(repoRoot, 'dist', 'node-agent', 'main.js'), '--kubeconfig', devPaths.kubeconfig, '--namespace', NAMESPACE, '--node-name', DEV_NODE, '--store', devPaths.store, '--metrics-bind', `127.0.0.1:${agentPort}`],
    { detached: true, stdio: ['ignore', agentLog, agentLog], cwd: repoRoot },
  );
  agent.unref();
  if (agent.pid === undefined) throw new Error('could not start the node-agent');
  const state: DevState = {
    pids: [
      { name: 'etcd', pid: cp.pids.etcd },
      { name: 'kube-apiserver', pid: cp.pids.apiserver },
      { name: 'controller', pid: controller.pid },
      { name: 'node-agent', pid: agent.pid },
    ],
    server: cp.server,
    controllerMetrics: `http://127.0.0.1:${metricsPort}`,
    agentMetrics: `http://127.0.0.1:${agentPort}`,
    nodeName: DEV_NODE,
    kubectl: cp.binaries.kubectl,
    startedAt: new Date().toISOString(),
  };
  writeFileSync(devPaths.state, `${JSON.stringify(state, null, 2)}\n`);
  await waitHealthy(`${state.controllerMetrics}/readyz`, 60_000);
  await waitHealthy(`${state.agentMetrics}/readyz`, 60_000);
  console.log(usage(state));
}

main().catch((err: unknown) => {
  console.error(`dev:up failed: ${(err as Error).message}`);
  process.exit(1);
});
