// From the evaluations table to the collapse decision's Evaluations. A decision Evaluation is one run of the
// whole roster under one requirement on one subject: a maximal run of consecutive rows (by ordinal)
// that agree on requirement, subject and World. A row that disagrees starts the next evaluation, so an
// evaluation that was superseded (a revalidation under a new requirement, a run for another World on the
// same bytes) never regains authority, even if rows like its own come later. Within an evaluation the
// newest row per check stands for that check: a FAIL after a PASS revokes the PASS.
//
// A check the requirement runs as private-evaluator-v1 is judged by its report, not by the verdict its row
// claims: its run's raw record and report bytes are admitted again here, against a binding made from the
// row's own columns (run, check, candidate, executed verifiers). Provenance holds only when that admission
// is ADMISSIBLE with the row's verdict; a row without a record, or whose record no longer admits (altered,
// or judged by rules tightened since), has none, and the decision refuses EXECUTION_EVIDENCE_INCOMPLETE.
//
// The decision then picks the newest evaluation (decide.ts effectiveEvaluation) and judges it.
import type { Evaluation, ExecutionRecord, Verdict } from '../../core/collapse/decide.js';
import { idFrom, presentId } from '../../core/collapse/identity.js';
import { admitReport, privateRunId } from '../../core/private-evaluator/report-admission.js';
import { readContext, type EvaluationRow } from '../store/evaluation-records.js';

const VERDICTS = new Set<string>(['PASS', 'FAIL', 'REFUSED']);

function groupKey(r: EvaluationRow): string {
  return JSON.stringify([r.requirementHash ?? null, r.subject ?? null, r.worldUid]);
}

/** Rows (oldest first) grouped into the decision's evaluations; `privateChecks` names the requirement's private-evaluator checks. */
export function decisionEvaluations(rows: readonly EvaluationRow[], privateChecks: ReadonlySet<string> = new Set()): Evaluation[] {
  const groups: EvaluationRow[][] = [];
  for (const r of [...rows].sort((a, b) => a.ordinal - b.ordinal)) {
    const last = groups[groups.length - 1];
    if (last && groupKey(last[0]!) === groupKey(r)) last.push(r);
    else groups.push([r]);
  }
  return groups.map((g) => toEvaluation(g, privateChecks));
}

/** Whether a private check's row is borne out by its own raw record and report, admitted again now. */
export function reportReadmits(r: EvaluationRow): boolean {
  const run = r.privateRun;
  if (run?.record == null || r.subject === undefined || r.executedIdentity === undefined) return false;
  try {
    const admission = admitReport(run.record, run.report, { run: privateRunId(r.checkUid), check: r.checkName, candidate: r.subject, verifier: r.executedIdentity });
    return admission.classification === 'ADMISSIBLE' && admission.verdict === r.verdict;
  } catch {
    return false; // a record of the wrong shape
  }
}

function toEvaluation(rows: EvaluationRow[], privateChecks: ReadonlySet<string>): Evaluation {
  const newest = rows[rows.length - 1]!;
  const contexts = rows.map(readContext);
  let context: Evaluation['context'];
  if (contexts.some((c) => !c.present)) context = { present: false };
  else {
    const worlds = new Set(contexts.map((c) => (c.present ? c.world : null)));
    const world = worlds.size === 1 ? [...worlds][0]! : null;
    context = { present: true, intact: contexts.every((c) => c.present && c.intact) && world !== null, world: idFrom('world', world) };
  }

  // The executed verifier identity of the evaluation: one value all its runs agree on; otherwise the
  // runs executed different verifier sets and no single identity speaks for them.
  const executed = new Set(rows.map((r) => r.executedIdentity ?? null));
  const only = executed.size === 1 ? [...executed][0]! : null;
  const executedVerifier =
    executed.size > 1 ? presentId('verifierExecuted', `inconsistent:${[...executed].map(String).sort().join(',')}`) : idFrom('verifierExecuted', only);

  // The newest run of each check, with its context (read once above).
  const latest = new Map<string, number>();
  rows.forEach((r, i) => latest.set(r.checkName, i));
  const executions: ExecutionRecord[] = [...latest.values()].map((i) => {
    const r = rows[i]!;
    const c = contexts[i]!;
    // Provenance: the runner recorded what it executed, the row's context is intact, and a private
    // check's report admits again.
    const provenanceEstablished = r.executedIdentity !== undefined && c.present && c.intact && (!privateChecks.has(r.checkName) || reportReadmits(r));
    return { check: r.checkName, provenanceEstablished, verdict: (VERDICTS.has(r.verdict) ? r.verdict : 'REFUSED') as Verdict };
  });

  return {
    ordinal: newest.ordinal,
    subject: idFrom('evidenceSubject', newest.subject),
    requirement: idFrom('requirement', newest.requirementHash),
    context,
    executedVerifier,
    executions,
  };
}
