// The evaluations table: one row per finished run of a Check, each with a context record that binds the
// run to the World it was made for, the bytes it examined, the requirement and the verifiers executed.
// The context is stored as canonical JSON next to its digest, so a row whose columns or context were
// altered after the fact is recognisably not intact (EVIDENCE_CONTEXT_INVALID at collapse), and a row
// without a context (written before contexts existed, or stripped) is EVIDENCE_CONTEXT_MISSING.
import type { Database } from 'better-sqlite3';
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf, sha256Hex } from '../../core/digest.js';
import type { PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import { statement } from './statements.js';

export const EVALUATION_CONTEXT_FORMAT = 'worldline.evaluation-context/v1';

export interface EvaluationFields {
  checkUid: string;
  worldUid: string;
  checkName: string;
  verdict: string;
  reason?: string;
  requirementHash?: string;
  verifierIdentity?: string;
  executedIdentity?: string;
  subject?: string;
  /** A private-evaluator run's raw record and its report's bytes (absent when none was collected). */
  privateRun?: { record: PrivateRunRecord | null; report?: Uint8Array };
}

export interface EvaluationRow extends EvaluationFields {
  ordinal: number;
  contextJson: string | null;
  contextDigest: string | null;
}

/** The context record of a run: everything the row claims, in one canonical document. */
export function evaluationContext(e: EvaluationFields): Record<string, unknown> {
  return {
    format: EVALUATION_CONTEXT_FORMAT,
    world: e.worldUid,
    check: { uid: e.checkUid, name: e.checkName },
    subject: e.subject ?? null,
    requirementHash: e.requirementHash ?? null,
    verifierIdentity: e.verifierIdentity ?? null,
    executedIdentity: e.executedIdentity ?? null,
    verdict: e.verdict,
    // A private run's record and report are bound by digest (only such a row has the key).
    ...(e.privateRun ? { privateRun: { record: digestOf(e.privateRun.record), report: e.privateRun.report ? `sha256:${sha256Hex(e.privateRun.report)}` : null } } : {}),
  };
}

/** Records one finished run; returns its ordinal (strictly increasing on this node). */
export function recordEvaluation(db: Database, e: EvaluationFields, now: Date): number {
  const context = evaluationContext(e);
  const r = statement(
    db,
    `INSERT INTO evaluations (check_uid, world_uid, check_name, verdict, reason, requirement_hash, verifier_identity, executed_identity, subject, created_at, context_json, context_digest, private_run_json, report)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    e.checkUid, e.worldUid, e.checkName, e.verdict, e.reason ?? null, e.requirementHash ?? null, e.verifierIdentity ?? null, e.executedIdentity ?? null, e.subject ?? null,
    now.toISOString(), canonicalJson(context), digestOf(context),
    e.privateRun ? canonicalJson(e.privateRun.record) : null, e.privateRun?.report ? Buffer.from(e.privateRun.report) : null,
  );
  return Number(r.lastInsertRowid);
}

export function hasEvaluation(db: Database, checkUid: string): boolean {
  return statement(db, 'SELECT 1 FROM evaluations WHERE check_uid = ? LIMIT 1').get(checkUid) !== undefined;
}

interface RawRow {
  ordinal: number;
  check_uid: string;
  world_uid: string;
  check_name: string;
  verdict: string;
  reason: string | null;
  requirement_hash: string | null;
  verifier_identity: string | null;
  executed_identity: string | null;
  subject: string | null;
  context_json: string | null;
  context_digest: string | null;
  private_run_json: string | null;
  report: Buffer | null;
}

/**
 * Every run that could speak for a World's candidate, oldest first: the World's own runs and any run on
 * the same bytes (made for another World: the kernel refuses those by their context, never silently).
 */
export function evaluationsFor(db: Database, worldUid: string, subject: string): EvaluationRow[] {
  const rows = statement(
    db,
    `SELECT ordinal, check_uid, world_uid, check_name, verdict, reason, requirement_hash, verifier_identity, executed_identity, subject, context_json, context_digest, private_run_json, report
     FROM evaluations WHERE world_uid = ? OR subject = ? ORDER BY ordinal`,
  ).all(worldUid, subject) as RawRow[];
  return rows.map((r) => ({
    ordinal: r.ordinal,
    checkUid: r.check_uid,
    worldUid: r.world_uid,
    checkName: r.check_name,
    verdict: r.verdict,
    ...(r.reason !== null ? { reason: r.reason } : {}),
    ...(r.requirement_hash !== null ? { requirementHash: r.requirement_hash } : {}),
    ...(r.verifier_identity !== null ? { verifierIdentity: r.verifier_identity } : {}),
    ...(r.executed_identity !== null ? { executedIdentity: r.executed_identity } : {}),
    ...(r.subject !== null ? { subject: r.subject } : {}),
    ...(r.private_run_json !== null ? { privateRun: { record: parsePrivateRun(r.private_run_json), ...(r.report !== null ? { report: r.report } : {}) } } : {}),
    contextJson: r.context_json,
    contextDigest: r.context_digest,
  }));
}

/** A stored raw record; one that does not parse is null, which no admission accepts. */
function parsePrivateRun(json: string): PrivateRunRecord | null {
  try {
    return JSON.parse(json) as PrivateRunRecord;
  } catch {
    return null;
  }
}

/**
 * What a row's context says: absent (no context stored), or present with the World it names and whether
 * it is intact — it parses, hashes to the stored digest and agrees with every column of its row.
 */
export function readContext(row: EvaluationRow): { present: false } | { present: true; intact: boolean; world: string | null } {
  if (row.contextJson === null || row.contextDigest === null) return { present: false };
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.contextJson);
  } catch {
    return { present: true, intact: false, world: null };
  }
  const world = typeof (parsed as { world?: unknown })?.world === 'string' ? (parsed as { world: string }).world : null;
  let intact = false;
  try {
    intact = digestOf(parsed) === row.contextDigest && canonicalJson(parsed) === canonicalJson(evaluationContext(row));
  } catch {
    intact = false; // not canonical JSON at all
  }
  return { present: true, intact, world };
}
