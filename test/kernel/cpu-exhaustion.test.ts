// CPU exhaustion (a resource class of the containment contract): a workload that spins every core it
// can get, in a world's cgroup with a CPU limit, gets no more than the limit. Shown by the kernel's own
// accounting of the world's cgroup (cpu.stat: periods throttled and time taken away), not by
// timing the test; the limit is read back from the kernel first, as the node-agent does before a run.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup, buildRootfs, closeQuietly, readAll, sandboxOptions, start } from './native-fixtures.js';

requireRoot('the CPU exhaustion fixture');
const cleanup = new Cleanup();
after(() => cleanup.run());
const rootfs = buildRootfs(cleanup.tempDir('cpu'), cleanup);

function cpuStat(cg: WorldCgroup): Record<string, number> {
  const dirs = cg.dirs();
  const dir = dirs.length === 1 ? dirs[0]! : dirs.find((d) => d.includes('/cpu/'))!;
  const out: Record<string, number> = {};
  for (const line of readFileSync(join(dir, 'cpu.stat'), 'utf8').trim().split('\n')) {
    const [k, v] = line.split(' ') as [string, string];
    out[k] = Number(v);
  }
  return out;
}

test('a spinning workload under a 100m CPU limit is throttled by the kernel and uses about a tenth of a core', async () => {
  const layout = detectCgroups();
  const cg = WorldCgroup.create(layout, 'worldline', `cpu-test-${process.pid}`);
  cleanup.add(() => {
    cg.killAll();
    cg.remove();
  });
  const readback = cg.applyAndVerify({ cpuMillis: 100, memoryBytes: 256 * 1024 * 1024, pids: 64 });
  assert.equal(readback.cpuMillis, 100, 'the kernel holds the limit asked for');

  // Four spinners (more than the machine's cores would need) for 2 s of wall time, then they stop.
  const spin = 'for i in 1 2 3 4; do (end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do :; done) & done; wait; echo done';
  const { handle, channel, exited } = start(sandboxOptions(rootfs, spin, { cgroupProcs: cg.procsFiles() }));
  try {
    const out = readAll(handle.stdout!);
    await channel.observe();
    channel.go();
    await channel.started();
    const exit = await exited;
    assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
    assert.match(await out, /^done$/m);
  } finally {
    channel.close();
    closeQuietly(handle.pidfd);
  }
  const stat = cpuStat(cg);
  assert.ok(stat['nr_throttled']! > 0, `the kernel throttled the world: ${JSON.stringify(stat)}`);
  const throttledNs = stat['throttled_time'] ?? (stat['throttled_usec'] ?? 0) * 1000;
  assert.ok(throttledNs > 0, `time was taken away from it: ${JSON.stringify(stat)}`);
  // At 10 ms of CPU per 100 ms period, four spinners exhaust the quota in almost every period they run in.
  assert.ok(stat['nr_throttled']! >= stat['nr_periods']! / 2, `throttled in ${stat['nr_throttled']} of ${stat['nr_periods']} periods`);
});
