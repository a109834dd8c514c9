// The isolation gate on a real stack: between "sandbox ready" and "workload runs" the node-agent builds the
// containment contract's observation from measured facts and evaluates it against the governing Policy
// (or the built-in rule: os-sandboxed plus the World's own network control). Anything but
// reported-sufficient keeps the workload from ever running (ISOLATION_INSUFFICIENT) unless the World
// carries an isolation waiver (isolation-waiver.test.ts): the host network (Shared) included.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { machine } from 'node:os';
import { join } from 'node:path';
import { metricSum } from '../support/metrics-text.js';
import { startStack, type Stack } from '../support/stack.js';
import { condition } from '../support/wait.js';
import { applyRoot, describeRun, hashTree, listTree, runWorld, shWorld, type WorldResult } from '../support/worlds.js';

const OWNER = 1000;
const MARKER = 'ran-marker.txt';
/** Writes a marker into the Root (it would be in the candidate) and says so. */
const WORKLOAD = `echo WORKLOAD-RAN; echo ran > ${MARKER}`;

function policyManifest(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name }, spec });
}

async function isolationCounts(s: Stack): Promise<Record<string, number>> {
  const text = await s.agent.metrics();
  const out: Record<string, number> = {};
  for (const outcome of ['reported-sufficient', 'rejected', 'unsupported']) out[outcome] = metricSum(text, 'worldline_isolation_decisions_total', { stage: 'agent', outcome });
  out.LEVEL_INSUFFICIENT = metricSum(text, 'worldline_isolation_decisions_total', { stage: 'agent', reason: 'LEVEL_INSUFFICIENT' });
  return out;
}

describe('the isolation gate on a real stack', () => {
  let s: Stack;
  const paths: Record<string, string> = {};
  const candidatesDir = (): string => join(s.storeDir, 'candidates');

  before(async () => {
    s = await startStack({ nodeName: 'isolation-node' });
    // Policies first, so the node-agent knows them long before any World on their Roots starts.
    await s.apply(policyManifest('iso-vm', { roots: ['iso-vm'], checks: [], isolation: { agent: { minimumLevel: 'vm-isolated', controls: ['network-denied'] } } }));
    await s.apply(policyManifest('iso-ctl', { roots: ['iso-ctl'], checks: [], isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-egress-restricted'] } } }));
    await s.apply(policyManifest('iso-shared', { roots: ['iso-shared'], checks: [], network: { policy: 'Shared' } }));
    for (const name of ['iso-free', 'iso-vm', 'iso-ctl', 'iso-shared']) {
      const p = join(s.scratch, name);
      mkdirSync(p, { mode: 0o755 });
      writeFileSync(join(p, 'a.txt'), 'alpha\n');
      chownSync(p, OWNER, OWNER);
      chownSync(join(p, 'a.txt'), OWNER, OWNER);
      paths[name] = p;
      const root = await applyRoot(s, name, p);
      assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    }
  });

  after(async () => {
    await s?.stop();
  });

  /** A refused run: ISOLATION_INSUFFICIENT, the workload never ran, no candidate, the Root and store untouched. */
  async function refusedRun(name: string, root: string, extra: Parameters<typeof shWorld>[2] = {}): Promise<WorldResult> {
    const hostBefore = hashTree(paths[root]!);
    const candidatesBefore = listTree(candidatesDir());
    const r = await runWorld(s, name, shWorld([root], WORKLOAD, extra));
    assert.ok(['Failed', 'Refused'].includes(r.status.phase), describeRun(r));
    assert.equal(r.status.reason, 'ISOLATION_INSUFFICIENT', describeRun(r));
    assert.doesNotMatch(r.output, /WORKLOAD-RAN/, 'the workload ran although the gate refused it');
    assert.equal(r.status.candidate, undefined, 'a candidate was captured from a refused world');
    assert.equal(r.status.exit?.code, undefined, `the workload has an exit code: ${JSON.stringify(r.status.exit)}`);
    assert.deepEqual(listTree(candidatesDir()), candidatesBefore, 'the store holds a new candidate');
    assert.equal(hashTree(paths[root]!), hostBefore);
    const isolated = condition(r.world, 'Isolated');
    assert.equal(isolated?.status, 'False');
    assert.equal(isolated?.reason, 'IsolationInsufficient');
    assert.notEqual(r.status.isolation?.decision?.outcome, 'reported-sufficient');
    return r;
  }

  test('under the built-in rule (no Policy) a World is Isolated: reported-sufficient at os-sandboxed with network-denied', async () => {
    const before = await isolationCounts(s);
    const r = await runWorld(s, 'builtin', shWorld(['iso-free'], WORKLOAD));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.match(r.output, /^WORKLOAD-RAN$/m);
    assert.equal(r.status.candidate.added, 1, 'the marker is not in the candidate');
    const isolated = condition(r.world, 'Isolated');
    assert.equal(isolated?.status, 'True', JSON.stringify(r.status.isolation));
    assert.equal(isolated?.reason, 'ReportedSufficient');
    assert.deepEqual(r.status.isolation.decision, { outcome: 'reported-sufficient', reasons: [] });
    assert.equal(r.status.isolation.observation.achievedLevel, 'os-sandboxed');
    // The target is the kernel's word to the workload (its uname in the sandbox frame), not the request's.
    assert.deepEqual(r.status.isolation.observation.kernel, { sysname: 'Linux', machine: machine() });
    assert.deepEqual(r.status.isolation.observation.target, { os: 'linux', arch: machine() === 'x86_64' ? 'amd64' : 'arm64' });
    assert.equal(r.status.isolation.observation.complete, true);
    const controls = r.status.isolation.observation.enforcedControls as string[];
    for (const c of ['network-denied', 'read-only-inputs', 'separate-outputs', 'no-credentials', 'no-devices', 'resource-limits', 'wall-time-limit', 'output-limit', 'process-tree-termination', 'minimal-environment']) {
      assert.ok(controls.includes(c), `${c} not enforced: ${controls.join(', ')}`);
    }
    assert.ok(!controls.includes('network-egress-restricted'));
    const after = await isolationCounts(s);
    assert.equal(after['reported-sufficient'], before['reported-sufficient']! + 1);
  });

  test('a Policy requiring vm-isolated refuses the World (LEVEL_INSUFFICIENT) before its workload runs', async () => {
    const before = await isolationCounts(s);
    const r = await refusedRun('need-vm', 'iso-vm');
    assert.equal(r.status.isolation.decision.outcome, 'rejected');
    assert.ok(r.status.isolation.decision.reasons.includes('LEVEL_INSUFFICIENT'), JSON.stringify(r.status.isolation.decision));
    assert.equal(r.status.isolation.observation.achievedLevel, 'os-sandboxed');
    assert.match(r.status.message, /LEVEL_INSUFFICIENT/);
    const after = await isolationCounts(s);
    assert.equal(after.rejected, before.rejected! + 1);
    assert.equal(after.LEVEL_INSUFFICIENT, before.LEVEL_INSUFFICIENT! + 1);
  });

  test('a Policy requiring network-egress-restricted refuses a None World (CONTROLS_MISSING)', async () => {
    const before = await isolationCounts(s);
    const r = await refusedRun('need-egress', 'iso-ctl');
    assert.equal(r.status.isolation.decision.outcome, 'rejected');
    assert.ok(r.status.isolation.decision.reasons.includes('CONTROLS_MISSING'), JSON.stringify(r.status.isolation.decision));
    assert.ok(!r.status.isolation.decision.reasons.includes('LEVEL_INSUFFICIENT'));
    assert.match(r.status.message, /missing controls: network-egress-restricted/);
    assert.ok(r.status.isolation.observation.enforcedControls.includes('network-denied'));
    const after = await isolationCounts(s);
    assert.equal(after.rejected, before.rejected! + 1);
  });

  test('the same Policy lets an Allowlist World run (its egress is restricted)', async () => {
    const r = await runWorld(s, 'egress-ok', shWorld(['iso-ctl'], WORKLOAD, { network: { policy: 'Allowlist', allow: ['127.0.0.1:9'] } }));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal(r.status.isolation.decision.outcome, 'reported-sufficient');
    assert.equal(condition(r.world, 'Isolated')?.status, 'True');
  });

  test('Shared is refused without an isolation waiver, even under a Policy whose network policy is Shared (isolation-waiver.test.ts runs one with a waiver)', async () => {
    const before = await isolationCounts(s);
    // The built-in rule asks a Shared World for network-denied, which the host network cannot give.
    const refused = await refusedRun('shared-no-policy', 'iso-free', { network: { policy: 'Shared' } });
    assert.deepEqual(refused.status.isolation.decision.reasons, ['CONTROLS_MISSING'], JSON.stringify(refused.status.isolation.decision));
    assert.deepEqual(refused.status.isolation.observation.enforcedControls.filter((c: string) => c.startsWith('network')), []);
    // A Policy that sets spec.network.policy Shared (here for a World that sets it too) is no authorization.
    await refusedRun('shared-policy', 'iso-shared', { network: { policy: 'Shared' } });
    const after = await isolationCounts(s);
    const notSufficient = (c: Record<string, number>): number => c.rejected! + c.unsupported!;
    assert.equal(notSufficient(after), notSufficient(before) + 2);
    assert.equal(after['reported-sufficient'], before['reported-sufficient']);
  });
});
