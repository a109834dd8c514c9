// Benchmark: a fleet landing on one repository (issue 15, the promotion queue). On a real stack
// (kube-apiserver + etcd, controller, node-agent as root): a Root of N files (default 10k) under a Policy
// whose one check takes about a second (`sleep 1` in the check sandbox); W Worlds (default 20) forked from
// the same generation, each changing 10 files no other World touches (5 modified, 5 added); each is
// captured and its own Check run (untimed). Then W Collapses with spec.rebase are created at once, and
// measured is the first create → the last Committed as the bench's watch sees it. Every Collapse after
// the first finds PRIME moved, is rebased, its check runs again on the rebased bytes, and it commits.
//
// Reported next to it: the serial floor (W × one check run, the median run of the Worlds' own Checks,
// startedAt → finishedAt as the agent recorded them) and where each Collapse's time went: Queued (older
// Collapses of the Root first), Rebasing (the rebased candidate's checks) and Preparing → Committed (the
// transaction: measure, stage, commit). The run fails unless all W commit, every change is in PRIME, and
// the receipts' order is the Collapses' order of creation.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { resources } from '../../crds/index.js';
import { startStack } from '../support/stack.js';
import { applyRoot } from '../support/worlds.js';
import { median } from './stats.js';
import { changedFiles, generateTree } from './tree-fixtures.js';
import { WatchTimes } from './watch-times.js';
import { TREE_OWNER } from './world-env.js';

const NS = 'default';
const API = { group: 'worldline.dev', version: 'v1alpha1', namespace: NS } as const;
const CHANGE_SCRIPT = 'n=0; for f in "$@"; do n=$((n+1)); if [ "$n" -le 5 ]; then echo "$0" >> "$f"; else echo "$0" > "$f"; fi; done';

type Obj = KubernetesObject & { spec?: Record<string, any>; status?: Record<string, any> };

/** World i's change: 5 files of its own to modify and 5 new files next to them. */
export function fleetChange(files: number, worlds: number, i: number): { modified: string[]; added: string[] } {
  const spread = changedFiles(files, worlds * 5);
  const modified = spread.slice(i * 5, i * 5 + 5);
  if (modified.length < 5) throw new Error(`a Root of ${files} files has too few files for ${worlds} Worlds of 5 modified files each`);
  return { modified, added: modified.map((p) => `${p.slice(0, p.lastIndexOf('/'))}/fleet-${i}.txt`) };
}

export interface FleetResult {
  files: number;
  worlds: number;
  totalMs: number;
  checkRunMs: number;
  queuedMs: number[];
  rebasingMs: number[];
  commitMs: number[];
}

export async function benchFleet(opts: { files: number; worlds: number }): Promise<FleetResult> {
  const { files, worlds } = opts;
  const stack = await startStack({ nodeName: 'fleet-node' });
  const watches: WatchTimes<Obj>[] = [];
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(stack.cp.kubeconfigPath);
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const worldWatch = new WatchTimes<Obj>(kubeConfig, resources.World, NS);
    const collapseWatch = new WatchTimes<Obj>(kubeConfig, resources.Collapse, NS);
    const checkWatch = new WatchTimes<Obj>(kubeConfig, resources.Check, NS);
    watches.push(worldWatch, collapseWatch, checkWatch);
    await Promise.all(watches.map((w) => w.start()));

    const hostPath = join(stack.scratch, 'roots', 'fleet');
    generateTree(hostPath, files, TREE_OWNER);
    const root = await applyRoot(stack, 'fleet', hostPath, 30 * 60_000);
    if (root.status?.phase !== 'Ready') throw new Error(`Root fleet is not Ready: ${JSON.stringify(root.status)}`);
    await stack.apply(JSON.stringify({
      apiVersion: 'worldline.dev/v1alpha1',
      kind: 'Policy',
      metadata: { name: 'fleet-policy' },
      spec: {
        roots: ['fleet'],
        checks: [{ name: 'unit', command: ['/bin/sleep', '1'], timeout: '1m' }],
        isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
      },
    }));

    // The fleet: every World forks generation 1 and is captured; its own Check passes (untimed).
    const names = Array.from({ length: worlds }, (_x, i) => `fleet-${String(i).padStart(2, '0')}`);
    const checkRuns: number[] = [];
    await Promise.all(names.map(async (name, i) => {
      const checked = checkWatch.follow(`${NS}/${name}-unit`, (c) => {
        if (!['Passed', 'Failed', 'Refused'].includes(c.status?.phase)) return false;
        if (c.status?.phase !== 'Passed') throw new Error(`Check ${name}-unit: ${JSON.stringify(c.status)}`);
        checkRuns.push(Date.parse(c.status.finishedAt) - Date.parse(c.status.startedAt));
        return true;
      }, 15 * 60_000, `Check ${name}-unit`);
      const c = fleetChange(files, worlds, i);
      await custom.createNamespacedCustomObject({
        ...API, plural: 'worlds',
        body: { apiVersion: 'worldline.dev/v1alpha1', kind: 'World', metadata: { name }, spec: { roots: ['fleet'], agent: { command: ['/bin/sh', '-c', CHANGE_SCRIPT, name, ...c.modified, ...c.added] } } },
      });
      await checked;
    }));
    for (const name of names) {
      const w = worldWatch.get(`${NS}/${name}`);
      if (w?.status?.phase !== 'Captured' || w.status.candidate?.modified !== 5 || w.status.candidate?.added !== 5) throw new Error(`World ${name} did not capture its change: ${JSON.stringify(w?.status)}`);
    }

    // The timed part: all Collapses at once.
    const marks = new Map<string, { created: number; queued?: number; rebasing?: number; preparing?: number; committed?: number }>();
    const done = names.map((name) => collapseWatch.follow(`${NS}/${name}`, (c, at) => {
      const m = marks.get(name);
      if (!m) return false;
      const phase = c.status?.phase;
      if (phase === 'Queued' && m.queued === undefined) m.queued = at;
      if (phase === 'Rebasing' && m.rebasing === undefined) m.rebasing = at;
      if (phase === 'Preparing' && m.preparing === undefined) m.preparing = at;
      if (phase === 'Denied') throw new Error(`Collapse ${name} was denied: ${JSON.stringify(c.status)}`);
      if (phase !== 'Committed') return false;
      m.committed = at;
      return true;
    }, 30 * 60_000, `Collapse ${name} Committed`));
    const t0 = performance.now();
    for (const name of names) {
      marks.set(name, { created: performance.now() });
      await custom.createNamespacedCustomObject({ ...API, plural: 'collapses', body: { apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name }, spec: { worldRef: name, rebase: true } } });
    }
    await Promise.all(done);
    const totalMs = Math.max(...[...marks.values()].map((m) => m.committed ?? NaN)) - t0;

    // None lost: every change is in PRIME; receipts follow the order of creation.
    for (const [i, name] of names.entries()) {
      const c = fleetChange(files, worlds, i);
      for (const p of c.modified) if (!readFileSync(join(hostPath, p), 'utf8').endsWith(`${name}\n`)) throw new Error(`${p} lost ${name}'s change`);
      for (const p of c.added) if (!existsSync(join(hostPath, p))) throw new Error(`${p} of ${name} is not in PRIME`);
    }
    const sequences = names.map((name) => collapseWatch.get(`${NS}/${name}`)?.status?.receipt?.sequence as number);
    for (let i = 1; i < sequences.length; i++) if (!(sequences[i]! > sequences[i - 1]!)) throw new Error(`receipts out of creation order: ${JSON.stringify(sequences)}`);

    const queuedMs: number[] = [];
    const rebasingMs: number[] = [];
    const commitMs: number[] = [];
    for (const m of marks.values()) {
      const served = m.rebasing ?? m.preparing ?? m.committed!;
      queuedMs.push(m.queued === undefined ? 0 : served - m.queued);
      rebasingMs.push(m.rebasing === undefined ? 0 : (m.preparing ?? m.committed!) - m.rebasing);
      commitMs.push(m.committed! - (m.preparing ?? m.committed!));
    }
    return { files, worlds, totalMs, checkRunMs: median(checkRuns), queuedMs, rebasingMs, commitMs };
  } finally {
    for (const w of watches) w.stop();
    await stack.stop();
  }
}
