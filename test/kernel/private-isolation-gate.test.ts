// The check stage's isolation gate for private-evaluator roles (node-agent/checks/check-gate.ts), on the
// kernel: every role of a real run — the examiner, a worker, a candidate leased by the worker — is measured
// before its code runs and judged against a Policy's spec.isolation.check. Its outputs and inputs are
// the binds the node-agent made for it, looked up through the role's own root: a gate told to expect
// another directory, or an output where an input is, refuses the role, which shows the measurement is
// the kernel's and not the plan's.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../../crds/index.js';
import { nullLogger } from '../../kube/logger.js';
import { nsIds } from '../../native/index.js';
import { privateCheckGate } from '../../node-agent/checks/check-gate.js';
import type { RoleGate } from '../../node-agent/private-evaluator/run-examiner.js';
import { StartRefused } from '../../node-agent/sandbox/supervise.js';
import { requireRoot } from '../support/require-root.js';
import { CASE, leaseRunner, WORKER_PRELUDE } from './lease-fixture.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the check stage isolation gate for private-evaluator roles');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('role-gate');
const HOST_BASE = 3_700_000;

// The worker leases the case and runs one candidate over it with stdin (a read-only input of the candidate).
const WORKER = `${WORKER_PRELUDE}
try:
    with WorkerBroker() as b:
        lease = b.open(case)
        s = b.start(lease, ['/bin/sh', '-c', 'read x; echo "$x" > result; cat data'], case, 10000, stdin=b'hi\\n')
        e, out = finish(b, s)
        print('candidate', e['code'], out)
        b.copy_out(lease)
        b.close_lease(lease)
except BrokerError as e:
    print('REFUSED', e)
    sys.exit(1)
`;
const { scenario } = leaseRunner(base, HOST_BASE, WORKER);

function policy(controls: string[]): Policy {
  return { apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name: 'p' }, spec: { roots: ['r'], checks: [], isolation: { check: { minimumLevel: 'os-sandboxed', controls, allowHostYolo: false } } } } as unknown as Policy;
}

function gateFor(controls: string[]) {
  return privateCheckGate({ policy: policy(controls), subject: `sha256:${'d'.repeat(64)}`, runId: `gate-${process.pid}`, agentNs: nsIds('self'), logger: nullLogger, metrics: undefined });
}

describe('the check stage gate of private-evaluator roles', { concurrency: false }, () => {
  test('every role of a run passes an os-sandboxed Policy: its outputs are its own writable binds, its inputs read-only', async () => {
    const g = gateFor(['network-denied']);
    const r = await scenario('gated', {}, g.gate);
    assert.equal(r.problems, '', r.output);
    assert.deepEqual(g.refusals(), []);
    assert.match(r.output, /^candidate 0 original$/m, r.output);
    assert.equal(r.admission.classification, 'ADMISSIBLE', JSON.stringify(r.admission));
    // os-sandboxed requires separate-outputs and read-only-inputs: each role below was measured to have them.
    assert.match(g.summary() ?? '', /^isolation decision reported-sufficient for examiner, w1, leased-\S+$/, g.summary());
  });

  test('a control the roles do not have refuses the examiner before it runs: ISOLATION_INSUFFICIENT, naming it', async () => {
    const g = gateFor(['network-egress-restricted']);
    await assert.rejects(scenario('short', {}, g.gate), (e: unknown) => e instanceof StartRefused && e.code === 'ISOLATION_INSUFFICIENT');
    const [refusal, ...rest] = g.refusals();
    assert.equal(rest.length, 0);
    assert.match(refusal ?? '', /^examiner examiner: isolation decision rejected .*missing controls: network-egress-restricted/);
    assert.equal(g.summary(), undefined, 'no role passed');
  });

  test("a candidate whose output is not the directory prepared for it is refused; the run's boundary fails", async () => {
    const g = gateFor(['network-denied']);
    const elsewhere = join(base, 'elsewhere');
    mkdirSync(elsewhere, { recursive: true });
    // The gate is told the case view is another directory; what the candidate has mounted there is still the view.
    const lying: RoleGate = (start) => g.gate(start.role === 'candidate' ? { ...start, binds: start.binds.map((b) => (b.target === CASE ? { ...b, source: elsewhere } : b)) } : start);
    const r = await scenario('lied-about', {}, lying);
    assert.match(r.output, /^REFUSED /m, r.output);
    assert.match(r.problems, /could not start/);
    assert.equal(r.admission.classification, 'UNTRUSTED');
    const refusals = g.refusals().join('\n');
    assert.match(refusals, /^candidate leased-\S+: isolation decision rejected .*missing controls: separate-outputs/m);
    assert.match(refusals, new RegExp(`separate-outputs: ${CASE} is not the directory the node-agent prepared for it`));
    assert.match(g.summary() ?? '', /reported-sufficient for examiner, w1$/);
  });

  test('a worker whose writable copy the gate expects read-only is refused: read-only-inputs and separate-outputs are missing', async () => {
    const g = gateFor(['network-denied']);
    const lying: RoleGate = (start) => g.gate(start.role === 'worker' ? { ...start, binds: start.binds.map((b) => (b.target === '/work/input' ? { ...b, readonly: true } : b)) } : start);
    const r = await scenario('writable-input', {}, lying);
    assert.equal(r.admission.classification, 'UNTRUSTED');
    const refusals = g.refusals().join('\n');
    assert.match(refusals, /^worker w1: isolation decision rejected .*missing controls: read-only-inputs, separate-outputs/m, refusals);
    assert.match(refusals, /read-only-inputs: \/work\/input is mounted writable/);
    assert.match(refusals, /separate-outputs: the role has no output of its own/);
  });
});
