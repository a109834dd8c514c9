// The isolation observation's bindings come from the records that produced them (issue 13, item 7), on
// a real stack: the request from the World as the API server holds it at the gate, the subject from the
// generations the kernel shows mounted as the World's lower layers, completeness from what could be
// measured. The node-agent is started with a pause at every isolation gate (test/support/observation-
// hooks.ts, GATE_PAUSE_ENV), so a test changes what one producer reads between the launch plan and the
// gate: an edit of spec.isolation is REQUEST_MISMATCH; the Root's older generation mounted at the lower
// layer's path is SUBJECT_MISMATCH; nothing mounted there leaves the observation incomplete
// (ENFORCEMENT_INCOMPLETE). Each refuses before the workload runs; a World nobody touches passes the same
// paused gate and runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { startStack, type Stack } from '../support/stack.js';
import { condition, kc } from '../support/wait.js';
import { GATE_PAUSE_ENV } from '../support/observation-hooks.js';
import { applyRoot, describeRun, runWorld, shWorld, worldManifest, type WorldResult } from '../support/worlds.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';

const WORKLOAD = 'echo WORKLOAD-RAN';

describe('isolation observations bound by their producers', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'producers-node' });
    const p = join(s.scratch, 'prod');
    mkdirSync(p, { mode: 0o755 });
    writeFileSync(join(p, 'a.txt'), 'alpha\n');
    chownSync(p, 1000, 1000);
    chownSync(join(p, 'a.txt'), 1000, 1000);
    assert.equal((await applyRoot(s, 'prod', p)).status.phase, 'Ready');
    // Generation 2 of the Root, so that generation 1 is an older generation of the same Root.
    const w = await runWorld(s, 'gen2', shWorld(['prod'], 'echo two > b.txt'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.apply(collapseManifest('gen2-c', 'gen2'));
    assert.equal((await waitCollapse(s, 'gen2-c', 30_000)).status.phase, 'Committed');
    await s.restartAgent({ env: { [GATE_PAUSE_ENV]: '1' } });
  });
  after(async () => {
    await s?.stop();
  });

  /** Runs a World that stops at its gate, lets `between` act there, then lets it go on; its final state. */
  async function pausedRun(name: string, between: (uid: string) => void | Promise<void>): Promise<WorldResult> {
    await s.apply(worldManifest(name, shWorld(['prod'], WORKLOAD)));
    const uid = await s.waitFor<string>(`World ${name} has a uid`, async () => (await s.get('world', name))?.metadata?.uid as string | undefined);
    const flag = join(s.storeDir, 'test-hooks', `gate-${uid}.paused`);
    await s.waitFor(`World ${name} paused at its gate`, async () => existsSync(flag), 30_000);
    await between(uid);
    rmSync(flag);
    const world = await s.waitWorld(name, ['Captured', 'Failed', 'Refused', 'Collapsed']);
    const logs = s.agent.logs.map((r) => JSON.stringify(r)).join('\n');
    return { world, status: world.status, uid, output: logs.includes('WORKLOAD-RAN') ? 'WORKLOAD-RAN' : '' };
  }

  function refused(r: WorldResult, reason: string): void {
    assert.equal(r.status.reason, 'ISOLATION_INSUFFICIENT', describeRun(r));
    assert.ok(r.status.isolation.decision.reasons.includes(reason), JSON.stringify(r.status.isolation));
    assert.equal(r.status.candidate, undefined, 'a refused World has a candidate');
    assert.equal(r.status.exit?.code, undefined, 'the workload of a refused World ran');
    assert.equal(condition(r.world, 'Isolated')?.status, 'False');
  }

  test('a World nobody touches at its gate is bound to the same request and subject and runs', async () => {
    const r = await pausedRun('untouched', () => undefined);
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal(r.status.isolation.decision.outcome, 'reported-sufficient');
    assert.equal(r.status.isolation.observation.complete, true);
  });

  test('spec.isolation edited between the plan and the gate: the request the API server holds is another one (REQUEST_MISMATCH)', async () => {
    const r = await pausedRun('edited', async () => {
      await kc(s.cp, ['patch', 'world', 'edited', '-n', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { isolation: { controls: ['no-devices'] } } })]);
    });
    refused(r, 'REQUEST_MISMATCH');
    assert.ok(!r.status.isolation.decision.reasons.includes('SUBJECT_MISMATCH'));
  });

  /**
   * The topmost lower layer of the World's only Root (<store>/worlds/<uid>/layers/<root key>/lower/0): the
   * forked generation's own layer, which identifies it (node-agent/sandbox/rootfs.ts lowerTop).
   */
  const lowerOf = (uid: string): string => {
    const layers = join(s.storeDir, 'worlds', uid, 'layers');
    const [key] = readdirSync(layers).filter((n) => n !== 'lost+found');
    return join(layers, key!, 'lower', '0');
  };

  test('the Root\'s older generation mounted as the lower layer: the subject measured is not the plan\'s (SUBJECT_MISMATCH)', async () => {
    const r = await pausedRun('other-base', (uid) => {
      const lower = lowerOf(uid);
      // Generation 1's payload (the World forked generation 2, a stack whose own layer is mounted there).
      const older = readdirSync(join(s.storeDir, 'generations')).filter((g) => g.includes('_g1_')).map((g) => join(s.storeDir, 'generations', g, 'payload'))[0];
      assert.ok(older, 'no older generation payload in the store');
      execFileSync('umount', ['-l', lower]);
      execFileSync('mount', ['--bind', '-o', 'ro', older, lower]);
    });
    refused(r, 'SUBJECT_MISMATCH');
    assert.ok(!r.status.isolation.decision.reasons.includes('REQUEST_MISMATCH'));
  });

  test('no generation mounted as the lower layer: the subject cannot be measured, the observation is incomplete (ENFORCEMENT_INCOMPLETE)', async () => {
    const r = await pausedRun('no-lower', (uid) => {
      execFileSync('umount', ['-l', lowerOf(uid)]);
    });
    refused(r, 'ENFORCEMENT_INCOMPLETE');
    assert.equal(r.status.isolation.observation.complete, false);
    assert.ok((r.status.isolation.observation.notes as string[]).some((n) => /^not measured: the subject, from the generations mounted as the World's lower layers: the lower layer of Root prod .* is no generation of it the store knows/.test(n)), JSON.stringify(r.status.isolation.observation.notes));
  });

  // The launch holds the World's status writes (worlds/world-reconciler.ts, --launch-status-hold-ms): held
  // at its gate longer than the hold, a World shows Admitted; under a hold longer than the pause, nothing of
  // the agent's shows until the go-ahead, and then one write carries the steps.
  test('a launch held at its gate past the status hold (default 250 ms) shows Admitted while it waits', async () => {
    const r = await pausedRun('held-past', async () => {
      const w = await s.waitFor('World held-past shows Admitted while paused at its gate', async () => {
        const got = await s.get('world', 'held-past');
        return got?.status?.phase === 'Admitted' ? got : undefined;
      }, 10_000);
      assert.equal(condition(w, 'Admitted')?.status, 'True');
      assert.equal(condition(w, 'Isolated'), undefined, 'the gate has not decided yet');
    });
    assert.equal(r.status.phase, 'Captured', describeRun(r));
  });

  test('under a hold longer than the wait at the gate, the agent writes nothing until the go-ahead; then Admitted and Isolated arrive together', async () => {
    await s.restartAgent({ agentArgs: ['--launch-status-hold-ms', '60000'], env: { [GATE_PAUSE_ENV]: '1' } });
    const r = await pausedRun('held-long', async () => {
      await new Promise((done) => setTimeout(done, 1500));
      const w = await s.get('world', 'held-long');
      assert.equal(w?.status?.admission, undefined, `admitted and paused for 1.5 s, the World shows no admission yet: ${JSON.stringify(w?.status)}`);
      assert.notEqual(w?.status?.phase, 'Admitted');
      assert.equal(condition(w, 'Admitted'), undefined);
    });
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal(r.status.admission.outcome, 'ADMITTED', 'the record of each held step is written');
    assert.equal(condition(r.world, 'Admitted')?.status, 'True');
    assert.equal(condition(r.world, 'Isolated')?.status, 'True');
    assert.equal(r.status.isolation.decision.outcome, 'reported-sufficient');
  });
});
