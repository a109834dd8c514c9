// The disk dimension of admission, pure: ephemeral storage against the node ceiling minus live
// reservations, against the store's measured free space less what live runs may still write into their
// sparse images, an unmeasured store is RESOURCE_STATE_UNKNOWN (never insufficient), and the per-world limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, diskFreeForNew, type ReservedAmounts } from '../../node-agent/admission/admission-decide.js';
import { parseCeilings, type NodeCeilings, type PerWorldPolicy } from '../../node-agent/admission/admission-policy.js';
import { storeReserve } from '../../node-agent/admission/admission-host.js';
import type { ObservedState } from '../../node-agent/admission/observe-node.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const ceilings: NodeCeilings = { cpuMillis: 64_000, memoryBytes: 64 * GiB, pids: 100_000, worlds: 64, ephemeralStorageBytes: 10 * GiB };
const perWorld: PerWorldPolicy = {
  limits: { cpuMillis: 4000, memoryBytes: 4 * GiB, pids: 4096, wallTimeSeconds: 86400, outputBytes: 4 * GiB, ephemeralStorageBytes: 8 * GiB },
  defaults: { cpuMillis: 100, memoryBytes: 64 * MiB, pids: 64, wallTimeSeconds: 3600, outputBytes: 64 * MiB, ephemeralStorageBytes: GiB },
};
const roomy: ObservedState = { memAvailableBytes: 64 * GiB, tasks: 100, pidMax: 4_194_304, cpuCount: 4, storeFreeBytes: 100 * GiB, storeUsedByRunsBytes: 0 };
const run = (disk: number): ReservedAmounts => ({ cpuMillis: 100, memoryBytes: 64 * MiB, pids: 64, ephemeralStorageBytes: disk });

test('an unset ephemeral storage takes the default and is reserved', () => {
  const d = decide({ stage: 'agent' }, ceilings, perWorld, roomy, []);
  assert.equal(d.outcome, 'ADMITTED', d.message);
  assert.equal(d.reserve?.ephemeralStorageBytes, GiB);
  assert.match(d.message, /ephemeral storage 1073741824 bytes \(1\.00Gi\)/);
});

test('the ceiling minus live reservations: 10Gi holds 9Gi + 1Gi, not a byte more', () => {
  const live = [run(4 * GiB), run(5 * GiB)];
  assert.equal(decide({ stage: 'agent', ephemeralStorageBytes: GiB }, ceilings, perWorld, roomy, live).outcome, 'ADMITTED');
  const d = decide({ stage: 'check', ephemeralStorageBytes: GiB + 4096 }, ceilings, perWorld, roomy, live);
  assert.equal(d.outcome, 'RESOURCES_UNAVAILABLE');
  assert.deepEqual(d.shortfalls, [{ resource: 'ephemeral_storage_bytes', basis: 'reserved', requested: GiB + 4096, available: GiB, short: 4096 }]);
  assert.match(d.message, /ephemeral_storage_bytes: asks .* left of the node ceiling .*\(short by 4096 bytes\)/);
});

test('measured: free store space less what live runs may still write into their sparse images', () => {
  // 3Gi free; two runs hold 2Gi each and have written 1.5Gi of it: 2.5Gi may still come, 0.5Gi is left.
  assert.equal(diskFreeForNew(3 * GiB, [run(2 * GiB), run(2 * GiB)], 1.5 * GiB), 0.5 * GiB);
  // unknown use counts the reservations whole; use above the reservations never adds room
  assert.equal(diskFreeForNew(3 * GiB, [run(2 * GiB)], 'unknown'), GiB);
  assert.equal(diskFreeForNew(3 * GiB, [run(2 * GiB)], 5 * GiB), 3 * GiB);
  assert.equal(diskFreeForNew(GiB, [run(4 * GiB)], 0), 0);
  const observed = { ...roomy, storeFreeBytes: 3 * GiB, storeUsedByRunsBytes: 1.5 * GiB };
  const live = [run(2 * GiB), run(2 * GiB)];
  assert.equal(decide({ stage: 'agent', ephemeralStorageBytes: 0.5 * GiB }, ceilings, perWorld, observed, live).outcome, 'ADMITTED');
  const d = decide({ stage: 'agent', ephemeralStorageBytes: GiB }, ceilings, perWorld, observed, live);
  assert.equal(d.outcome, 'RESOURCES_UNAVAILABLE');
  assert.deepEqual(d.shortfalls, [{ resource: 'ephemeral_storage_bytes', basis: 'measured', requested: GiB, available: 0.5 * GiB, short: 0.5 * GiB }]);
  assert.match(d.message, /the kernel reports 536870912 bytes \(512\.0Mi\) free/);
});

test('an unmeasured store is RESOURCE_STATE_UNKNOWN, never insufficient, even when the ceiling alone would refuse', () => {
  const d = decide({ stage: 'agent', ephemeralStorageBytes: 8 * GiB }, ceilings, perWorld, { ...roomy, storeFreeBytes: 'unknown' }, [run(9 * GiB)]);
  assert.equal(d.outcome, 'RESOURCE_STATE_UNKNOWN');
  assert.deepEqual(d.unknown, ['storeFreeBytes']);
});

test('above the per-world limit is RESOURCE_LIMIT_EXCEEDED naming ephemeralStorageBytes', () => {
  const d = decide({ stage: 'agent', ephemeralStorageBytes: 9 * GiB }, ceilings, perWorld, roomy, []);
  assert.equal(d.outcome, 'RESOURCE_LIMIT_EXCEEDED');
  assert.deepEqual(d.exceeded, [{ field: 'ephemeralStorageBytes', requested: 9 * GiB, limit: 8 * GiB }]);
});

test('policy: the ceiling comes from the store filesystem less its reserve; limit = ceiling, default = min(1Gi, limit)', () => {
  assert.equal(storeReserve(5 * GiB), GiB, 'at least 1Gi');
  assert.equal(storeReserve(100 * GiB), 10 * GiB, '10%');
  assert.equal(storeReserve(1000 * GiB), 20 * GiB, 'at most 20Gi');
  const host = { cpuMillis: 1000, memoryBytes: GiB, pids: 1000, ephemeralStorageBytes: 512 * MiB };
  const p = parseCeilings({}, host);
  assert.ok(p.ok, p.ok ? '' : p.message);
  assert.equal(p.policy.ceilings.ephemeralStorageBytes, 512 * MiB);
  assert.equal(p.policy.perWorld.limits.ephemeralStorageBytes, 512 * MiB);
  assert.equal(p.policy.perWorld.defaults.ephemeralStorageBytes, 512 * MiB);
  const set = parseCeilings({ 'node-ephemeral-storage': '1Ti', 'world-ephemeral-storage': '100Gi', 'world-default-ephemeral-storage': '2Gi' }, host);
  assert.ok(set.ok, set.ok ? '' : set.message);
  assert.deepEqual([set.policy.ceilings.ephemeralStorageBytes, set.policy.perWorld.limits.ephemeralStorageBytes, set.policy.perWorld.defaults.ephemeralStorageBytes], [1024 * GiB, 100 * GiB, 2 * GiB]);
  const bad = parseCeilings({ 'world-default-ephemeral-storage': '2Gi', 'world-ephemeral-storage': '1Gi' }, host);
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.equal(bad.field, 'world-default-ephemeral-storage');
});
