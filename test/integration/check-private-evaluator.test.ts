// A Policy check with the private-evaluator-v1 profile, on a real stack (kube-apiserver + etcd, controller,
// node-agent as root): the controller creates its Check when the World is Captured; the node-agent freezes
// the candidate, runs the Policy's examiner (python3, staged from PRIME among the check's verifiers) over it,
// and the examiner starts the candidate's code through its broker as the candidate principal. The verdict
// is the examiner's admitted report: PASS for a good candidate, FAIL for a bad one; a candidate the frozen
// input does not accept is refused by name; the Policy's legacy check runs beside it as before. A Collapse
// admits the stored report again: one whose report was rewritten to fail is denied, the good one commits.
// Every role passes the check stage's isolation gate against the Policy's spec.isolation.check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf, sha256Hex } from '../../core/digest.js';
import type { PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import { evaluationContext, evaluationsFor } from '../../node-agent/store/evaluation-records.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startStack, type Stack } from '../support/stack.js';
import { capturedCheck, checkedProject, checkFinished } from '../support/worlds.js';

const ISOLATION = { minimumLevel: 'os-sandboxed', controls: ['network-denied'] };
const EXAMINER = ['/usr/bin/python3', '-I', '/run/worldline-verifiers/proj/checks/examine.py'];
const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'proj-policy' },
  spec: {
    roots: ['proj'],
    checks: [
      { name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' },
      { name: 'examine', command: EXAMINER, verifiers: ['checks/**'], timeout: '1m', profile: 'private-evaluator-v1', reportFormat: 'junit' },
    ],
    isolation: { agent: ISOLATION, check: ISOLATION },
  },
};
// The examiner: runs the candidate's own test (grep) as the candidate, and reports what it saw.
const EXAMINE = `import os, sys
sys.path.insert(0, '/run/worldline-verifiers/proj/checks')
from worldline_broker import Broker
with Broker() as b:
    exit, out, _ = b.run(['/bin/sh', '-c', 'id -u; grep -q ok README.md'], os.getcwd(), 30000)
print('candidate said', out.decode().strip(), exit)
if os.path.exists('FLOOD'):
    with Broker() as b:
        exit2, out2, _ = b.run(['/bin/sh', '-c', 'head -c 48M /dev/zero > big 2>/dev/null && echo wrote || echo refused'], os.getcwd(), 30000)
    print('flood', out2.decode().strip())
ok = exit['code'] == 0
if os.path.exists('NOREPORT'):
    raise SystemExit(0)
with open('/run/worldline-report/report', 'w') as f:
    f.write('<testsuite tests="1" failures="%d"><testcase name="readme">%s</testcase></testsuite>' % (0 if ok else 1, '' if ok else '<failure/>'))
`;

describe('a private-evaluator-v1 check on the stack', () => {
  let s: Stack;

  before(async () => {
    // A run disk of 32 MiB for every Check (and World) of this stack: the flood test writes past it.
    s = await startStack({ nodeName: 'private-node', agentArgs: ['--world-default-ephemeral-storage', '32Mi'] });
    const client = resolve(import.meta.dirname, '..', '..', '..', 'examples', 'greeter', 'checks', 'worldline_broker.py');
    await checkedProject(s, POLICY, { 'examine.py': EXAMINE, 'worldline_broker.py': readFileSync(client, 'utf8') });
  });

  after(async () => {
    await s?.stop();
  });

  test('a good candidate: the examiner\'s admitted report passes it; the legacy check passes too', async () => {
    const { run: r, check: examine } = await capturedCheck(s, 'good', 'echo ok > README.md', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Passed', JSON.stringify(examine.status));
    assert.equal(examine.status.verdict, 'PASS');
    assert.equal(examine.status.subject, r.status.candidate.digest);
    assert.equal(examine.status.executedVerifierIdentity, examine.status.verifierIdentity, 'the verifiers that ran are the ones bound');
    assert.deepEqual(examine.status.exit, { code: 0, reason: 'Completed' });
    const verify = await checkFinished(s, 'good-verify');
    assert.equal(verify.status.phase, 'Passed', JSON.stringify(verify.status));
  });

  test('a bad candidate: FAIL from the report, while the candidate\'s code ran as the candidate', async () => {
    const { check: examine } = await capturedCheck(s, 'bad', 'echo nope > README.md', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Failed', JSON.stringify(examine.status));
    assert.equal(examine.status.verdict, 'FAIL');
    assert.equal(examine.status.reason, undefined, 'an admitted report, not an untrusted one');
    const log = readFileSync(join(s.storeDir, 'checks', `${String(examine.metadata.uid)}.output.log`), 'utf8');
    assert.match(log, /^candidate said 2 \{'code': 1, 'signal': None, 'reason': 'Completed'\}$/m, log);
  });

  test('an examiner that leaves no report: the Check fails, REPORT_UNTRUSTED, naming why', async () => {
    const { check: examine } = await capturedCheck(s, 'silent', 'echo ok > README.md; touch NOREPORT', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Failed', JSON.stringify(examine.status));
    assert.equal(examine.status.verdict, 'FAIL');
    assert.equal(examine.status.reason, 'REPORT_UNTRUSTED');
    assert.match(examine.status.message, /REPORT_MISSING/);
    // The World shows it: a required check that could not produce admissible evidence degrades it.
    const degraded = await s.waitFor('World silent Degraded', async () => {
      const w = await s.get('world', 'silent', 'default');
      const c = (w?.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined)?.find((x) => x.type === 'Degraded');
      return c?.status === 'True' ? c : undefined;
    }, 30_000);
    assert.equal(degraded.reason, 'CheckNotAdmissible');
    assert.match(degraded.message, /^check examine on candidate sha256:[0-9a-f]{64} has no admissible evidence: REPORT_UNTRUSTED/);
    const good = await s.get('world', 'good', 'default');
    assert.equal((good?.status?.conditions as { type: string; status: string }[]).find((x) => x.type === 'Degraded')?.status, 'False', 'a World whose checks were admissible is not degraded');
  });

  test("a candidate that writes past the Check's reserved disk gets ENOSPC inside the run; the run goes on", async () => {
    const { check: examine } = await capturedCheck(s, 'flood', 'echo ok > README.md; touch FLOOD', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Passed', JSON.stringify(examine.status));
    const log = readFileSync(join(s.storeDir, 'checks', `${String(examine.metadata.uid)}.output.log`), 'utf8');
    assert.match(log, /^flood refused$/m, `48 MiB into its copy on a 32 MiB run disk: ${log}`);
  });

  test('a candidate the frozen input does not accept (a symbolic link) is refused by name', async () => {
    const { check: examine } = await capturedCheck(s, 'linked', 'echo ok > README.md; ln -s README.md LINK', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Refused', JSON.stringify(examine.status));
    assert.equal(examine.status.reason, 'PRIVATE_INPUT_REFUSED');
    assert.match(examine.status.message, /LINK: is a symbolic link/);
  });

  test('a Collapse admits the stored report again: a PASS whose report now says FAIL is denied, the good candidate commits', async () => {
    // Bytes of its own: evidence about the same bytes made for another World would speak for 'good' too.
    const { run: t, check: examine } = await capturedCheck(s, 'rewritten', 'echo ok > README.md; echo rewritten > NOTE', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Passed', JSON.stringify(examine.status));
    assert.equal((await checkFinished(s, 'rewritten-verify')).status.phase, 'Passed');
    await s.restartAgent({
      signal: 'SIGTERM',
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'));
        try {
          const row = evaluationsFor(db, t.uid, String(t.status.candidate.digest)).find((r) => r.checkName === 'examine' && r.worldUid === t.uid);
          assert.ok(row?.privateRun?.record && row.privateRun.report, 'the run\'s raw record and report are kept with its evaluation');
          assert.match(Buffer.from(row.privateRun.report).toString(), /failures="0"/);
          // A whole, consistent rewrite: a report that fails, the record's size and digest of it, the row's context.
          const report = Buffer.from('<testsuite tests="1" failures="1"><testcase name="readme"><failure/></testcase></testsuite>');
          const old = row.privateRun.record;
          const record: PrivateRunRecord = { ...old, report: { ...(old.report as Extract<PrivateRunRecord['report'], { state: 'collected' }>), size: report.length, digest: `sha256:${sha256Hex(report)}` } };
          const context = evaluationContext({ ...row, privateRun: { record, report } });
          const changed = db.prepare('UPDATE evaluations SET private_run_json = ?, report = ?, context_json = ?, context_digest = ? WHERE ordinal = ?')
            .run(canonicalJson(record), report, canonicalJson(context), digestOf(context), row.ordinal).changes;
          assert.equal(changed, 1);
        } finally {
          db.close();
        }
      },
    });
    await s.apply(collapseManifest('rewritten-col', 'rewritten'));
    const denied = await waitCollapse(s, 'rewritten-col', 90_000);
    assert.equal(denied.status.phase, 'Denied', JSON.stringify(denied.status));
    assert.deepEqual(denied.status.decision.reasons, ['EXECUTION_EVIDENCE_INCOMPLETE'], 'the row still says PASS; its report does not');
    await s.apply(collapseManifest('good-col', 'good'));
    const committed = await waitCollapse(s, 'good-col', 90_000);
    assert.equal(committed.status.phase, 'Committed', JSON.stringify(committed.status));
  });

  test("the check stage's isolation gate judges every role: a Policy asking for a control the roles lack refuses the run by name", async () => {
    // Before the gate ran for private roles, this Check passed whatever spec.isolation.check asked.
    const policy = structuredClone(POLICY);
    policy.spec.isolation = { agent: ISOLATION, check: { minimumLevel: 'os-sandboxed', controls: ['network-egress-restricted'] } };
    await s.apply(JSON.stringify(policy));
    await s.waitFor('the Policy accepted at its new generation', async () => {
      const p = await s.get('policy', 'proj-policy');
      const c = (p?.status?.conditions as { type: string; status: string; observedGeneration?: number }[] | undefined)?.find((x) => x.type === 'Accepted');
      return c?.status === 'True' && c.observedGeneration === p?.metadata?.generation ? c : undefined;
    }, 30_000);
    const { check: examine } = await capturedCheck(s, 'iso-short', 'echo ok > README.md', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Refused', JSON.stringify(examine.status));
    assert.equal(examine.status.reason, 'ISOLATION_INSUFFICIENT');
    assert.match(examine.status.message, /examiner examiner: isolation decision rejected .*missing controls: network-egress-restricted/);
  });

  test('an examiner that is not a staged script (python3 -c, past the schema\'s rule) is refused on the Policy and by the node-agent', async () => {
    // The schema asks for python3 and some argument under the verifier mount; this passes it, and its -c
    // code would write a passing report without running anything staged.
    const forged = ['/usr/bin/python3', '-c', 'open("/run/worldline-report/report", "w").write("<testsuite tests=\\"1\\"/>")', '/run/worldline-verifiers/proj/checks/examine.py'];
    const policy = structuredClone(POLICY);
    policy.spec.checks[1] = { ...policy.spec.checks[1]!, command: forged };
    await s.apply(JSON.stringify(policy));
    const refused = await s.waitFor('Policy not Accepted', async () => {
      const p = await s.get('policy', 'proj-policy');
      const c = (p?.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined)?.find((x) => x.type === 'Accepted');
      return c?.status === 'False' ? c : undefined;
    }, 30_000);
    assert.equal(refused.reason, 'PrivateExaminerInvalid');
    assert.match(refused.message, /python3 option "-c" is not allowed before the script/);
    const { check: examine } = await capturedCheck(s, 'forged', 'echo ok > README.md', 'examine', 90_000);
    assert.equal(examine.status.phase, 'Refused', JSON.stringify(examine.status));
    assert.equal(examine.status.reason, 'PRIVATE_EXAMINER_INVALID');
  });
});
