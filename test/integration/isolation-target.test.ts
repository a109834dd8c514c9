// The isolation observation's target is measured, not copied from the request: the node-agent runs under
// `setarch i686` (the kernel's 32-bit x86 persona, inherited by every process it starts), so the kernel
// tells the sandbox's workload it runs on i686 while the agent, built for x64, asks for amd64. The frame's
// uname says 386, the decision refuses TARGET_MISMATCH, and the World never runs; on the same kernel
// without the persona (every other stack test) the target is amd64 and the decision is sufficient.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { machine } from 'node:os';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

describe('the isolation target comes from the kernel', () => {
  let s: Stack;

  before(async () => {
    assert.equal(machine(), 'x86_64', 'this test needs an x86_64 kernel, whose i686 persona names another architecture');
    s = await startStack({ nodeName: 'persona-node', agentWrapper: ['setarch', 'i686'] });
  });
  after(async () => {
    await s?.stop();
  });

  test('a kernel that tells the workload i686 is observed as 386 and refused TARGET_MISMATCH before the workload runs', async () => {
    const path = join(s.scratch, 'persona');
    ownedDir(path);
    ownedFile(join(path, 'a.txt'), 'a\n');
    assert.equal((await applyRoot(s, 'persona', path)).status.phase, 'Ready');
    const r = await runWorld(s, 'persona-w', shWorld(['persona'], 'echo ran > a.txt'));
    assert.equal(r.status.phase, 'Refused', describeRun(r));
    assert.equal(r.status.reason, 'ISOLATION_INSUFFICIENT', describeRun(r));
    assert.equal(r.status.isolation.decision.outcome, 'rejected');
    assert.deepEqual(r.status.isolation.decision.reasons, ['TARGET_MISMATCH']);
    assert.deepEqual(r.status.isolation.observation.target, { os: 'linux', arch: '386' });
    assert.equal(r.status.isolation.observation.complete, true);
  });
});
