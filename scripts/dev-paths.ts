// Where the local development stack keeps its state (under .worldline/dev/ in the work tree).
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');
/** WORLDLINE_DEV_DIR moves it (the dev-stack test uses a scratch directory, never a developer's stack). */
export const devDir = process.env['WORLDLINE_DEV_DIR'] ?? join(repoRoot, '.worldline', 'dev');
export const devPaths = {
  dir: devDir,
  kubeconfig: join(devDir, 'kubeconfig'),
  controlPlaneDir: join(devDir, 'controlplane'),
  state: join(devDir, 'state.json'),
  controllerLog: join(devDir, 'controller.log'),
  agentLog: join(devDir, 'node-agent.log'),
  /** The dev node-agent's store. dev:down keeps it: adopted Roots' host paths link into it. */
  store: join(devDir, 'store'),
  kubectlLink: join(devDir, 'bin', 'kubectl'),
};

/** What dev:up started, so dev:down stops exactly that. */
export interface DevState {
  pids: { name: string; pid: number }[];
  server: string;
  controllerMetrics: string;
  agentMetrics: string;
  nodeName: string;
  kubectl: string;
  startedAt: string;
}
