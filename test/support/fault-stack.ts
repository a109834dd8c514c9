// A local worldline whose four processes can each be killed with SIGKILL and started again, for the
// fault campaign (test/faults): a real etcd + kube-apiserver (scripts/controlplane/harness.ts) with the
// CRDs, the controller and a node-agent as root on a temporary store. etcd comes back on its data
// directory, kube-apiserver on its certificates and port, the controller with its identity (it re-takes
// its lease), the node-agent on the same store. The controller and node-agent are started as every
// integration test starts them (controller-process.ts), with a start timeout fit for a loaded host.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, startNodeAgent, type ControllerProcess } from './controller-process.js';
import { restartable, type RestartableProcess } from './restartable-controlplane.js';
import { removeScratch } from './stack.js';
import { kc } from './wait.js';

/** The processes a fault can land on. */
export const COMPONENTS = ['controller', 'node-agent', 'kube-apiserver', 'etcd'] as const;
export type Component = (typeof COMPONENTS)[number];

type Supervised = 'controller' | 'node-agent';

export interface SelfExit {
  component: Supervised;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Its last log line (why it exited). */
  lastLog: string;
}

export interface FaultStack {
  cp: ControlPlane;
  nodeName: string;
  storeDir: string;
  scratch: string;
  controller(): ControllerProcess;
  agent(): ControllerProcess;
  /** Every node-agent started so far, the current one last (their logs, for a failure's explanation). */
  agents: ControllerProcess[];
  /** Exits of the controller or node-agent that no kill caused (each was started again). */
  selfExits: SelfExit[];
  /** Set when a supervised component could not be started again after its own exit. */
  supervisorError(): Error | undefined;
  /** SIGKILL to the node-agent, not started again (to read its store). */
  stopAgent(): Promise<void>;
  /** SIGKILL to `component`, `downMs` with it dead, then started again; resolves once it serves. */
  killAndRestart(component: Component, downMs: number): Promise<void>;
  stop(): Promise<void>;
}

const CONTROLLER_IDENTITY = 'faults-controller';
/** The node-agent's --compact-at-depth here. */
export const COMPACT_AT_DEPTH = 4;

export async function startFaultStack(nodeName = 'faults-node'): Promise<FaultStack> {
  const scratch = mkdtempSync(join(tmpdir(), 'worldline-faults-'));
  const storeDir = join(scratch, 'store');
  const cp = await startControlPlane({ crdDir: 'crds' });
  await kc(cp, ['create', 'namespace', 'worldline-system']);
  const etcd = restartable('etcd', cp.pids.etcd, join(cp.dir, 'etcd.log'), async () => {
    const res = await fetch(`${cp.etcdUrl}/health`);
    return res.ok && (await res.text()).includes('"health":"true"');
  });
  const apiserver = restartable('kube-apiserver', cp.pids.apiserver, join(cp.dir, 'kube-apiserver.log'), async () => (await cp.kubectl(['get', '--raw', '/readyz'])).code === 0);
  // Restarted dozens of times on two shared cores under `nice`, a component has been seen silent for 30 s.
  const start = { timeoutMs: 180_000 };
  const newController = (): Promise<ControllerProcess> =>
    startController({ kubeconfig: cp.kubeconfigPath, identity: CONTROLLER_IDENTITY, leaseDurationSeconds: 6, start });
  // Background compaction at a depth of 4 (16 by default), so that the campaign's Roots, a dozen collapses
  // deep, are compacted several times under the kills.
  const newAgent = (): Promise<ControllerProcess> =>
    startNodeAgent({ kubeconfig: cp.kubeconfigPath, nodeName, storeDir, extraArgs: ['--compact-at-depth', String(COMPACT_AT_DEPTH)], start: { ...start, ready: ['node-agent started'] } });
  // The controller and node-agent are supervised as their Deployment and DaemonSet would be: one that
  // exits by itself (the controller exits when it loses its lease, e.g. while kube-apiserver is down) is
  // started again, and the exit is recorded. Starts and kills of one component never overlap.
  const current: Partial<Record<Supervised, ControllerProcess>> = {};
  const agents: ControllerProcess[] = [];
  const selfExits: SelfExit[] = [];
  let stopping = false;
  let supervisorError: Error | undefined;
  const queue: Record<Supervised, Promise<unknown>> = { controller: Promise.resolve(), 'node-agent': Promise.resolve() };
  const serial = <T>(c: Supervised, fn: () => Promise<T>): Promise<T> => {
    const next = queue[c].then(fn);
    queue[c] = next.catch(() => undefined);
    return next;
  };
  const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const launch = async (c: Supervised): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const p = await (c === 'controller' ? newController() : newAgent());
        current[c] = p;
        if (c === 'node-agent') agents.push(p);
        void p.waitExit().then(({ code, signal }) => {
          if (p.killed || stopping) return;
          selfExits.push({ component: c, code, signal, lastLog: JSON.stringify(p.logs.at(-1) ?? null).slice(0, 300) });
          serial(c, () => launch(c)).catch((e: unknown) => {
            supervisorError = e instanceof Error ? e : new Error(String(e));
          });
        });
        return;
      } catch (e) {
        // As a kubelet would: a start that fails is tried again, a few times, with a growing pause.
        if (attempt >= 5 || stopping) throw e;
        await pause(2_000 * attempt);
      }
    }
  };
  await launch('controller');
  await launch('node-agent');
  const controlPlane: Record<'etcd' | 'kube-apiserver', RestartableProcess> = { etcd, 'kube-apiserver': apiserver };
  return {
    cp,
    nodeName,
    storeDir,
    scratch,
    controller: () => current.controller!,
    agent: () => current['node-agent']!,
    agents,
    selfExits,
    supervisorError: () => supervisorError,
    async killAndRestart(component, downMs) {
      if (component === 'controller' || component === 'node-agent') {
        await serial(component, async () => {
          await current[component]!.kill('SIGKILL');
          await pause(downMs);
          await launch(component);
        });
      } else {
        const p = controlPlane[component];
        await p.kill();
        await pause(downMs);
        await p.start();
      }
    },
    stopAgent: () => serial('node-agent', async () => void (await current['node-agent']!.kill('SIGKILL'))),
    async stop() {
      stopping = true;
      await current['node-agent']?.kill('SIGTERM');
      await current.controller?.kill('SIGTERM');
      await apiserver.stop();
      await etcd.stop();
      await cp.stop();
      await removeScratch(scratch);
    },
  };
}
