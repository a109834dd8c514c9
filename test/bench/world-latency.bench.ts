// Benchmark: a World from its create to its workload running, on a real stack (kube-apiserver + etcd,
// controller, node-agent as root), hop by hop as the bench's own watch sees the World's versions: the
// controller's binding (status.nodeName), the node-agent's admission (phase Admitted), the workload
// started in its sandbox (phase Running: fork, sandbox, isolation gate, exec, then the status write) and
// the capture (phase Captured). The World's agent prints the wall clock as it starts (`date +%s%N`) on a
// 10-file Root, so what is timed is the machinery, not the work, and the workload's own start is known
// apart from when the status says Running. Next to it, per repetition: one raw API write (a ConfigMap create) and the time until the same
// watch delivers it — the floor of any hop that is one write and one watch event.
import { join } from 'node:path';
import { resources } from '../../crds/index.js';
import type { ResourceRef } from '../../kube/resource-ref.js';
import { startStack } from '../support/stack.js';
import { CpuAccount } from './cpu-times.js';
import { RequestAccount } from './api-requests.js';
import { KubeHttpClient } from '../../kube/http.js';
import { applyRoot, outputOf } from '../support/worlds.js';
import { metricSum } from '../support/metrics-text.js';
import { median, percentile } from './stats.js';
import { generateTree } from './tree-fixtures.js';
import { benchClients, createObject } from './bench-clients.js';
import { TREE_OWNER } from './world-env.js';

const NS = 'default';
const CONFIG_MAPS: ResourceRef = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

export interface LatencyRow {
  hop: string;
  medianMs: number;
  p90Ms: number;
}

const HOPS = ['bound', 'admitted', 'running', 'captured'] as const;

export interface LatencyResult {
  rows: LatencyRow[];
  /** CPU per World, created → Captured seen (cpu-times.ts). */
  cpu: ReturnType<CpuAccount['result']>;
  /** The API requests per World over the same window (api-requests.ts). */
  requests: ReturnType<RequestAccount['result']>;
}

export async function benchWorldLatency(o: { reps: number }): Promise<LatencyResult> {
  const stack = await startStack({ nodeName: 'latency-node' });
  const api = benchClients(stack, NS);
  try {
    const http = new KubeHttpClient(api.kubeConfig);
    const worlds = api.watch(resources.World);
    const configMaps = api.watch(CONFIG_MAPS);
    await api.start();
    const hostPath = join(stack.scratch, 'roots', 'small');
    generateTree(hostPath, 10, TREE_OWNER);
    const root = await applyRoot(stack, 'small', hostPath);
    if (root.status?.phase !== 'Ready') throw new Error(`Root small is not Ready: ${JSON.stringify(root.status)}`);

    const samples: Record<(typeof HOPS)[number] | 'started' | 'apiCreate' | 'apiSeen', number[]> = { bound: [], admitted: [], running: [], captured: [], started: [], apiCreate: [], apiSeen: [] };
    // One untimed World first: the first launch pays for loading code paths.
    let forks = { sum: 0, count: 0 };
    const requests = new RequestAccount(http);
    const cpu = new CpuAccount({ etcd: stack.cp.pids.etcd, apiserver: stack.cp.pids.apiserver, controller: stack.controller.pid, 'node-agent': stack.agent.pid });
    for (let rep = -1; rep < o.reps; rep++) {
      if (rep === 0) {
        const m = await stack.agent.metrics();
        forks = { sum: metricSum(m, 'worldline_fork_duration_seconds_sum'), count: metricSum(m, 'worldline_fork_duration_seconds_count') };
      }
      const name = `latency-${rep + 1}`;
      const seen: Partial<Record<(typeof HOPS)[number], number>> = {};
      let uid = '';
      const done = worlds.follow(`${NS}/${name}`, (w, at) => {
        uid = w.metadata?.uid ?? uid;
        const phase = w.status?.phase as string | undefined;
        if (seen.bound === undefined && w.status?.nodeName) seen.bound = at;
        if (seen.admitted === undefined && (phase === 'Admitted' || phase === 'Running' || phase === 'Captured')) seen.admitted = at;
        if (seen.running === undefined && (phase === 'Running' || phase === 'Captured')) seen.running = at;
        if (phase === 'Captured' || phase === 'Failed' || phase === 'Refused') {
          seen.captured = at;
          if (phase !== 'Captured') throw new Error(`World ${name} ended ${phase}: ${JSON.stringify(w.status)}`);
          return true;
        }
        return false;
      }, 120_000, `World ${name} to be captured`);
      const requestWindow = rep >= 0 ? await requests.begin() : undefined;
      const cpuWindow = rep >= 0 ? cpu.begin() : undefined;
      const t0 = performance.now();
      const wall0 = Date.now();
      await createObject(http, resources.World, NS, { metadata: { name }, spec: { roots: ['small'], agent: { command: ['/bin/sh', '-c', 'date +%s%N'] } } });
      await done;
      cpuWindow?.();
      await requestWindow?.();
      const printed = /^(\d{19})$/m.exec(outputOf(stack, uid));
      if (!printed) throw new Error(`World ${name} printed no start time: ${JSON.stringify(outputOf(stack, uid))}`);
      const startedMs = Number(BigInt(printed[1]!) / 1_000_000n) - wall0;
      const cmName = `latency-cm-${rep + 1}`;
      let cmAt = 0;
      const cmSeen = configMaps.follow(`${NS}/${cmName}`, (_cm, at) => ((cmAt = at), true), 30_000, `ConfigMap ${cmName}`);
      const c0 = performance.now();
      await createObject(http, CONFIG_MAPS, NS, { metadata: { name: cmName }, data: { a: 'b' } });
      const c1 = performance.now();
      await cmSeen;
      if (rep < 0) continue;
      for (const h of HOPS) {
        const at = seen[h];
        if (at === undefined) throw new Error(`World ${name}: the watch never showed it ${h}`);
        samples[h].push(at - t0);
      }
      samples.started.push(startedMs);
      samples.apiCreate.push(c1 - c0);
      samples.apiSeen.push(cmAt - c0);
    }
    const after = await stack.agent.metrics();
    const forkMeanMs = ((metricSum(after, 'worldline_fork_duration_seconds_sum') - forks.sum) * 1000) / Math.max(1, metricSum(after, 'worldline_fork_duration_seconds_count') - forks.count);
    const row = (hop: string, xs: number[]): LatencyRow => ({ hop, medianMs: median(xs), p90Ms: percentile(xs, 90) });
    const between = (a: (typeof HOPS)[number] | null, b: (typeof HOPS)[number]): number[] => samples[b].map((x, i) => x - (a ? samples[a][i]! : 0));
    const rows = [
      row('created → bound (controller: status.nodeName)', between(null, 'bound')),
      row('bound → Admitted (node-agent picks it up, admits)', between('bound', 'admitted')),
      row('Admitted → Running (fork, sandbox, isolation gate, exec)', between('admitted', 'running')),
      { hop: '  of which the fork (the node-agent\'s fork histogram, mean; no p90)', medianMs: forkMeanMs, p90Ms: Number.NaN },
      row('Running → Captured (the workload exits, capture)', between('running', 'captured')),
      row('created → the workload runs (its own clock, ms resolution of the create)', samples.started),
      row('created → Running on status', samples.running),
      row('created → Captured', samples.captured),
      row('raw ConfigMap create (request → response)', samples.apiCreate),
      row('raw ConfigMap create → the watch delivers it', samples.apiSeen),
    ];
    return { rows, cpu: cpu.result(), requests: requests.result() };
  } finally {
    api.stop();
    await stack.stop();
  }
}
