// The pure admission decision and the policy parser: each outcome from a table, the order of the checks,
// and a property over random admit/release sequences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decide, sumReservations, type DecideRequest, type ReservedAmounts } from '../../node-agent/admission/admission-decide.js';
import {
  ADMISSION_OUTCOMES,
  ADMISSION_CONFIG_KEYS,
  admissionConfigFrom,
  parseCeilings,
  type NodeCeilings,
  type PerWorldPolicy,
} from '../../node-agent/admission/admission-policy.js';
import type { ObservedState } from '../../node-agent/admission/observe-node.js';
import { ceilings, GiB, perWorld, roomy } from '../support/admission-fixtures.js';

const agent = (r: Partial<DecideRequest> = {}): DecideRequest => ({ stage: 'agent', ...r });
const held = (n: number, each: Partial<ReservedAmounts> = {}): ReservedAmounts[] =>
  Array.from({ length: n }, () => ({ cpuMillis: 1000, memoryBytes: 2 * GiB, pids: 1024, ephemeralStorageBytes: GiB, ...each }));

interface Row {
  name: string;
  request: DecideRequest;
  ceilings?: NodeCeilings;
  perWorld?: PerWorldPolicy;
  observed?: ObservedState;
  reservations?: ReservedAmounts[];
  outcome: (typeof ADMISSION_OUTCOMES)[number];
  message?: RegExp;
}

const table: Row[] = [
  { name: 'an empty request gets the per-world defaults', request: agent(), outcome: 'ADMITTED', message: /1000m CPU.*2147483648 bytes.*1024 tasks/ },
  { name: 'a check within limits', request: { stage: 'check', cpuMillis: 500, memoryBytes: GiB, pids: 64 }, outcome: 'ADMITTED' },
  { name: 'exactly the last room left', request: agent({ cpuMillis: 1000, memoryBytes: 2 * GiB, pids: 1024 }), reservations: held(3), outcome: 'ADMITTED' },
  { name: 'a malformed node ceiling', request: agent(), ceilings: { ...ceilings, memoryBytes: -1 }, outcome: 'RESOURCE_POLICY_INVALID', message: /node-memory/ },
  { name: 'a NaN node ceiling', request: agent(), ceilings: { ...ceilings, pids: Number.NaN }, outcome: 'RESOURCE_POLICY_INVALID', message: /node-pids/ },
  {
    name: 'a default above its limit',
    request: agent(),
    perWorld: { ...perWorld, defaults: { ...perWorld.defaults, pids: 5000 } },
    outcome: 'RESOURCE_POLICY_INVALID',
    message: /world-default-pids/,
  },
  { name: 'a fractional request', request: agent({ cpuMillis: 1.5 }), outcome: 'RESOURCE_POLICY_INVALID', message: /cpuMillis 1.5/ },
  { name: 'a zero request', request: agent({ memoryBytes: 0 }), outcome: 'RESOURCE_POLICY_INVALID', message: /memoryBytes 0/ },
  { name: 'an unknown stage', request: { stage: 'service' as 'agent' }, outcome: 'RESOURCE_POLICY_INVALID', message: /stage "service"/ },
  { name: 'policy comes before limits', request: agent({ memoryBytes: 100 * GiB }), ceilings: { ...ceilings, cpuMillis: 0.5 }, outcome: 'RESOURCE_POLICY_INVALID' },
  { name: 'memory above the per-world limit', request: agent({ memoryBytes: 5 * GiB }), outcome: 'RESOURCE_LIMIT_EXCEEDED', message: /memoryBytes .* above the limit/ },
  { name: 'wall time above the per-world limit', request: agent({ wallTimeSeconds: 86401 }), outcome: 'RESOURCE_LIMIT_EXCEEDED', message: /wallTimeSeconds 86401s/ },
  {
    name: 'limits come before an unknown state',
    request: agent({ pids: 5000 }),
    observed: { ...roomy, memAvailableBytes: 'unknown' },
    outcome: 'RESOURCE_LIMIT_EXCEEDED',
  },
  { name: 'memory unmeasured', request: agent(), observed: { ...roomy, memAvailableBytes: 'unknown' }, outcome: 'RESOURCE_STATE_UNKNOWN', message: /memAvailableBytes/ },
  { name: 'tasks unmeasured', request: agent(), observed: { ...roomy, tasks: 'unknown' }, outcome: 'RESOURCE_STATE_UNKNOWN', message: /tasks/ },
  { name: 'the task limit unmeasured', request: agent(), observed: { ...roomy, pidMax: 'unknown' }, outcome: 'RESOURCE_STATE_UNKNOWN', message: /pidMax/ },
  { name: 'the cpu count is not needed', request: agent(), observed: { ...roomy, cpuCount: 'unknown' }, outcome: 'ADMITTED' },
  {
    name: 'unknown even when the node is full: never reported as insufficient',
    request: agent(),
    observed: { ...roomy, memAvailableBytes: 'unknown' },
    reservations: held(4),
    outcome: 'RESOURCE_STATE_UNKNOWN',
  },
  { name: 'the worlds ceiling is reached', request: agent({ cpuMillis: 1, memoryBytes: 1, pids: 1 }), reservations: held(4, { cpuMillis: 1, memoryBytes: 1, pids: 1 }), outcome: 'RESOURCES_UNAVAILABLE', message: /worlds: asks 1 reservation, 0 reservations left/ },
  {
    name: 'memory short against the ceiling',
    request: agent({ memoryBytes: 3 * GiB }),
    reservations: held(3),
    outcome: 'RESOURCES_UNAVAILABLE',
    message: /memory_bytes: asks 3221225472 bytes.*, 2147483648 bytes.* left of the node ceiling.*short by 1073741824 bytes/,
  },
  { name: 'cpu short against the ceiling', request: agent({ cpuMillis: 1500 }), reservations: held(3), outcome: 'RESOURCES_UNAVAILABLE', message: /cpu_millis: asks 1500m CPU, 1000m CPU left .*\(short by 500m CPU\)/ },
  {
    name: 'memory short against what the kernel reports free',
    request: agent(),
    observed: { ...roomy, memAvailableBytes: GiB },
    outcome: 'RESOURCES_UNAVAILABLE',
    message: /the kernel reports 1073741824 bytes .* free/,
  },
  { name: 'tasks short against the task limit', request: agent({ pids: 100 }), observed: { ...roomy, tasks: 32700, pidMax: 32768 }, outcome: 'RESOURCES_UNAVAILABLE', message: /pids: .* 68 tasks free .*short by 32 tasks/ },
];

for (const row of table) {
  test(`decide: ${row.name} -> ${row.outcome}`, () => {
    const d = decide(row.request, row.ceilings ?? ceilings, row.perWorld ?? perWorld, row.observed ?? roomy, row.reservations ?? []);
    assert.equal(d.outcome, row.outcome, d.message);
    if (row.message) assert.match(d.message, row.message);
    assert.equal(d.reserve !== undefined, d.outcome === 'ADMITTED');
  });
}

test('decide names every short resource', () => {
  const d = decide(agent({ cpuMillis: 4000, memoryBytes: 4 * GiB }), ceilings, perWorld, { ...roomy, memAvailableBytes: GiB }, held(2));
  assert.equal(d.outcome, 'RESOURCES_UNAVAILABLE');
  assert.deepEqual(
    d.shortfalls?.map((s) => [s.resource, s.basis, s.short]),
    [
      ['cpu_millis', 'reserved', 2000],
      ['memory_bytes', 'measured', 3 * GiB],
    ],
  );
});

test('decide resolves unset fields to the per-world defaults', () => {
  const d = decide({ stage: 'check', pids: 10 }, ceilings, perWorld, roomy, []);
  assert.deepEqual(d.reserve, { ...perWorld.defaults, pids: 10 });
});

test('fill until RESOURCES_UNAVAILABLE, release one, then ADMITTED', () => {
  const live: ReservedAmounts[] = [];
  for (let i = 0; i < 4; i++) {
    const d = decide(agent(), ceilings, perWorld, roomy, live);
    assert.equal(d.outcome, 'ADMITTED');
    live.push(d.reserve!);
  }
  const full = decide(agent(), ceilings, perWorld, roomy, live);
  assert.equal(full.outcome, 'RESOURCES_UNAVAILABLE');
  assert.deepEqual(full.shortfalls?.map((s) => s.resource), ['cpu_millis', 'memory_bytes', 'worlds']);
  live.pop();
  assert.equal(decide(agent(), ceilings, perWorld, roomy, live).outcome, 'ADMITTED');
});

test('parseCeilings reads quantities, durations and counts, with derived per-world values', () => {
  const r = parseCeilings({ 'node-cpu': '7500m', 'node-memory': '30Gi', 'node-pids': '20000', 'node-ephemeral-storage': '100Gi', 'world-wall-time': '2h', 'world-default-memory': '512Mi' });
  assert.ok(r.ok, r.ok ? '' : r.message);
  assert.deepEqual(r.policy.ceilings, { cpuMillis: 7500, memoryBytes: 30 * GiB, pids: 20000, worlds: 64, ephemeralStorageBytes: 100 * GiB });
  assert.deepEqual(r.policy.perWorld.limits, { cpuMillis: 7500, memoryBytes: 30 * GiB, pids: 4096, wallTimeSeconds: 7200, outputBytes: 8 * GiB, ephemeralStorageBytes: 100 * GiB });
  assert.deepEqual(r.policy.perWorld.defaults, { cpuMillis: 1000, memoryBytes: 512 * 2 ** 20, pids: 1024, wallTimeSeconds: 3600, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: GiB });
});

test('parseCeilings takes host values for what is not configured, and caps defaults at small limits', () => {
  const r = parseCeilings({ 'world-wall-time': '30m' }, { cpuMillis: 500, memoryBytes: GiB, pids: 600, ephemeralStorageBytes: 256 * 2 ** 20 });
  assert.ok(r.ok, r.ok ? '' : r.message);
  assert.deepEqual(r.policy.ceilings, { cpuMillis: 500, memoryBytes: GiB, pids: 600, worlds: 64, ephemeralStorageBytes: 256 * 2 ** 20 });
  assert.deepEqual(r.policy.perWorld.defaults, { cpuMillis: 500, memoryBytes: GiB, pids: 600, wallTimeSeconds: 1800, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: 256 * 2 ** 20 });
});

const malformed: [string, Record<string, string | undefined>, RegExp][] = [
  ['node-memory', { 'node-memory': 'lots' }, /node-memory "lots" is not a byte quantity/],
  ['node-cpu', { 'node-cpu': '-2' }, /node-cpu "-2" is not a CPU quantity/],
  ['node-pids', { 'node-pids': '1.5' }, /node-pids "1.5" is not a non-negative integer/],
  ['node-worlds', { 'node-worlds': '' }, /node-worlds "" is empty/],
  ['world-wall-time', { 'world-wall-time': '10 minutes' }, /world-wall-time "10 minutes" is not a duration/],
  ['world-pids', { 'world-pids': '0' }, /world-pids "0" must be at least 1/],
  ['world-default-memory', { 'world-default-memory': '5Gi', 'world-memory': '4Gi' }, /default memoryBytes 5368709120 is above its limit/],
  ['node-memory', { 'node-memory': '1e400' }, /node-memory "1e400" is too large/],
  // a default derived from nothing but the host's ceiling still names the key at fault (found by the property below)
  ['world-default-cpu', { 'world-default-cpu': '5' }, /world-default-cpu: per-world default cpuMillis 5000 is above its limit 4000 \(world-cpu\)/],
];

for (const [field, raw, message] of malformed) {
  test(`parseCeilings: malformed ${field} is RESOURCE_POLICY_INVALID naming it`, () => {
    const host = { cpuMillis: 4000, memoryBytes: 8 * GiB, pids: 8192, ephemeralStorageBytes: 64 * GiB };
    const r = parseCeilings(raw, host);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.outcome, 'RESOURCE_POLICY_INVALID');
    assert.equal(r.field, field);
    assert.match(r.message, message);
  });
}

test('parseCeilings names a ceiling that is neither configured nor read from the host, and never throws', () => {
  const r = parseCeilings({});
  assert.equal(r.ok, false);
  if (!r.ok) assert.deepEqual(r.fields, ['node-cpu', 'node-memory', 'node-pids', 'node-ephemeral-storage']);
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom(...ADMISSION_CONFIG_KEYS.map((k) => k.key)), fc.oneof(fc.string(), fc.constant(undefined))), (raw) => {
      const p = parseCeilings(raw, { cpuMillis: 1000, memoryBytes: GiB, pids: 1000, ephemeralStorageBytes: GiB });
      assert.ok(p.ok || (p.outcome === 'RESOURCE_POLICY_INVALID' && p.message.includes(p.field)));
    }),
  );
});

test('admissionConfigFrom prefers flags to the environment', () => {
  const raw = admissionConfigFrom({ 'node-cpu': '2' }, { WORLDLINE_NODE_CPU: '3', WORLDLINE_NODE_MEMORY: '1Gi' });
  assert.equal(raw['node-cpu'], '2');
  assert.equal(raw['node-memory'], '1Gi');
  assert.equal(raw['node-pids'], undefined);
});

// ---- property: any sequence of admits and releases --------------------------------------------------------

const measured = fc.oneof(fc.constant('unknown' as const), fc.nat({ max: 64 * GiB }));
const observedArb = fc.record({
  memAvailableBytes: fc.oneof({ weight: 4, arbitrary: fc.constant(64 * GiB) }, { weight: 1, arbitrary: measured }),
  tasks: fc.oneof({ weight: 4, arbitrary: fc.constant(100) }, { weight: 1, arbitrary: fc.oneof(fc.constant('unknown' as const), fc.nat({ max: 40000 })) }),
  pidMax: fc.oneof({ weight: 4, arbitrary: fc.constant(4_194_304) }, { weight: 1, arbitrary: fc.oneof(fc.constant('unknown' as const), fc.nat({ max: 40000 })) }),
  cpuCount: fc.oneof(fc.constant('unknown' as const), fc.integer({ min: 1, max: 64 })),
  storeFreeBytes: fc.oneof({ weight: 4, arbitrary: fc.constant(1024 * GiB) }, { weight: 1, arbitrary: fc.oneof(fc.constant('unknown' as const), fc.nat({ max: 8 * GiB })) }),
  storeUsedByRunsBytes: fc.oneof(fc.constant('unknown' as const), fc.nat({ max: 8 * GiB })),
});
const requestArb: fc.Arbitrary<DecideRequest> = fc.record(
  {
    stage: fc.constantFrom('agent' as const, 'check' as const),
    cpuMillis: fc.integer({ min: -1, max: 5000 }),
    memoryBytes: fc.integer({ min: 0, max: 5 * GiB }),
    pids: fc.integer({ min: 1, max: 5000 }),
    wallTimeSeconds: fc.integer({ min: 1, max: 90000 }),
  },
  { requiredKeys: ['stage'] },
);
const commandArb = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('admit' as const), request: requestArb, observed: observedArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), index: fc.nat() }) },
);

test('property: live reservations never exceed a ceiling, and every answer is exactly one of the five', () => {
  fc.assert(
    fc.property(fc.array(commandArb, { maxLength: 60 }), (commands) => {
      const live: ReservedAmounts[] = [];
      for (const c of commands) {
        if (c.kind === 'release') {
          if (live.length > 0) live.splice(c.index % live.length, 1);
        } else {
          const d = decide(c.request, ceilings, perWorld, c.observed, live);
          assert.equal(ADMISSION_OUTCOMES.filter((o) => o === d.outcome).length, 1);
          const anyUnknown = [c.observed.memAvailableBytes, c.observed.tasks, c.observed.pidMax, c.observed.storeFreeBytes].includes('unknown');
          if (anyUnknown) assert.notEqual(d.outcome, 'RESOURCES_UNAVAILABLE', 'an unmeasured state is never insufficient');
          if (d.outcome === 'RESOURCE_STATE_UNKNOWN') assert.ok(anyUnknown);
          if (d.outcome === 'ADMITTED') live.push(d.reserve!);
        }
        const t = sumReservations(live);
        for (const k of ['cpuMillis', 'memoryBytes', 'pids', 'worlds'] as const) assert.ok(t[k] <= ceilings[k], `${k} ${t[k]} > ${ceilings[k]}`);
      }
    }),
    { numRuns: 300 },
  );
});
