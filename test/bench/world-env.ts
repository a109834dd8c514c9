// The scratch world for the node-level benchmarks: a temporary directory holding a real node store
// with adopted Roots, World run specs built by the node-agent's own buildRunSpec, one-shot world runs
// through startWorldRun, and a cleanup that removes every mount, cgroup, store and file it made.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import * as native from '../../native/index.js';
import type { AgentConfig } from '../../node-agent/config.js';
import { detectCgroups, WorldCgroup, type CgroupLayout } from '../../node-agent/sandbox/cgroup.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { buildRunSpec, type LaunchContext } from '../../node-agent/worlds/world-launch.js';
import type { World } from '../../crds/index.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { startWorldRun, type WorldEvent, type WorldRunSpec } from '../../node-agent/worlds/run-world.js';
import { generateTree } from './tree-fixtures.js';

/** Owner of the generated trees (the operator's uid on a typical node); the workload runs as it. */
export const TREE_OWNER = { uid: 1000, gid: 1000 };
const ID_BASE = 2 ** 30;

export interface WorldEnv {
  readonly dir: string;
  readonly store: Store;
  /** Generates a tree of `files` files and adopts it as Root `name`; returns its host path. */
  adopt(name: string, files: number): Promise<string>;
  /** The WorldRunSpec the node-agent would build for a World with one Root and this command. */
  spec(root: string, worldUid: string, argv: string[]): Promise<WorldRunSpec>;
  /** Runs a world to its end; `on` sees every event as it is reported (and may time it). */
  run(spec: WorldRunSpec, on?: (e: WorldEvent, at: number) => Promise<void> | void): Promise<WorldEvent[]>;
  /** Removes every mount, cgroup and file of the benchmark; safe to call twice, synchronous. */
  cleanup(): void;
}

const AGENT_CONFIG: AgentConfig = {
  nodeName: 'bench-node',
  storeDir: '',
  namespace: 'worldline-system',
  metricsHost: '127.0.0.1',
  metricsPort: 0,
  idBase: ID_BASE,
  admissionRaw: {},
  observeProcDir: '/proc',
  cgroupRoot: '/sys/fs/cgroup',
  grantWaitSeconds: 30,
  launchStatusHoldMs: 250,
  collapseStatusHoldMs: 250,
  cgroupFavorDynmods: true,
  primeWatcher: true,
  compactAtDepth: 16,
  idSlots: 1,
  logLevel: 'error',
  defaultWallTimeSeconds: 600,
  defaultOutputBytes: 1024 * 1024,
};

export async function openWorldEnv(parent = '/var/tmp'): Promise<WorldEnv> {
  const dir = mkdtempSync(join(parent, 'wl-bench-'));
  const cgroups: CgroupLayout = detectCgroups();
  const worldUids: string[] = [];
  let store: Store | undefined;
  let cleaned = false;
  const cleanup = (): void => {
    if (cleaned) return;
    cleaned = true;
    // Deepest first; lazy detach so nothing busy can keep a mount of ours alive.
    for (let pass = 0; pass < 3 && mountsUnder(dir).length > 0; pass++) {
      for (const m of mountsUnder(dir)) {
        try {
          native.umount2(m, native.MNT_DETACH);
        } catch {
          /* retried on the next pass, reported below */
        }
      }
    }
    const left = mountsUnder(dir);
    for (const uid of worldUids) {
      const cg = WorldCgroup.attach(cgroups, 'worldline', `world-${uid}`);
      cg.killAll();
      cg.remove();
    }
    try {
      store?.close();
    } catch {
      /* already closed */
    }
    if (left.length > 0) {
      console.error(`bench cleanup: still mounted, leaving ${dir} in place: ${left.join(', ')}`);
      return;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // The node-agent's default: the PRIME watcher on (WORLDLINE_PRIME_WATCHER=off for an A/B run).
    const opened = await openStore({ dir: join(dir, 'store'), watchPrime: process.env.WORLDLINE_PRIME_WATCHER !== 'off' });
    if (opened.watcherError !== undefined) throw new Error(`the PRIME watcher did not start: ${opened.watcherError}`);
    store = opened.store;
  } catch (e) {
    cleanup();
    throw e;
  }
  const s = store;
  const ctx: LaunchContext = { store: s, kubeConfig: new KubeConfig(), config: AGENT_CONFIG, cgroups, agentNs: native.nsIds('self'), rootPaths: () => undefined };

  return {
    dir,
    store: s,
    async adopt(name, files) {
      const hostPath = join(dir, 'roots', name);
      generateTree(hostPath, files, TREE_OWNER);
      await adoptRoot(s, { name, hostPath });
      return hostPath;
    },
    async spec(root, worldUid, argv) {
      const world: Pick<World, 'metadata' | 'spec'> = {
        metadata: { uid: worldUid, namespace: 'bench', name: worldUid },
        spec: { roots: [root], agent: { command: argv }, resources: { wallTime: '10m' } },
      };
      return { ...(await buildRunSpec(world, ctx)).spec, idBase: ID_BASE };
    },
    async run(spec, on) {
      worldUids.push(spec.uid);
      const events: WorldEvent[] = [];
      const run = startWorldRun(spec, async (e) => {
        const at = performance.now();
        events.push(e);
        await on?.(e, at);
      });
      await run.finished;
      const last = events[events.length - 1];
      if (last?.type === 'failed') throw new Error(`world ${spec.uid} failed: ${last.code}: ${last.message}`);
      rmSync(spec.paths.output, { force: true });
      return events;
    },
    cleanup,
  };
}
