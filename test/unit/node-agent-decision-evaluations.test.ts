// Evaluation rows -> the collapse decision's evaluations (node-agent/collapses/decision-evaluations.ts) and the
// row context records (node-agent/store/evaluation-records.ts): grouping, newest-speaks, revocation,
// superseded evaluations, forged and stripped contexts — judged by the real kernel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../../core/canonical-json.js';
import { decide, effectiveEvaluation, type CandidateObligation, type DecisionInput } from '../../core/collapse/decide.js';
import { presentId } from '../../core/collapse/identity.js';
import { digestOf } from '../../core/digest.js';
import { evaluationContext, readContext, type EvaluationFields, type EvaluationRow } from '../../node-agent/store/evaluation-records.js';
import { decisionEvaluations } from '../../node-agent/collapses/decision-evaluations.js';
import { privateRunId, type PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import { sha256Hex } from '../../core/digest.js';

const WORLD = 'uid-w';
const SUBJECT = 'sha256:cand';
const REQ = 'sha256:req-a';
const VER = 'sha256:ver';

let ordinal = 0;
function row(fields: Partial<EvaluationFields> & { checkName: string; verdict: string }, tamper?: (r: EvaluationRow) => EvaluationRow): EvaluationRow {
  const f: EvaluationFields = { checkUid: `c-${fields.checkName}-${ordinal}`, worldUid: WORLD, subject: SUBJECT, requirementHash: REQ, verifierIdentity: VER, executedIdentity: VER, ...fields };
  const ctx = evaluationContext(f);
  const r: EvaluationRow = { ...f, ordinal: ++ordinal, contextJson: canonicalJson(ctx), contextDigest: digestOf(ctx) };
  return tamper ? tamper(r) : r;
}

function judge(rows: EvaluationRow[], current = REQ, required = ['unit', 'lint'], privateChecks: ReadonlySet<string> = new Set()): readonly string[] {
  const obligation: CandidateObligation = {
    mode: 'Candidate',
    world: presentId('world', WORLD),
    currentRequirement: presentId('requirement', current),
    requiredChecks: required,
    declaredVerifier: presentId('verifierDeclared', VER),
    verifiersModifiedByCandidate: { measured: true, found: [] },
    evaluations: decisionEvaluations(rows, privateChecks),
  };
  const input: DecisionInput = {
    stage: 'prepare',
    candidateValid: true,
    conflicts: { measured: true, found: [] },
    foreignWrites: { measured: true, found: [] },
    primeGeneration: { before: presentId('primeGeneration', '1'), after: presentId('primeGeneration', '1') },
    parent: { storePrime: presentId('parent', 'r@1'), candidateBase: presentId('parent', 'r@1') },
    base: { primeRehash: presentId('base', 'b'), world: presentId('base', 'b') },
    primeRehashSource: { by: 'walk' },
    delta: { captured: presentId('delta', SUBJECT), stored: presentId('delta', SUBJECT) },
    rootSet: { world: presentId('rootSet', 'r'), store: presentId('rootSet', 'r') },
    stagedRoot: { staged: presentId('stagedRoot', 's'), tested: presentId('stagedRoot', 's') },
    subject: presentId('evidenceSubject', SUBJECT),
    obligation,
  };
  return decide(input).reasons;
}

test('a complete passing roster under the current requirement authorizes', () => {
  assert.deepEqual(judge([row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS' })]), []);
});

test('runs of one evaluation group together; the newest run of a check stands for it (a FAIL after a PASS revokes)', () => {
  const rows = [row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS' }), row({ checkName: 'unit', verdict: 'FAIL' })];
  const evals = decisionEvaluations(rows);
  assert.equal(evals.length, 1);
  assert.deepEqual(evals[0]!.executions.map((e) => [e.check, e.verdict]), [['unit', 'FAIL'], ['lint', 'PASS']]);
  assert.deepEqual(judge(rows), ['CHECK_NOT_PASSED']);
  // ... and a PASS after that FAIL restores it: the newest run speaks, whatever it says.
  assert.deepEqual(judge([...rows, row({ checkName: 'unit', verdict: 'PASS' })]), []);
});

test('a revalidation under another requirement starts a new evaluation that speaks alone', () => {
  const old = [row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS' })];
  const reval = row({ checkName: 'unit', verdict: 'PASS', requirementHash: 'sha256:req-b' });
  assert.equal(decisionEvaluations([...old, reval]).length, 2);
  // Under requirement b only `unit` ran: incomplete. Under a, the old evaluation is superseded and stale.
  assert.deepEqual(judge([...old, reval], 'sha256:req-b'), ['EXECUTION_EVIDENCE_INCOMPLETE']);
  assert.deepEqual(judge([...old, reval], REQ), ['EVIDENCE_STALE', 'EXECUTION_EVIDENCE_INCOMPLETE']);
});

test('a superseded evaluation never regains authority: a later run under its requirement starts afresh', () => {
  const a = [row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS' })];
  const b = row({ checkName: 'unit', verdict: 'FAIL', requirementHash: 'sha256:req-b' });
  const again = row({ checkName: 'unit', verdict: 'PASS' });
  const evals = decisionEvaluations([...a, b, again]);
  assert.equal(evals.length, 3);
  assert.equal(effectiveEvaluation(evals).speaks?.executions.length, 1, 'the old lint PASS is not carried over');
  assert.deepEqual(judge([...a, b, again]), ['EXECUTION_EVIDENCE_INCOMPLETE']);
});

test("a run for another World on the same bytes is its own evaluation and is refused by its context", () => {
  const own = [row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS' })];
  const foreign = [row({ checkName: 'unit', verdict: 'PASS', worldUid: 'uid-other' }), row({ checkName: 'lint', verdict: 'PASS', worldUid: 'uid-other' })];
  assert.deepEqual(judge([...own, ...foreign]), ['EVIDENCE_CONTEXT_INVALID']);
});

test('a row altered after it was written is not intact; a row without a context is missing one', () => {
  const forged = row({ checkName: 'unit', verdict: 'FAIL' }, (r) => ({ ...r, verdict: 'PASS' }));
  assert.deepEqual(readContext(forged), { present: true, intact: false, world: WORLD });
  const reasons = judge([forged, row({ checkName: 'lint', verdict: 'PASS' })]);
  assert.ok(reasons.includes('EVIDENCE_CONTEXT_INVALID'), reasons.join());
  assert.ok(reasons.includes('EXECUTION_EVIDENCE_INCOMPLETE'), 'a forged run establishes no provenance');

  const rehashed = row({ checkName: 'unit', verdict: 'FAIL' }, (r) => {
    const ctx = { ...(JSON.parse(r.contextJson!) as Record<string, unknown>), verdict: 'PASS' };
    return { ...r, verdict: 'PASS', contextJson: canonicalJson(ctx), contextDigest: digestOf(ctx) };
  });
  assert.equal((readContext(rehashed) as { intact: boolean }).intact, true, 'a consistent rewrite is indistinguishable here: the store is the trust boundary');

  const garbage = row({ checkName: 'unit', verdict: 'PASS' }, (r) => ({ ...r, contextJson: '{not json' }));
  assert.deepEqual(readContext(garbage), { present: true, intact: false, world: null });

  const stripped = row({ checkName: 'unit', verdict: 'PASS' }, (r) => ({ ...r, contextJson: null, contextDigest: null }));
  assert.ok(judge([stripped, row({ checkName: 'lint', verdict: 'PASS' })]).includes('EVIDENCE_CONTEXT_MISSING'));
});

test('runs that executed different verifier sets have no single executed identity', () => {
  const reasons = judge([row({ checkName: 'unit', verdict: 'PASS' }), row({ checkName: 'lint', verdict: 'PASS', executedIdentity: 'sha256:other' })]);
  assert.deepEqual(reasons, ['VERIFIER_EXECUTION_IDENTITY_MISMATCH']);
  const none = judge([row({ checkName: 'unit', verdict: 'REFUSED', executedIdentity: undefined }), row({ checkName: 'lint', verdict: 'PASS' })]);
  assert.ok(none.includes('CHECK_NOT_PASSED'), none.join());
});

test('no rows at all: the kernel has no evidence', () => {
  assert.deepEqual(judge([]), ['IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'EVIDENCE_MISSING']);
});

/** A private-evaluator run's row: its raw record and report as the node-agent keeps them, bound to the row's own columns. */
function privateRow(checkName: string, verdict: string, report: string, patch: (r: PrivateRunRecord) => PrivateRunRecord = (r) => r, bytes = Buffer.from(report)): EvaluationRow {
  const checkUid = `uid-${checkName}-${ordinal}`;
  const binding = { run: privateRunId(checkUid), check: checkName, candidate: SUBJECT, verifier: VER };
  const record: PrivateRunRecord = {
    profile: 'private-evaluator-v1',
    reportFormat: 'junit',
    binding,
    examiner: { code: 0, signal: null, reason: 'Completed' },
    boundary: { problems: [], rolesCompleted: true, reportMountExclusive: true },
    report: { state: 'collected', size: Buffer.byteLength(report), digest: `sha256:${sha256Hex(Buffer.from(report))}`, binding },
  };
  return row({ checkName, verdict, checkUid, privateRun: { record: patch(record), report: bytes } });
}

test('a private check counts only when its stored report admits again, to the verdict its row claims', () => {
  const PASSING = '<testsuite tests="2" failures="0"/>';
  const lint = () => row({ checkName: 'lint', verdict: 'PASS' });
  const priv = new Set(['unit']);
  assert.deepEqual(judge([privateRow('unit', 'PASS', PASSING), lint()], REQ, ['unit', 'lint'], priv), [], 'an admissible PASS report authorizes');
  // The row says PASS; what is stored does not bear it out.
  assert.deepEqual(judge([privateRow('unit', 'PASS', '<testsuite tests="2" failures="1"/>'), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], 'the report says FAIL');
  assert.deepEqual(judge([privateRow('unit', 'PASS', PASSING, (r) => r, Buffer.from('<testsuite tests="9"/>')), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], 'bytes that are not the collected report');
  assert.deepEqual(judge([privateRow('unit', 'PASS', PASSING, (r) => ({ ...r, boundary: { ...r.boundary, problems: ['worker broker: a lease left open'] } })), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], 'a boundary problem');
  assert.deepEqual(judge([privateRow('unit', 'PASS', PASSING, (r) => ({ ...r, binding: { ...r.binding, run: 'another-run' }, report: { ...r.report, binding: { ...r.binding, run: 'another-run' } } as PrivateRunRecord['report'] })), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], "a record bound to another Check's run");
  assert.deepEqual(judge([row({ checkName: 'unit', verdict: 'PASS' }), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], 'a private check with no raw record');
  assert.deepEqual(judge([row({ checkName: 'unit', verdict: 'PASS', privateRun: { record: null } }), lint()], REQ, ['unit', 'lint'], priv), ['EXECUTION_EVIDENCE_INCOMPLETE'], 'a record that did not parse');
  // An admissible FAIL is evidence, and it is a FAIL.
  assert.deepEqual(judge([privateRow('unit', 'FAIL', '<testsuite tests="2" failures="1"/>'), lint()], REQ, ['unit', 'lint'], priv), ['CHECK_NOT_PASSED']);
  // The same rows under a requirement with no private check: the row's verdict is what counts.
  assert.deepEqual(judge([row({ checkName: 'unit', verdict: 'PASS' }), lint()]), []);
});

test('a private run\'s record and report are bound into the row\'s context: changing either is a context that is not intact', () => {
  const r = privateRow('unit', 'PASS', '<testsuite tests="1"/>');
  assert.deepEqual(readContext(r), { present: true, intact: true, world: WORLD });
  const other = { ...r, privateRun: { record: r.privateRun!.record, report: Buffer.from('<testsuite tests="2"/>') } };
  assert.deepEqual(readContext(other), { present: true, intact: false, world: WORLD }, 'other report bytes');
  const rerecorded = { ...r, privateRun: { record: { ...r.privateRun!.record!, examiner: { code: 1, signal: null, reason: 'Completed' } }, report: r.privateRun!.report! } };
  assert.deepEqual(readContext(rerecorded), { present: true, intact: false, world: WORLD }, 'another record');
});
