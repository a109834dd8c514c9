// Fuzzing through the real API server: WORLDLINE_FUZZ_PER_KIND (default 10,000) generated Roots, Policies,
// Worlds, Checks and Collapses each — valid ones from crds/*.ts's vocabulary and near-valid ones with one
// field mutated as the CRD schema says it must not be — created, updated (a label, a near-valid spec, an
// immutable field changed) and deleted in one seeded random order against kube-apiserver + etcd with the
// real controller and node-agent running. A fraction of the Worlds run generated shell workloads on real
// Roots. Asserts: neither process exits; every object the API server accepts reaches a named state (a
// phase, or a condition whose reason is documented in docs/codes.md) — a sample is waited on while the
// campaign runs (how long each took is printed), every object at the end through a list — and every
// workload World reaches a terminal phase; every refusal of a mutated object names the mutated field's path; no valid object is refused.
// The seed is printed; WORLDLINE_FUZZ_SEED=<seed> replays the same campaign.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { startStack, type Stack } from '../support/stack.js';
import { kc } from '../support/wait.js';
import { adoptSmallRoot } from '../support/worlds.js';
import { ApiClient, type ApiResponse } from './api-client.js';
import { objectName, planCampaign, type PlannedObject } from './campaign-plan.js';
import { FUZZ_KINDS, loadSchemas, type FuzzKind } from './crd-schema.js';
import { codesDoc, namedState, WORLD_TERMINAL } from './named-state.js';
import { fuzzSeed, SeededRandom } from './seeded-random.js';
import { NAMESPACE, type NamePools } from './valid-objects.js';

function intEnv(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^[1-9]\d*$/.test(raw)) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return Number(raw);
}

const PER_KIND = intEnv('WORLDLINE_FUZZ_PER_KIND', 10_000);
const CONCURRENCY = intEnv('WORLDLINE_FUZZ_CONCURRENCY', 6);
const SEED = fuzzSeed();
/** How long, after the last operation, every remaining object may take to reach a named state. */
const FINAL_BOUND_MS = intEnv('WORLDLINE_FUZZ_FINAL_WAIT_S', 900) * 1000;
/**
 * How long a sampled object is waited on before it counts as stuck (never named), and a workload World
 * before it counts as never ending. These are liveness limits, not speed claims: under the unthrottled
 * flood a controller on two shared cores falls minutes behind and catches up after (docs/testing.md), so
 * how long each sampled object took is measured and printed instead (speed belongs to benchmarks).
 */
const SAMPLE_LIVENESS_MS = FINAL_BOUND_MS;
const WORKLOAD_LIVENESS_MS = Math.max(600_000, FINAL_BOUND_MS);
const AGENT_NODE = 'fuzz-node';
const LIVE_ROOT = 'fz-live';
const WORKLOAD_ROOTS = ['fz-wl-a', 'fz-wl-b'];

let s: Stack;
let controller: ControllerProcess;
let api: ApiClient;
/** Set once the campaign's own teardown stops the processes, so their exits are not reported as crashes. */
let tearingDown = false;
before(async () => {
  process.stdout.write(`fuzz: seed ${SEED} (replay with WORLDLINE_FUZZ_SEED=${SEED}), ${PER_KIND} objects per kind\n`);
  s = await startStack({ nodeName: AGENT_NODE });
  // The stack's controller holds a 6 s test lease (quick fail-over tests); under this load its renewals can
  // take longer, and a controller that cannot renew exits by design. Run the controller as deployed (15 s).
  await s.controller.kill('SIGTERM');
  controller = await startController({ kubeconfig: s.cp.kubeconfigPath, identity: 'fuzz-controller', leaseDurationSeconds: 15, ...(process.env['WORLDLINE_FUZZ_WORKERS'] ? { extraArgs: ['--workers', process.env['WORLDLINE_FUZZ_WORKERS']] } : {}) });
  await kc(s.cp, ['create', 'namespace', NAMESPACE]);
  for (const root of [LIVE_ROOT, ...WORKLOAD_ROOTS]) await adoptSmallRoot(s, root, 1000);
  api = new ApiClient(s.cp, CONCURRENCY + 8);
});
after(async () => {
  tearingDown = true;
  api?.close();
  await controller?.kill('SIGTERM');
  await s?.stop();
});

interface Tally {
  validAccepted: number;
  validRefused: number;
  nearAccepted: number;
  nearRefused: number;
  updates: number;
  updatesRefused: number;
  deletes: number;
}

/** A refusal names the field when its message holds the path; a spec-wide CEL immutability rule names `spec`. */
function namesField(message: string, path: string, mutation: string | undefined): boolean {
  if (message.includes(path)) return true;
  return mutation === 'immutable' && /\bspec: Invalid value: "object": spec is immutable/.test(message);
}

test(`the API server, controller and node-agent take ${PER_KIND} fuzzed objects of each kind`, async () => {
  const started = Date.now();
  const schemas = loadSchemas();
  const doc = codesDoc();
  const liveRootDir = join(s.scratch, 'fuzz-roots');
  mkdirSync(liveRootDir);
  const pools: NamePools = {
    roots: [...Array.from({ length: 40 }, (_, i) => objectName('Root', Math.floor((i * PER_KIND) / 40))), 'missing-root', LIVE_ROOT],
    liveRoots: [LIVE_ROOT],
    worlds: [...Array.from({ length: 40 }, (_, i) => objectName('World', Math.floor((i * PER_KIND) / 40))), ...Array.from({ length: 10 }, (_, i) => objectName('World', i, true)), 'missing-world'],
    absentNodes: ['fz-absent-1', 'fz-absent-2', 'fz-absent-3'],
  };
  const { objects, ops } = planCampaign(SEED, schemas, pools, {
    perKind: PER_KIND, nearValid: 0.4, updateFraction: 0.25, deleteFraction: 0.1, workloadFraction: 0.02, sampleFraction: 0.005,
    workloadRoots: WORKLOAD_ROOTS, agentNode: AGENT_NODE, liveRootDir,
  });
  // Half of the fuzzed Roots on the agent's node name a directory that exists.
  const dirs = new SeededRandom(SEED ^ 0x5eed);
  for (const p of objects) {
    if (p.kind !== 'Root' || p.create.spec['nodeName'] !== AGENT_NODE || !dirs.chance(0.5)) continue;
    try {
      mkdirSync(String(p.create.spec['path']), { recursive: true });
    } catch (err) {
      // A generated path with a component longer than the filesystem allows (255 bytes) cannot exist: that
      // Root names a missing directory, like the other half.
      if ((err as NodeJS.ErrnoException).code !== 'ENAMETOOLONG') throw err;
    }
  }
  process.stdout.write(`fuzz: planned ${objects.length} objects, ${ops.length} operations (${objects.filter((p) => p.workload).length} workload Worlds)\n`);

  const ended: string[] = [];
  for (const [who, proc] of [['controller', controller], ['node-agent', s.agent]] as const) {
    void proc.waitExit().then((e) => {
      if (tearingDown) return;
      ended.push(`${who} exited: ${JSON.stringify(e)}`);
      // Say why at once: its last log lines (an uncaught throw's stack is among them).
      process.stderr.write(`fuzz: the ${who} exited (${JSON.stringify(e)}); its last log lines:\n${proc.logs.slice(-40).map((l) => JSON.stringify(l)).join('\n')}\n`);
    });
  }

  const tally = Object.fromEntries(FUZZ_KINDS.map((k) => [k, { validAccepted: 0, validRefused: 0, nearAccepted: 0, nearRefused: 0, updates: 0, updatesRefused: 0, deletes: 0 }])) as Record<FuzzKind, Tally>;
  const unnamedRefusals: string[] = [];
  const validRefusals: string[] = [];
  const unexpected: string[] = [];
  const lateStates: string[] = [];
  /** Seconds from creation to a named state (to a terminal phase for a workload World), per sampled object. */
  const sampleSeconds: { kind: FuzzKind; workload: boolean; seconds: number }[] = [];
  const created = new Map<number, Promise<boolean>>();
  const waiters: Promise<void>[] = [];

  const refusal = (r: ApiResponse): boolean => r.status === 422 || r.status === 400;
  const waitNamed = async (p: PlannedObject): Promise<void> => {
    const bound = p.workload ? WORKLOAD_LIVENESS_MS : SAMPLE_LIVENESS_MS;
    const createdAt = Date.now();
    const deadline = createdAt + bound;
    let last = 'never read';
    while (Date.now() < deadline) {
      await sleep(3000);
      const r = await api.get(p.kind, p.name);
      if (r.status === 404) return; // deleted by the campaign
      const state = namedState(p.kind, r.body, doc);
      last = `${state ?? 'no named state'}; status ${JSON.stringify(r.body['status'] ?? null).slice(0, 400)}`;
      if (p.workload ? WORLD_TERMINAL.includes(r.body['status']?.['phase'] as string) : state !== undefined) {
        sampleSeconds.push({ kind: p.kind, workload: p.workload, seconds: (Date.now() - createdAt) / 1000 });
        return;
      }
    }
    lateStates.push(`${p.kind}/${p.name} not ${p.workload ? 'terminal' : 'named'} within ${bound / 1000} s: ${last}`);
  };

  const run = async (op: (typeof ops)[number]): Promise<void> => {
    const p = objects[op.index]!;
    const t = tally[p.kind];
    if (op.op === 'create') {
      let done!: (ok: boolean) => void;
      created.set(op.index, new Promise((res) => (done = res)));
      const r = await api.create(p.kind, p.create);
      const msg = String(r.body['message'] ?? '');
      if (r.status === 201) {
        if (p.createMutation) t.nearAccepted++;
        else t.validAccepted++;
        if (p.sampled) waiters.push(waitNamed(p));
      } else if (refusal(r)) {
        if (p.createMutation) {
          t.nearRefused++;
          if (!namesField(msg, p.createMutation.path, p.createMutation.mutation)) unnamedRefusals.push(`${p.kind}/${p.name} ${p.createMutation.mutation} at ${p.createMutation.path}: ${msg.slice(0, 500)}`);
        } else {
          t.validRefused++;
          validRefusals.push(`${p.kind}/${p.name}: ${msg.slice(0, 500)} — ${JSON.stringify(p.create.spec).slice(0, 400)}`);
        }
      } else unexpected.push(`create ${p.kind}/${p.name}: HTTP ${r.status}: ${msg.slice(0, 300)}`);
      done(r.status === 201);
      return;
    }
    if (!(await created.get(op.index))) return;
    if (op.op === 'delete') {
      const r = await api.delete(p.kind, p.name);
      if (r.status === 200 || r.status === 202) t.deletes++;
      else if (r.status !== 404) unexpected.push(`delete ${p.kind}/${p.name}: HTTP ${r.status}: ${String(r.body['message'])}`);
      return;
    }
    const u = p.update!;
    for (let attempt = 0; attempt < 8; attempt++) {
      const cur = await api.get(p.kind, p.name);
      if (cur.status === 404 || cur.body['metadata']?.['deletionTimestamp']) return;
      const obj = structuredClone(u.obj) as Record<string, any>;
      obj['metadata'] = { ...obj['metadata'], resourceVersion: cur.body['metadata']['resourceVersion'] };
      // The controller binds Checks and Collapses to their World's uid (set once); an update keeps what it set.
      const boundUid = cur.body['spec']?.['worldUID'] as unknown;
      const specIsObject = typeof obj['spec'] === 'object' && obj['spec'] !== null && !Array.isArray(obj['spec']);
      if (boundUid !== undefined && specIsObject && obj['spec']['worldUID'] === undefined && u.path !== 'spec.worldUID') obj['spec'] = { ...obj['spec'], worldUID: boundUid };
      const r = await api.update(p.kind, p.name, obj);
      const msg = String(r.body['message'] ?? '');
      if (r.status === 409) continue; // the controller or agent wrote in between; read again
      // The campaign's own delete of this object, in flight at the same time, finished in between (an
      // object the plan never deletes must not vanish: that 404 stays unexpected).
      if (r.status === 404 && p.remove) return;
      t.updates++;
      if (r.status === 200) return;
      if (!refusal(r)) unexpected.push(`update ${p.kind}/${p.name}: HTTP ${r.status}: ${msg.slice(0, 300)}`);
      else if (u.path === undefined) validRefusals.push(`update ${p.kind}/${p.name} (label only): ${msg.slice(0, 300)}`);
      else {
        t.updatesRefused++;
        if (!namesField(msg, u.path, u.mutation)) unnamedRefusals.push(`update ${p.kind}/${p.name} ${String(u.mutation)} at ${u.path}: ${msg.slice(0, 500)}`);
      }
      return;
    }
    unexpected.push(`update ${p.kind}/${p.name}: still conflicting after 8 attempts`);
  };

  let nextOp = 0;
  let lastReport = Date.now();
  const worker = async (): Promise<void> => {
    while (nextOp < ops.length && ended.length === 0) {
      await run(ops[nextOp++]!);
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        process.stderr.write(`fuzz: ${nextOp}/${ops.length} operations, ${((Date.now() - started) / 1000).toFixed(0)} s; so far unexpected ${unexpected.length}, valid refused ${validRefusals.length}, unnamed refusals ${unnamedRefusals.length}, stuck ${lateStates.length}, exits ${ended.length}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const applySeconds = (Date.now() - started) / 1000;
  process.stdout.write(`fuzz: ${ops.length} operations applied in ${applySeconds.toFixed(0)} s (${(ops.length / applySeconds).toFixed(0)}/s)\n`);
  assert.deepEqual(ended, [], `the controller and the node-agent never exit (seed ${SEED}, after ${nextOp} operations)`);
  await Promise.all(waiters);
  const sampledSeconds = (Date.now() - started) / 1000;

  // Every object still there must reach a named state, read through lists.
  const finalDeadline = Date.now() + FINAL_BOUND_MS;
  let unnamed: string[] = [];
  let listed = 0;
  do {
    unnamed = [];
    listed = 0;
    for (const kind of FUZZ_KINDS) {
      for (const o of await api.list(kind)) {
        if (!/^fz/.test(String(o['metadata']?.['name']))) continue;
        listed++;
        if (namedState(kind, o, doc) === undefined) unnamed.push(`${kind}/${String(o['metadata']['name'])}: ${JSON.stringify(o['status'] ?? null).slice(0, 300)}`);
      }
    }
    if (unnamed.length > 0) await sleep(5000);
  } while (unnamed.length > 0 && Date.now() < finalDeadline && ended.length === 0);
  const seconds = (Date.now() - started) / 1000;

  const rows = FUZZ_KINDS.map((k) => ({ kind: k, ...tally[k] }));
  process.stdout.write(`fuzz: seed ${SEED}; ${listed} objects listed at the end, all named after ${seconds.toFixed(0)} s (operations ${applySeconds.toFixed(0)} s, sampled waits until ${sampledSeconds.toFixed(0)} s)\n`);
  console.table(rows);
  // How long sampled objects took to a named state (a poll every 3 s: figures are rounded up to it).
  const pct = (xs: number[], q: number): string => (xs.length === 0 ? '-' : String(xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(0)));
  const latency = [...FUZZ_KINDS.map((k) => ({ group: k, xs: sampleSeconds.filter((x) => x.kind === k && !x.workload) })), { group: 'workload World (terminal)', xs: sampleSeconds.filter((x) => x.workload) }]
    .map(({ group, xs }) => {
      const sorted = xs.map((x) => x.seconds).sort((a, b) => a - b);
      return { sampled: group, n: sorted.length, p50_s: pct(sorted, 0.5), p95_s: pct(sorted, 0.95), max_s: pct(sorted, 1) };
    });
  console.table(latency);
  process.stdout.write(`fuzz: controller RSS ${rss(controller.pid)} KiB, node-agent RSS ${rss(s.agent.pid)} KiB\n`);

  const show = (xs: string[]): string => `${xs.length}:\n${xs.slice(0, 15).join('\n')}`;
  assert.deepEqual(ended, [], 'the controller and the node-agent never exit');
  process.kill(controller.pid, 0);
  process.kill(s.agent.pid, 0);
  assert.equal(unexpected.length, 0, `API answers other than created, refused, deleted (seed ${SEED}) ${show(unexpected)}`);
  assert.equal(validRefusals.length, 0, `valid objects refused (seed ${SEED}) ${show(validRefusals)}`);
  assert.equal(unnamedRefusals.length, 0, `refusals that do not name the mutated field (seed ${SEED}) ${show(unnamedRefusals)}`);
  assert.equal(lateStates.length, 0, `sampled objects stuck: no named state (workload Worlds: not terminal) within the liveness limit (seed ${SEED}) ${show(lateStates)}`);
  assert.equal(unnamed.length, 0, `objects without a named state ${FINAL_BOUND_MS / 1000} s after the campaign (seed ${SEED}) ${show(unnamed)}`);
  for (const r of rows) {
    // Both sides of the schema must be exercised for the campaign to mean anything.
    assert.ok(r.validAccepted + r.nearAccepted >= PER_KIND * 0.3, `${r.kind}: only ${r.validAccepted + r.nearAccepted} accepted`);
    assert.ok(r.nearRefused >= PER_KIND * 0.2, `${r.kind}: only ${r.nearRefused} near-valid objects refused`);
  }
});

function rss(pid: number): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readStatus(pid))?.[1] ?? -1);
}

function readStatus(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}
