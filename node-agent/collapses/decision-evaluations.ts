// From the evaluations table to the collapse decision's Evaluations. A decision Evaluation is one run of the
// whole roster under one requirement on one subject: a maximal run of consecutive rows (by ordinal)
// that agree on requirement, subject and World. A row that disagrees starts the next evaluation, so an
// evaluation that was superseded (a revalidation under a new requirement, a run for another World on the
// same bytes) never regains authority, even if rows like its own come later. Within an evaluation the
// newest row per check stands for that check: a FAIL after a PASS revokes the PASS.
//
// The decision then picks the newest evaluation (decide.ts effectiveEvaluation) and judges it.
import type { Evaluation, ExecutionRecord, Verdict } from '../../core/collapse/decide.js';
import { idFrom, presentId } from '../../core/collapse/identity.js';
import { readContext, type EvaluationRow } from '../store/evaluation-records.js';

const VERDICTS = new Set<string>(['PASS', 'FAIL', 'REFUSED']);

function groupKey(r: EvaluationRow): string {
  return JSON.stringify([r.requirementHash ?? null, r.subject ?? null, r.worldUid]);
}

/** Rows (oldest first) grouped into the decision's evaluations. */
export function decisionEvaluations(rows: readonly EvaluationRow[]): Evaluation[] {
  const groups: EvaluationRow[][] = [];
  for (const r of [...rows].sort((a, b) => a.ordinal - b.ordinal)) {
    const last = groups[groups.length - 1];
    if (last && groupKey(last[0]!) === groupKey(r)) last.push(r);
    else groups.push([r]);
  }
  return groups.map(toEvaluation);
}

function toEvaluation(rows: EvaluationRow[]): Evaluation {
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
    // Provenance: the runner recorded what it executed, and the row's context is intact.
    return { check: r.checkName, provenanceEstablished: r.executedIdentity !== undefined && c.present && c.intact, verdict: (VERDICTS.has(r.verdict) ? r.verdict : 'REFUSED') as Verdict };
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
