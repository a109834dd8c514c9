// Report admission and the JUnit totals it reads: a run whose every recorded fact holds is admissible
// and its verdict comes from the report; each fact that fails makes the report UNTRUSTED with its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseJUnit } from '../../core/private-evaluator/junit.js';
import { admitReport, type PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';

const BINDING = { run: 'r1', check: 'unit', candidate: `sha256:${'a'.repeat(64)}`, verifier: `sha256:${'b'.repeat(64)}` };
const REPORT = Buffer.from('<?xml version="1.0"?>\n<testsuites><testsuite name="a" tests="3" failures="0" errors="0"/><testsuite name="b" tests="2" skipped="1"></testsuite></testsuites>');
const digest = (b: Uint8Array): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

function record(patch: Partial<PrivateRunRecord> = {}, bytes: Buffer = REPORT): PrivateRunRecord {
  return {
    profile: 'private-evaluator-v1',
    reportFormat: 'junit',
    binding: BINDING,
    examiner: { code: 0, signal: null, reason: 'Completed' },
    boundary: { problems: [], rolesCompleted: true, reportMountExclusive: true },
    report: { state: 'collected', size: bytes.length, digest: digest(bytes), binding: BINDING },
    ...patch,
  };
}

test('JUnit totals: sums over suites; comments and CDATA cannot add a suite; malformed counts refused', () => {
  assert.deepEqual(parseJUnit(REPORT.toString()), { ok: true, totals: { tests: 5, failures: 0, errors: 0, skipped: 1 } });
  assert.deepEqual(parseJUnit('<testsuites tests="4" failures="1"></testsuites>'), { ok: true, totals: { tests: 4, failures: 1, errors: 0, skipped: 0 } });
  const quoted = '<testsuite tests="1" failures="1"><testcase name="x"><failure><![CDATA[<testsuite tests="99" failures="0">]]></failure><!-- <testsuite tests="5"/> --></testcase></testsuite>';
  assert.deepEqual(parseJUnit(quoted), { ok: true, totals: { tests: 1, failures: 1, errors: 0, skipped: 0 } });
  assert.equal(parseJUnit('<results/>').ok, false);
  assert.equal(parseJUnit('<testsuite failures="0"/>').ok, false, 'no tests count');
  assert.equal(parseJUnit('<testsuite tests="1e3"/>').ok, false);
  assert.equal(parseJUnit('<testsuite tests="-1"/>').ok, false);
  assert.equal(parseJUnit('<testsuite tests="1" failures=0/>').ok, false, 'unquoted attribute');
  assert.equal(parseJUnit('<!DOCTYPE x [<!ENTITY a "b">]><testsuite tests="1"/>').ok, false);
  assert.equal(parseJUnit('<testsuite tests="1"><!-- open').ok, false);
});

test('every fact holding: admissible, and the verdict is the report\'s', () => {
  assert.deepEqual(admitReport(record(), REPORT, BINDING), { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 5, failures: 0, errors: 0, skipped: 1 } });
  const failing = Buffer.from('<testsuite tests="2" failures="1"/>');
  assert.equal((admitReport(record({}, failing), failing, BINDING) as { verdict: string }).verdict, 'FAIL');
  const none = Buffer.from('<testsuite tests="0"/>');
  assert.equal((admitReport(record({}, none), none, BINDING) as { verdict: string }).verdict, 'FAIL', 'a report of no tests does not pass');
});

test('each fact that fails makes the report UNTRUSTED with its reason', () => {
  const reasons = (r: PrivateRunRecord, bytes: Buffer | null = REPORT, expected = BINDING): string[] => {
    const a = admitReport(r, bytes ?? undefined, expected);
    return a.classification === 'UNTRUSTED' ? a.reasons : [];
  };
  assert.deepEqual(reasons(record({ profile: 'legacy' })), ['PROFILE_NOT_PRIVATE']);
  assert.deepEqual(reasons(record({ examiner: { code: 1, signal: null, reason: 'Completed' } })), ['EXAMINER_INCOMPLETE']);
  assert.deepEqual(reasons(record({ examiner: { code: null, signal: 'SIGKILL', reason: 'WallTimeExceeded' } })), ['EXAMINER_INCOMPLETE']);
  assert.deepEqual(reasons(record({ boundary: { problems: ['worker: CapEff is 1'], rolesCompleted: true, reportMountExclusive: true } })), ['BOUNDARY_INCOMPLETE']);
  assert.deepEqual(reasons(record({ boundary: { problems: [], rolesCompleted: false, reportMountExclusive: true } })), ['BOUNDARY_INCOMPLETE']);
  assert.deepEqual(reasons(record({ boundary: { problems: [], rolesCompleted: true, reportMountExclusive: false } })), ['BOUNDARY_INCOMPLETE']);
  assert.deepEqual(reasons(record(), REPORT, { ...BINDING, candidate: `sha256:${'c'.repeat(64)}` }), ['REPORT_BINDING_MISMATCH']);
  assert.deepEqual(reasons(record(), Buffer.from('<testsuite tests="9"/>')), ['REPORT_BYTES_MISMATCH']);
  assert.deepEqual(reasons(record(), null), ['REPORT_BYTES_MISMATCH'], 'no retained bytes');
  assert.deepEqual(reasons(record({ report: { state: 'untrusted', reason: 'REPORT_MULTIPLY_LINKED', message: 'report has 2 links' } }), null), ['REPORT_MULTIPLY_LINKED']);
  assert.deepEqual(reasons(record({ reportFormat: 'gnatprove' })), ['REPORT_FORMAT_UNSUPPORTED']);
  assert.deepEqual(reasons(record({ reportFormat: 'worldline-benchmark-v1' })), ['REPORT_UNPARSEABLE'], 'JUnit bytes are not a benchmark report');
  const latin = Buffer.from([0x3c, 0xff, 0x3e]);
  assert.deepEqual(reasons(record({}, latin), latin), ['REPORT_UNPARSEABLE']);
  const prose = Buffer.from('all tests passed');
  assert.deepEqual(reasons(record({}, prose), prose), ['REPORT_UNPARSEABLE']);
  // Several facts failing: every reason is named.
  assert.deepEqual(reasons(record({ profile: 'legacy', examiner: { code: 2, signal: null, reason: 'Completed' } })), ['PROFILE_NOT_PRIVATE', 'EXAMINER_INCOMPLETE']);
});
