// The admission authority over an in-memory SQLite database with the store's schema, its metrics, and the
// node measurements read from a fake /proc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { AdmissionAuthority } from '../../node-agent/admission/admission-authority.js';
import { loadAdmissionPolicy, readHostCeilings } from '../../node-agent/admission/admission-host.js';
import { ADMISSION_OUTCOMES } from '../../node-agent/admission/admission-policy.js';
import { observeNode, type ObservedState } from '../../node-agent/admission/observe-node.js';
import { createAgentMetrics } from '../../node-agent/metrics.js';
import { migrate } from '../../node-agent/store/store-schema.js';
import { ceilings, GiB, perWorld, roomy } from '../support/admission-fixtures.js';


function setup(observe: () => ObservedState = () => roomy) {
  const db = new Database(':memory:');
  migrate(db);
  const registry = new Registry();
  const metrics = createAgentMetrics(registry);
  const authority = new AdmissionAuthority({ db, ceilings, perWorld, observe, clock: () => new Date('2025-01-01T00:00:00Z'), metrics });
  return { db, registry, metrics, authority };
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = await registry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

test('admit reserves, is idempotent per holder, and release frees', () => {
  const { authority } = setup();
  const a = authority.admit({ holder: 'w1', stage: 'agent', resources: { memoryBytes: GiB } });
  assert.equal(a.outcome, 'ADMITTED');
  assert.equal(a.existing, false);
  assert.deepEqual(a.reservation, { holder: 'w1', stage: 'agent', cpuMillis: 1000, memoryBytes: GiB, pids: 1024, ephemeralStorageBytes: GiB, createdAt: '2025-01-01T00:00:00.000Z' });
  const again = authority.admit({ holder: 'w1', stage: 'agent', resources: { memoryBytes: 3 * GiB, wallTimeSeconds: 60 } });
  assert.equal(again.outcome, 'ADMITTED');
  assert.equal(again.existing, true);
  assert.equal(again.reserve?.memoryBytes, GiB, 'the held reservation, not the new ask');
  assert.equal(again.reserve?.wallTimeSeconds, 60);
  assert.deepEqual(authority.totals(), { cpuMillis: 1000, memoryBytes: GiB, pids: 1024, worlds: 1, ephemeralStorageBytes: GiB });
  assert.equal(authority.release('w1'), true);
  assert.equal(authority.release('w1'), false);
  assert.deepEqual(authority.totals(), { cpuMillis: 0, memoryBytes: 0, pids: 0, worlds: 0, ephemeralStorageBytes: 0 });
});

test('fill until RESOURCES_UNAVAILABLE, release one, then ADMITTED', () => {
  const { authority } = setup();
  for (let i = 0; i < 4; i++) assert.equal(authority.admit({ holder: `w${i}`, stage: 'agent' }).outcome, 'ADMITTED');
  const full = authority.admit({ holder: 'w4', stage: 'check' });
  assert.equal(full.outcome, 'RESOURCES_UNAVAILABLE');
  assert.match(full.message, /memory_bytes: .*short by 2147483648 bytes/);
  assert.equal(full.reservation, undefined);
  assert.equal(authority.reservations().length, 4);
  authority.release('w2');
  assert.equal(authority.admit({ holder: 'w4', stage: 'check' }).outcome, 'ADMITTED');
  assert.deepEqual(authority.reservations().map((r) => r.holder).sort(), ['w0', 'w1', 'w3', 'w4']);
});

test('unmeasured memory answers RESOURCE_STATE_UNKNOWN and reserves nothing; a throwing observe counts as unmeasured', () => {
  let observed: ObservedState = { ...roomy, memAvailableBytes: 'unknown' };
  const { authority } = setup(() => observed);
  const u = authority.admit({ holder: 'w1', stage: 'agent' });
  assert.equal(u.outcome, 'RESOURCE_STATE_UNKNOWN');
  assert.deepEqual(u.unknown, ['memAvailableBytes']);
  assert.equal(authority.reservations().length, 0);
  observed = roomy;
  assert.equal(authority.admit({ holder: 'w1', stage: 'agent' }).outcome, 'ADMITTED');
  const { authority: b } = setup(() => {
    throw new Error('EACCES');
  });
  assert.equal(b.admit({ holder: 'x', stage: 'check' }).outcome, 'RESOURCE_STATE_UNKNOWN');
});

test('recover keeps live holders and drops the rest', () => {
  const { authority } = setup();
  for (const h of ['a', 'b', 'c']) authority.admit({ holder: h, stage: 'agent', resources: { cpuMillis: 100 } });
  assert.deepEqual(authority.recover(new Set(['a', 'c', 'gone'])), { kept: ['a', 'c'], dropped: ['b'] });
  assert.deepEqual(authority.totals(), { cpuMillis: 200, memoryBytes: 4 * GiB, pids: 2048, worlds: 2, ephemeralStorageBytes: 2 * GiB });
});

test('an empty holder is a caller bug and throws', () => {
  const { authority } = setup();
  assert.throws(() => authority.admit({ holder: '', stage: 'agent' }), TypeError);
});

test('metrics follow decisions, reservations and capacity', async () => {
  const { authority, registry, metrics } = setup();
  authority.admit({ holder: 'w1', stage: 'agent' });
  authority.admit({ holder: 'w2', stage: 'agent', resources: { memoryBytes: 5 * GiB } });
  authority.admit({ holder: 'c1', stage: 'check', resources: { pids: 10 } });
  const count = (stage: string, outcome: string) => metricValue(registry, 'worldline_admission_decisions_total', { stage, outcome });
  assert.equal(await count('agent', 'ADMITTED'), 1);
  assert.equal(await count('agent', 'RESOURCE_LIMIT_EXCEEDED'), 1);
  assert.equal(await count('check', 'ADMITTED'), 1);
  assert.equal(await count('check', 'RESOURCES_UNAVAILABLE'), 0, 'every stage x outcome series exists from the start');
  assert.equal(await metricValue(registry, 'worldline_admission_reserved', { resource: 'memory_bytes' }), 4 * GiB);
  assert.equal(await metricValue(registry, 'worldline_admission_reserved', { resource: 'pids' }), 1034);
  assert.equal(await metricValue(registry, 'worldline_admission_reserved', { resource: 'worlds' }), 2);
  assert.equal(await metricValue(registry, 'worldline_admission_capacity', { resource: 'cpu_millis' }), 4000);
  authority.release('w1');
  assert.equal(await metricValue(registry, 'worldline_admission_reserved', { resource: 'worlds' }), 1);

  metrics.isolation('agent', 'rejected', 'USERNS_AVAILABLE');
  metrics.isolation('check', 'rejected', 'a free-text reason with spaces');
  assert.equal(await metricValue(registry, 'worldline_isolation_decisions_total', { reason: 'USERNS_AVAILABLE' }), 1);
  assert.equal(await metricValue(registry, 'worldline_isolation_decisions_total', { reason: 'other' }), 1);
  metrics.setWorlds({ Running: 3 });
  assert.equal(await metricValue(registry, 'worldline_worlds', { phase: 'Running' }), 3);
  assert.equal(await metricValue(registry, 'worldline_worlds', { phase: 'Failed' }), 0);
  metrics.networkRefusals.inc();
  metrics.timeFork()();
  const text = await registry.metrics();
  for (const name of ['worldline_network_refusals_total 1', 'worldline_fork_duration_seconds_count 1', 'worldline_capture_duration_seconds_count 0']) {
    assert.ok(text.includes(name), name);
  }
  assert.equal(createAgentMetrics(registry).admissionDecisions, metrics.admissionDecisions, 'creating twice reuses the registered metrics');
});

test('property: through the authority, any admit/release sequence stays within every ceiling', () => {
  const command = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('admit' as const),
        holder: fc.integer({ min: 0, max: 12 }),
        stage: fc.constantFrom('agent' as const, 'check' as const),
        cpuMillis: fc.option(fc.integer({ min: 0, max: 5000 }), { nil: undefined }),
        memoryBytes: fc.option(fc.integer({ min: 1, max: 5 * GiB }), { nil: undefined }),
        unknown: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), holder: fc.integer({ min: 0, max: 12 }) }) },
  );
  fc.assert(
    fc.property(fc.array(command, { maxLength: 50 }), (commands) => {
      let observed = roomy;
      const { authority, db } = setup(() => observed);
      for (const c of commands) {
        if (c.kind === 'release') {
          authority.release(`h${c.holder}`);
        } else {
          observed = c.unknown ? { ...roomy, tasks: 'unknown' } : roomy;
          const before = authority.reservations().some((r) => r.holder === `h${c.holder}`);
          const r = authority.admit({ holder: `h${c.holder}`, stage: c.stage, resources: { cpuMillis: c.cpuMillis, memoryBytes: c.memoryBytes } });
          assert.equal(ADMISSION_OUTCOMES.filter((o) => o === r.outcome).length, 1);
          if (before) assert.equal(r.existing, true);
          else if (c.unknown) assert.ok(r.outcome !== 'RESOURCES_UNAVAILABLE' && r.outcome !== 'ADMITTED');
        }
        const t = authority.totals();
        for (const k of ['cpuMillis', 'memoryBytes', 'pids', 'worlds'] as const) assert.ok(t[k] <= ceilings[k]);
      }
      db.close();
    }),
    { numRuns: 150 },
  );
});

// ---- measurements from a fake /proc ----------------------------------------------------------------------

function fakeProc(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-proc-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const MEMINFO = 'MemTotal:       16384000 kB\nMemFree:         1000000 kB\nMemAvailable:    8192000 kB\n';
const STAT = 'cpu  1 2 3\ncpu0 1 2 3\ncpu1 1 2 3\ncpu2 1 2 3\nintr 0\n';

test('observeNode reads MemAvailable, tasks, the task limit and CPUs', (t) => {
  const dir = fakeProc({ meminfo: MEMINFO, loadavg: '0.10 0.20 0.30 3/412 9999\n', 'sys/kernel/pid_max': '32768\n', 'sys/kernel/threads-max': '20000\n', stat: STAT });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.deepEqual(observeNode({ procDir: dir }), { memAvailableBytes: 8192000 * 1024, tasks: 412, pidMax: 20000, cpuCount: 3, storeFreeBytes: 'unknown', storeUsedByRunsBytes: 'unknown' });
});

test('observeNode: an unreadable or garbled file makes that field unknown, and admission answers RESOURCE_STATE_UNKNOWN', (t) => {
  const dir = fakeProc({ meminfo: 'MemTotal: 1 kB\n', loadavg: 'garbage', 'sys/kernel/pid_max': 'max\n', '1/task/1': '', '2/task/2': '', '2/task/3': '' });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const o = observeNode({ procDir: dir });
  assert.deepEqual(o, { memAvailableBytes: 'unknown', tasks: 3, pidMax: 'unknown', cpuCount: 'unknown', storeFreeBytes: 'unknown', storeUsedByRunsBytes: 'unknown' }, 'tasks fall back to counting /proc/<pid>/task');
  const { authority } = setup(() => observeNode({ procDir: dir }));
  const r = authority.admit({ holder: 'w', stage: 'agent' });
  assert.equal(r.outcome, 'RESOURCE_STATE_UNKNOWN');
  assert.deepEqual(r.unknown, ['memAvailableBytes', 'pidMax', 'storeFreeBytes']);
  const missing = observeNode({ procDir: join(dir, 'nowhere') });
  assert.deepEqual(missing, { memAvailableBytes: 'unknown', tasks: 'unknown', pidMax: 'unknown', cpuCount: 'unknown', storeFreeBytes: 'unknown', storeUsedByRunsBytes: 'unknown' });
});

test('host ceilings: CPUs x 1000, MemTotal less its reserve, the task limit less its reserve', (t) => {
  const dir = fakeProc({ meminfo: MEMINFO, 'sys/kernel/pid_max': '32768\n', stat: STAT });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const host = readHostCeilings({ procDir: dir, cgroupDir: join(dir, 'no-cgroup') });
  const total = 16384000 * 1024;
  assert.deepEqual(host.ceilings, { cpuMillis: 3000, memoryBytes: Math.floor((total - Math.floor(total / 10)) / 4096) * 4096, pids: 32768 - 3276 });
  const p = loadAdmissionPolicy({ 'node-worlds': '8' }, { procDir: dir, cgroupDir: join(dir, 'no-cgroup'), storeDir: dir });
  assert.ok(p.ok);
  const none = loadAdmissionPolicy({}, { procDir: join(dir, 'nowhere'), cgroupDir: join(dir, 'no-cgroup') });
  assert.equal(none.ok, false);
  if (!none.ok) assert.deepEqual(none.fields, ['node-cpu', 'node-memory', 'node-pids', 'node-ephemeral-storage']);
  const real = loadAdmissionPolicy({}, { storeDir: dir });
  assert.ok(real.ok, real.ok ? '' : real.message);
});
