// A whole local worldline for integration tests: a real control plane with the CRDs, the controller
// and a node-agent (as root, on a temporary store), plus helpers to apply manifests and wait.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { detachLoopsUnder } from '../../node-agent/sandbox/disk-loop.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { startControlPlane, type ControlPlane } from '../../scripts/controlplane/harness.js';
import { startController, startNodeAgent, type ControllerProcess } from './controller-process.js';
import { getJson, kc, waitFor } from './wait.js';
import { killSupervisorsUnder } from './supervisors.js';

export interface Stack {
  cp: ControlPlane;
  controller: ControllerProcess;
  agent: ControllerProcess;
  nodeName: string;
  storeDir: string;
  /** A scratch directory for host-side fixtures (Root directories, canaries), removed at stop(). */
  scratch: string;
  apply(yaml: string): Promise<void>;
  get(kind: string, name: string, namespace?: string): Promise<Record<string, any> | undefined>;
  waitFor<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs?: number): Promise<T>;
  /** Waits until the World reaches one of the phases; returns it. */
  waitWorld(name: string, phases: string[], namespace?: string, timeoutMs?: number): Promise<Record<string, any>>;
  /**
   * Kills the node-agent (SIGKILL by default: its worlds die with it) and starts it again on the same store,
   * with `agentArgs` instead of the stack's when given (they then stay in force for later restarts), with
   * `env` added to its environment for this start only, after running `between` while no agent runs.
   */
  restartAgent(opts?: { agentArgs?: string[]; signal?: NodeJS.Signals; env?: Record<string, string>; between?: () => void | Promise<void> }): Promise<void>;
  stop(): Promise<void>;
}

/** `agentWrapper`: an argv prefix the node-agent is started through (see startComponent). */
export async function startStack(opts: { nodeName?: string; agentArgs?: string[]; agentWrapper?: string[]; controllerArgs?: string[] } = {}): Promise<Stack> {
  const nodeName = opts.nodeName ?? 'node-1';
  const scratch = mkdtempSync(join(tmpdir(), 'worldline-stack-'));
  const storeDir = join(scratch, 'store');
  const cp = await startControlPlane({ crdDir: 'crds' });
  let controller: ControllerProcess | undefined;
  try {
    await kc(cp, ['create', 'namespace', 'worldline-system']);
    controller = await startController({ kubeconfig: cp.kubeconfigPath, identity: 'stack-controller', ...(opts.controllerArgs ? { extraArgs: opts.controllerArgs } : {}) });
    return await assembleStack(opts, nodeName, scratch, storeDir, cp, controller);
  } catch (e) {
    // Nothing of a half-started stack may outlive the failure (the caller never gets a stop()).
    await controller?.kill('SIGKILL').catch(() => undefined);
    await cp.stop().catch(() => undefined);
    await removeScratch(scratch);
    throw e;
  }
}

async function assembleStack(
  opts: { agentArgs?: string[]; agentWrapper?: string[] },
  nodeName: string,
  scratch: string,
  storeDir: string,
  cp: ControlPlane,
  controller: ControllerProcess,
): Promise<Stack> {
  let agentArgs = opts.agentArgs;
  let agentEnv: Record<string, string> = {};
  const startAgent = (): Promise<ControllerProcess> => startNodeAgent({ kubeconfig: cp.kubeconfigPath, nodeName, storeDir, env: agentEnv, ...(agentArgs ? { extraArgs: agentArgs } : {}), ...(opts.agentWrapper ? { wrapper: opts.agentWrapper } : {}) });
  let agent = await startAgent();
  try {
    await agent.waitForLog((r) => r.msg === 'node-agent started', 120_000);
  } catch (e) {
    await agent.kill('SIGKILL').catch(() => undefined);
    throw e;
  }
  const stack: Stack = {
    cp,
    controller,
    get agent() {
      return agent;
    },
    nodeName,
    storeDir,
    scratch,
    async apply(yaml) {
      await kc(cp, ['apply', '-f', '-'], yaml);
    },
    get: (kind, name, namespace) => getJson(cp, ['get', kind, name, ...(namespace ? ['-n', namespace] : [])]),
    waitFor,
    async waitWorld(name, phases, namespace = 'default', timeoutMs = 60_000) {
      let seen = 'no World';
      try {
        return await waitFor(`World ${namespace}/${name} in ${phases.join('|')}`, async () => {
          const w = await getJson(cp, ['get', 'world', name, '-n', namespace]);
          if (w) seen = `phase ${String(w.status?.phase)}, reason ${String(w.status?.reason)}: ${String(w.status?.message)}`;
          return phases.includes(w?.status?.phase) ? w : undefined;
        }, timeoutMs);
      } catch (e) {
        // Name where the World stopped (a Failed or Refused World never reaches the phase waited for).
        throw new Error(`${(e as Error).message}; the World was at ${seen}`, { cause: e });
      }
    },
    async restartAgent(restart = {}) {
      await agent.kill(restart.signal ?? 'SIGKILL');
      if (restart.agentArgs) agentArgs = restart.agentArgs;
      // The environment applies to this start only (a test hook must not outlive its test).
      agentEnv = restart.env ?? {};
      await restart.between?.();
      agent = await startAgent();
      await agent.waitForLog((r) => r.msg === 'node-agent started', 120_000);
    },
    async stop() {
      await agent.kill('SIGTERM');
      // A graceful agent stop leaves its Worlds to their supervisors; a test stack ends them too.
      killSupervisorsUnder(storeDir);
      await controller.kill('SIGTERM');
      await cp.stop();
      await removeScratch(scratch);
    },
  };
  return stack;
}

/** Removes the scratch tree, first detaching anything still mounted in it (never recursing into a mount) and the loop devices of run disks in it. */
export async function removeScratch(dir: string): Promise<void> {
  for (const m of mountsUnder(dir)) native.umount2(m, native.MNT_DETACH);
  // A World still running when its agent stopped keeps its disk (node-agent/sandbox/disk-image.ts) attached.
  detachLoopsUnder(dir);
  const left = mountsUnder(dir);
  if (left.length > 0) throw new Error(`not removing ${dir}: still mounted: ${left.join(', ')}`);
  rmSync(dir, { recursive: true, force: true });
}
