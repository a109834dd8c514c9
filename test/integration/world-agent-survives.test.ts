// Nothing a World does may end its node-agent. Workloads that exec again at once used to make the agent
// read a different environment after the exec: most runs were refused falsely, and some threw where
// nothing caught it, which ended the agent and every World on the node. The environment is now observed
// at the exec itself (the sandbox reports the envp it hands to execve), so these run to Captured, and
// the agent outlives all of them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from '../support/stack.js';
import { adoptSmallRoot, describeRun, FINAL_PHASES, mountsBelow, outputOf, shWorld, worldManifest } from '../support/worlds.js';

/** Shell scripts that hand over to another program at once, each in its own way. */
const EXECS_AT_ONCE = [
  'sleep 2 & exec sleep 1',
  'exec sleep 0.3',
  'exec /usr/bin/env',
  'cd /tmp && exec sh -c "exec true"',
  'export EXTRA=1; exec sleep 0.2',
];
const ROUNDS = 6;

describe('a World cannot end its node-agent', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'survive-node' });
    await adoptSmallRoot(s, 'survive', 1000);
  });

  after(async () => {
    await s?.stop();
  });

  test(`${ROUNDS * EXECS_AT_ONCE.length} Worlds that exec at once all reach Captured, and the agent is the same live process throughout`, async () => {
    const pid = s.agent.pid;
    const exited = s.agent.waitExit().then((e) => e);
    let agentEnded: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    void exited.then((e) => (agentEnded = e));
    for (let round = 0; round < ROUNDS; round++) {
      const names = EXECS_AT_ONCE.map((_, i) => `exec-${round}-${i}`);
      // Applied together, so the agent starts them concurrently, under load.
      await Promise.all(names.map((name, i) => s.apply(worldManifest(name, shWorld(['survive'], EXECS_AT_ONCE[i]!)))));
      for (const [i, name] of names.entries()) {
        const w = await s.waitWorld(name, FINAL_PHASES, 'default', 90_000);
        const output = outputOf(s, w.metadata.uid as string);
        assert.equal(w.status.phase, 'Captured', `${EXECS_AT_ONCE[i]!}: ${describeRun({ world: w, status: w.status, uid: w.metadata.uid, output })}`);
        assert.equal(w.status.exit?.code, 0, EXECS_AT_ONCE[i]);
        assert.ok((w.status.isolation?.observation?.enforcedControls as string[]).includes('minimal-environment'), 'minimal-environment is measured at the exec');
      }
      assert.equal(agentEnded, undefined, `the node-agent exited during round ${round}: ${JSON.stringify(agentEnded)}`);
      process.kill(pid, 0); // throws ESRCH if the agent is gone
    }
    assert.equal(s.agent.pid, pid, 'the same agent process served every round');
    const errors = s.agent.logs.filter((r) => r.level === 'error');
    assert.deepEqual(errors, [], 'no world step or run ended in an error');
    // Status is written before teardown, so the last worlds' mounts may take a moment to go.
    await s.waitFor('every world torn down (no mount left below the store\'s worlds)', async () => mountsBelow(s.storeDir).filter((m) => m.includes('/worlds/')).length === 0, 30_000);
  });

  test('a workload started without a shell sees exactly the planned environment (the frame reported what it got)', async () => {
    await s.apply(worldManifest('env-exact', { roots: ['survive'], agent: { command: ['/usr/bin/env'], env: [{ name: 'GREETING', value: 'hello world' }] } }));
    const w = await s.waitWorld('env-exact', FINAL_PHASES);
    assert.equal(w.status.phase, 'Captured', JSON.stringify(w.status));
    const names = outputOf(s, w.metadata.uid as string).trim().split('\n').map((kv) => kv.slice(0, kv.indexOf('='))).sort();
    assert.deepEqual(names, ['GREETING', 'HOME', 'LANG', 'PATH']);
  });
});
