// Benchmark: collapse latency on a real stack (kube-apiserver + etcd, controller, node-agent as root). For a
// Root of N files, a World changes 10 files (5 modified, 5 added), is captured, and a Collapse of it is
// created; measured is Collapse created → status.phase Committed as the bench's own watch sees it. The
// Root has no Policy, so no checks run and none are waited for. Every collapse moves PRIME, so each
// repetition forks a new World from the generation the previous one made.
//
// The watch also gives the steps in between: status.nodeName (the controller bound it), phase Preparing
// (the node-agent took it), Authorized (PRIME re-hashed, the decision made) and Committed (staged, walked
// again, exchanged, receipted). Next to it, per repetition: `cp -a` + `sha256sum` of the 10 changed
// files, and one raw API write (a ConfigMap create) with the time until a watch delivers it.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { resources } from '../../crds/index.js';
import type { ResourceRef } from '../../kube/resource-ref.js';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot } from '../support/worlds.js';
import { median, percentile, settle, timeSync } from './stats.js';
import { changedFiles, generateTree, runArgv } from './tree-fixtures.js';
import { WatchTimes } from './watch-times.js';
import { CpuAccount } from './cpu-times.js';
import { RequestAccount } from './api-requests.js';
import { KubeHttpClient } from '../../kube/http.js';
import { createObject } from './bench-clients.js';
import { TREE_OWNER } from './world-env.js';

const NS = 'default';
const FINAL_WORLD_PHASES = ['Captured', 'Failed', 'Refused'];
const CONFIG_MAPS: ResourceRef = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

/** `$0` is the repetition's tag: the first 5 files get it appended, the other 5 are created with it. */
const CHANGE_SCRIPT = 'n=0; for f in "$@"; do n=$((n+1)); if [ "$n" -le 5 ]; then echo "$0" >> "$f"; else echo "$0" > "$f"; fi; done';

/** The 10-file change of repetition `rep`: 5 existing files spread over the tree, 5 new files next to 5 others (distinct in a small tree too). */
export function tenFileChange(files: number, rep: number): { modified: string[]; added: string[] } {
  const spread = changedFiles(files, 10);
  return {
    modified: spread.slice(0, 5),
    added: spread.slice(5).map((p, i) => `${p.slice(0, p.lastIndexOf('/'))}/new-${rep}-${i}.txt`),
  };
}

/** The agent command that makes the change. */
export function changeCommand(files: number, rep: number): string[] {
  const c = tenFileChange(files, rep);
  return ['/bin/sh', '-c', CHANGE_SCRIPT, `rep-${rep}`, ...c.modified, ...c.added];
}

/** The baseline: `cp -a --parents` of the 10 changed files out of `fromDir`, then `sha256sum` of the copies. */
export function copyAndHash(fromDir: string, rel: readonly string[], scratch: string): { cpMs: number; sha256sumMs: number } {
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  settle();
  const cpMs = timeSync(() => runArgv(['cp', '-a', '--parents', '--', ...rel, scratch], fromDir));
  const sha256sumMs = timeSync(() => runArgv(['sha256sum', '--', ...rel.map((p) => join(scratch, p))]));
  rmSync(scratch, { recursive: true, force: true });
  return { cpMs, sha256sumMs };
}

export interface StackCollapseSamples {
  /** Collapse created → phase Committed (as the bench's watch delivers it). */
  totalMs: number[];
  /** Created → status.nodeName (the controller's binding write). */
  boundMs: number[];
  /** Created → phase Preparing (the node-agent's first write). */
  preparingMs: number[];
  /** Created → phase Authorized. */
  authorizedMs: number[];
  cpMs: number[];
  sha256sumMs: number[];
  /** One ConfigMap create, request → response. */
  apiCreateMs: number[];
  /** The same create, request → the bench's watch delivering it. */
  apiSeenMs: number[];
  /** CPU spent from the create until Committed is seen, by process and by the whole machine (cpu-times.ts). */
  cpu?: CpuAccount;
  /** The API requests of the same windows, as the API server counts them (api-requests.ts). */
  requests?: RequestAccount;
}

export const noStackCollapseSamples = (): StackCollapseSamples => ({ totalMs: [], boundMs: [], preparingMs: [], authorizedMs: [], cpMs: [], sha256sumMs: [], apiCreateMs: [], apiSeenMs: [] });

export interface CollapseTarget {
  files: number;
  root: string;
  /** The Root's host path (a link to the live generation once adopted). */
  hostPath: string;
}

export interface CollapseStackEnv {
  readonly stack: Stack;
  /** Generates a tree of `files` files and applies it as Root `name`, waiting until it is Ready. */
  adopt(name: string, files: number): Promise<string>;
  /** One repetition: World → Captured (untimed), then the timed Collapse, then the baselines. */
  round(t: CollapseTarget, s: StackCollapseSamples): Promise<void>;
  /** The same processes' CPU over `seconds` with nothing asked of the stack: the background, per second. */
  idleCpu(seconds: number): Promise<ReturnType<CpuAccount['result']>>;
  close(): Promise<void>;
}

type Obj = KubernetesObject & { status?: Record<string, any> };

export async function openCollapseStack(): Promise<CollapseStackEnv> {
  const stack = await startStack({ nodeName: 'bench-node' });
  const watches: WatchTimes<Obj>[] = [];
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(stack.cp.kubeconfigPath);
    const watch = (r: ResourceRef): WatchTimes<Obj> => {
      const w = new WatchTimes<Obj>(kubeConfig, r, NS);
      watches.push(w);
      return w;
    };
    const worlds = watch(resources.World);
    const collapses = watch(resources.Collapse);
    const configMaps = watch(CONFIG_MAPS);
    await Promise.all(watches.map((w) => w.start()));
    let seq = 0;
    const http = new KubeHttpClient(kubeConfig);
    const components = { etcd: stack.cp.pids.etcd, apiserver: stack.cp.pids.apiserver, controller: stack.controller.pid, 'node-agent': stack.agent.pid };

    const runWorld = async (t: CollapseTarget, name: string, rep: number): Promise<void> => {
      let world: Obj | undefined;
      const final = worlds.follow(`${NS}/${name}`, (w) => {
        if (!FINAL_WORLD_PHASES.includes(w.status?.phase)) return false;
        world = w;
        return true;
      }, 15 * 60_000, `World ${name} to end`);
      await createObject(http, resources.World, NS, { metadata: { name }, spec: { roots: [t.root], agent: { command: changeCommand(t.files, rep) } } });
      await final;
      const c = world?.status?.candidate;
      if (world?.status?.phase !== 'Captured' || c?.modified !== 5 || c?.added !== 5 || c?.deleted !== 0) {
        throw new Error(`World ${name} did not capture the 10-file change: ${JSON.stringify(world?.status)}`);
      }
    };

    return {
      stack,
      async adopt(name, files) {
        const hostPath = join(stack.scratch, 'roots', name);
        generateTree(hostPath, files, TREE_OWNER);
        const root = await applyRoot(stack, name, hostPath, 30 * 60_000);
        if (root.status?.phase !== 'Ready') throw new Error(`Root ${name} is not Ready: ${JSON.stringify(root.status)}`);
        return hostPath;
      },
      async round(t, s) {
        const rep = s.totalMs.length;
        const name = `col-${t.files}-${rep}`;
        await runWorld(t, name, rep);

        settle();
        const marks: { bound?: number; preparing?: number; authorized?: number; committed?: number } = {};
        const committed = collapses.follow(`${NS}/${name}`, (c, at) => {
          const st = c.status ?? {};
          if (st.nodeName && marks.bound === undefined) marks.bound = at;
          if (st.phase === 'Preparing' && marks.preparing === undefined) marks.preparing = at;
          if (st.phase === 'Authorized' && marks.authorized === undefined) marks.authorized = at;
          if (st.phase === 'Denied') throw new Error(`Collapse ${name} was denied: ${JSON.stringify(st)}`);
          if (st.phase !== 'Committed') return false;
          marks.committed = at;
          return true;
        }, 30 * 60_000, `Collapse ${name} Committed`);
        s.cpu ??= new CpuAccount(components);
        s.requests ??= new RequestAccount(http);
        const requestWindow = await s.requests.begin();
        const cpuWindow = s.cpu.begin();
        const t0 = performance.now();
        await createObject(http, resources.Collapse, NS, { metadata: { name }, spec: { worldRef: name, mode: 'Candidate' } });
        await committed;
        cpuWindow();
        await requestWindow();
        const since = (x: number | undefined): number => (x === undefined ? NaN : x - t0);
        s.totalMs.push(since(marks.committed));
        s.boundMs.push(since(marks.bound));
        s.preparingMs.push(since(marks.preparing));
        s.authorizedMs.push(since(marks.authorized));

        const c = tenFileChange(t.files, rep);
        const b = copyAndHash(t.hostPath, [...c.modified, ...c.added], join(stack.scratch, 'copies'));
        s.cpMs.push(b.cpMs);
        s.sha256sumMs.push(b.sha256sumMs);

        const cm = `raw-${seq++}`;
        let seenAt = NaN;
        const seen = configMaps.follow(`${NS}/${cm}`, (_o, at) => {
          seenAt = at;
          return true;
        }, 60_000, `ConfigMap ${cm}`);
        const t1 = performance.now();
        await createObject(http, CONFIG_MAPS, NS, { metadata: { name: cm }, data: { rep: String(rep) } });
        s.apiCreateMs.push(performance.now() - t1);
        await seen;
        s.apiSeenMs.push(seenAt - t1);
      },
      async idleCpu(seconds) {
        const cpu = new CpuAccount(components);
        for (let i = 0; i < seconds; i++) {
          const end = cpu.begin();
          await new Promise((r) => setTimeout(r, 1000));
          end();
        }
        return cpu.result();
      },
      async close() {
        for (const w of watches) w.stop();
        await stack.stop();
      },
    };
  } catch (e) {
    for (const w of watches) w.stop();
    await stack.stop();
    throw e;
  }
}

export interface StackCollapseResult {
  files: number;
  runs: number;
  totalMs: number;
  totalP90Ms: number;
  boundMs: number;
  /** Medians over the collapses that showed the phase (a quick collapse holds it: progress-hold.ts), and how many did. */
  preparingMs: number;
  preparingShown: number;
  authorizedMs: number;
  authorizedShown: number;
  cpMs: number;
  sha256sumMs: number;
  apiCreateMs: number;
  apiSeenMs: number;
  /** Mean CPU ms per collapse (create → Committed seen) by process, and the machine's busy share of its cores. */
  cpu?: ReturnType<CpuAccount['result']>;
  /** Mean API requests per collapse, by verb and resource. */
  requests?: ReturnType<RequestAccount['result']>;
}

export function stackCollapseResult(files: number, s: StackCollapseSamples): StackCollapseResult {
  return {
    files,
    runs: s.totalMs.length,
    totalMs: median(s.totalMs),
    totalP90Ms: percentile(s.totalMs, 90),
    boundMs: median(s.boundMs),
    preparingMs: median(s.preparingMs.filter(Number.isFinite)),
    preparingShown: s.preparingMs.filter(Number.isFinite).length,
    authorizedMs: median(s.authorizedMs.filter(Number.isFinite)),
    authorizedShown: s.authorizedMs.filter(Number.isFinite).length,
    cpMs: median(s.cpMs),
    sha256sumMs: median(s.sha256sumMs),
    apiCreateMs: median(s.apiCreateMs),
    apiSeenMs: median(s.apiSeenMs),
    ...(s.cpu ? { cpu: s.cpu.result() } : {}),
    ...(s.requests ? { requests: s.requests.result() } : {}),
  };
}
