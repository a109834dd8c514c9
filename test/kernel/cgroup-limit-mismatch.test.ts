// A world's cgroup limits are read back from the kernel after they are written, and a limit the kernel
// does not hold as asked refuses the run (CGROUP_LIMIT_MISMATCH) instead of running it under another
// limit. On the node's real cgroups: the kernel clamps a memory limit above its page counter's maximum
// to "no limit", which must not pass for the finite limit that was asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CgroupError, detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the cgroup read-back tests');

test('a memory limit the kernel clamps to unlimited is refused with CGROUP_LIMIT_MISMATCH; one it holds is returned as read back', (t) => {
  const layout = detectCgroups();
  const cg = WorldCgroup.create(layout, 'worldline', `limit-mismatch-test-${process.pid}`);
  t.after(() => cg.remove());

  // 8 EiB is above the largest limit the kernel's page counter holds: it keeps "no limit" instead.
  const tooBig = 2 ** 63;
  assert.throws(
    () => cg.applyAndVerify({ cpuMillis: 250, memoryBytes: tooBig, pids: 32 }),
    (e: unknown) => e instanceof CgroupError && e.code === 'CGROUP_LIMIT_MISMATCH' && e.message.includes(`memory max, asked ${String(tooBig)}`),
  );
  assert.equal(cg.readLimits().memoryBytes, 'max', 'the kernel really holds no memory limit after the clamp');

  // Held as asked: the read-back equals the request.
  const held = cg.applyAndVerify({ cpuMillis: 250, memoryBytes: 64 * 1024 * 1024, pids: 32 });
  assert.deepEqual(held, { cpuMillis: 250, memoryBytes: 64 * 1024 * 1024, pids: 32 });
});
