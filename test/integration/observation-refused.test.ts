// The sandbox observation gate on the real path: a node-agent (real process, real API server, real
// sandbox) whose frames have one field made wrong between the sandbox and the gate (a test seam preloaded
// into the agent: test/support/observation-hooks.ts) refuses each World ISOLATION_OBSERVATION_INVALID
// naming that field, before anything of the workload runs. The same agent without the seam runs the
// same World: the refusal comes from the frame, not from the World.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { OBSERVATION_CORRUPT_ENV } from '../support/observation-hooks.js';
import { requireRoot } from '../support/require-root.js';
import { adoptSmallRoot, describeRun, FINAL_PHASES, outputOf, runWorld, shWorld, worldManifest } from '../support/worlds.js';

requireRoot('the observation gate test (a real node-agent and sandbox)');

/** Each corrupted field and the problem the gate must name for it. */
const CASES: [field: string, problem: RegExp][] = [
  ['uid.effective', /uid\.effective is 0, expected 1000/],
  ['capEff', /CapEff is 200000, expected 0/],
  ['noNewPrivs', /NoNewPrivs is 0, expected 1/],
  ['environ', /the environment at exec holds variables the plan did not give it: INJECTED_BY_TEST/],
  ['ns.mnt', /ns mnt id "mnt:\[bogus\]" is malformed/],
];

describe('a wrong observation frame refuses the World on the real path', () => {
  let s: Stack;
  before(async () => {
    s = await startStack({ nodeName: 'observation-node' });
    await adoptSmallRoot(s, 'obs', 1000);
  });
  after(async () => {
    await s?.stop();
  });

  const script = 'echo RAN > ran.txt && echo WORKLOAD-RAN';

  for (const [field, problem] of CASES) {
    test(`${field} made wrong: ISOLATION_OBSERVATION_INVALID naming it, and nothing of the workload ran`, async () => {
      await s.restartAgent({ signal: 'SIGTERM', env: { [OBSERVATION_CORRUPT_ENV]: field } });
      const name = `obs-${field.replace(/[^a-z]/gi, '').toLowerCase()}`;
      const r = await runWorld(s, name, shWorld(['obs'], script));
      assert.equal(r.status.phase, 'Failed', describeRun(r));
      assert.equal(r.status.reason, 'ISOLATION_OBSERVATION_INVALID', describeRun(r));
      assert.match(r.status.message, problem, describeRun(r));
      // Exactly one problem: only the corrupted field is wrong in the frame the gate saw.
      assert.equal((r.status.message as string).split('; ').length, 1, `more than the corrupted field was refused: ${r.status.message}`);
      const isolated = (r.status.conditions as { type: string; status: string; reason: string }[]).find((c) => c.type === 'Isolated');
      assert.deepEqual([isolated?.status, isolated?.reason], ['False', 'ISOLATION_OBSERVATION_INVALID']);
      assert.doesNotMatch(r.output, /WORKLOAD-RAN/, 'the workload ran');
      assert.equal(r.status.candidate, undefined, 'a candidate was recorded');
      await s.waitFor(`teardown of ${name}`, async () => !existsSync(join(s.storeDir, 'worlds', r.uid)), 10_000);
    });
  }

  test('without the seam the same World runs (RUNNING, Isolated) and is captured: the frame, not the World, was refused', async () => {
    await s.restartAgent({ signal: 'SIGTERM' });
    await s.apply(worldManifest('obs-clean', shWorld(['obs'], `${script} && sleep 3`)));
    const running = await s.waitWorld('obs-clean', ['Running']);
    assert.equal(running.status.reason, 'RUNNING', JSON.stringify(running.status));
    const isolated = (running.status.conditions as { type: string; status: string }[]).find((c) => c.type === 'Isolated');
    assert.equal(isolated?.status, 'True', JSON.stringify(running.status.conditions));
    const done = await s.waitWorld('obs-clean', FINAL_PHASES);
    const r = { world: done, status: done.status, uid: done.metadata.uid as string, output: outputOf(s, done.metadata.uid as string) };
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, /^WORKLOAD-RAN$/m);
    assert.equal(r.status.candidate.added, 1, describeRun(r));
  });
});
