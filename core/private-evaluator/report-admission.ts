// Report admission: whether a private-evaluator run's report may decide its Check, recomputed from the
// run's raw record each time it is asked (when the Check finishes, and again when a Collapse is prepared).
// A report counts only when every recorded fact holds: the profile; an examiner the supervisor saw
// complete with status 0; a boundary with no problem, every role ended and the report mounted in the
// examiner alone; a collected report bound to this run, check, candidate and verifier identity whose
// bytes have the recorded size and digest; and a format read to a verdict. Anything else is UNTRUSTED,
// with every reason named, and cannot make its Check admissible.
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import { BENCHMARK_FORMAT, parseBenchmarkReport } from './benchmark-report.js';
import { parseJUnit, type JUnitParse, type JUnitTotals } from './junit.js';

export interface ReportBindingRecord {
  run: string;
  check: string;
  candidate: string;
  verifier: string;
}

/** The raw facts of one private-evaluator run, as the node-agent recorded them. */
export interface PrivateRunRecord {
  profile: string;
  reportFormat: string;
  binding: ReportBindingRecord;
  examiner: { code: number | null; signal: string | null; reason: string };
  boundary: {
    problems: string[];
    rolesCompleted: boolean;
    reportMountExclusive: boolean;
    /** Every case lease the run's workers opened, with what happened to it in order (evidence, not a verdict). */
    leases?: { lease: string; path: string; events: string[] }[];
  };
  report: { state: 'collected'; size: number; digest: string; binding: ReportBindingRecord } | { state: 'untrusted'; reason: string; message: string };
}

/**
 * Why a report is UNTRUSTED: one of these, or the reason its collection gave (report-dir.ts: REPORT_MISSING,
 * REPORT_NOT_REGULAR, …), kept as recorded.
 */
export const ADMISSION_REASONS = [
  'PROFILE_NOT_PRIVATE',
  'EXAMINER_INCOMPLETE',
  'BOUNDARY_INCOMPLETE',
  'REPORT_BINDING_MISMATCH',
  'REPORT_BYTES_MISMATCH',
  'REPORT_FORMAT_UNSUPPORTED',
  'REPORT_UNPARSEABLE',
] as const;
export type UntrustedReason = string;

export type ReportAdmission =
  | { classification: 'ADMISSIBLE'; verdict: 'PASS' | 'FAIL'; totals: JUnitTotals }
  | { classification: 'UNTRUSTED'; reasons: UntrustedReason[]; details: string[] };

/**
 * The formats a report is read in, each to totals: JUnit's own counts, or one test per benchmark with a
 * failure for each out of its bounds. A verdict passes only with at least one test and no failure or error.
 * gnatprove (accepted by the Policy schema) has no reader: such a report is UNTRUSTED, and the Policy says
 * so (controller/policy: REPORT_FORMAT_UNSUPPORTED).
 */
const READERS: Record<string, ((text: string) => JUnitParse) | undefined> = {
  junit: parseJUnit,
  [BENCHMARK_FORMAT]: (text) => {
    const r = parseBenchmarkReport(text);
    return r.ok ? { ok: true, totals: r.totals } : r;
  },
};

/** The report formats this node-agent can read to a verdict. */
export const READABLE_REPORT_FORMATS: readonly string[] = Object.keys(READERS);

const sameBinding = (a: ReportBindingRecord, b: ReportBindingRecord): boolean =>
  a.run === b.run && a.check === b.check && a.candidate === b.candidate && a.verifier === b.verifier;

/** `bytes`: the retained report (undefined when none was kept); `expected`: what this Check's run must be bound to. */
export function admitReport(record: PrivateRunRecord, bytes: Uint8Array | undefined, expected: ReportBindingRecord): ReportAdmission {
  const reasons: UntrustedReason[] = [];
  const details: string[] = [];
  const untrusted = (reason: UntrustedReason, detail: string): void => {
    if (!reasons.includes(reason)) reasons.push(reason);
    details.push(detail);
  };
  if (record.profile !== 'private-evaluator-v1') untrusted('PROFILE_NOT_PRIVATE', `profile ${record.profile}`);
  const e = record.examiner;
  if (e.reason !== 'Completed' || e.code !== 0 || e.signal !== null) untrusted('EXAMINER_INCOMPLETE', `the examiner ended ${e.reason} (code ${String(e.code)}, signal ${String(e.signal)})`);
  const b = record.boundary;
  if (b.problems.length > 0 || !b.rolesCompleted || !b.reportMountExclusive) {
    untrusted('BOUNDARY_INCOMPLETE', [...b.problems, ...(b.rolesCompleted ? [] : ['not every role ended']), ...(b.reportMountExclusive ? [] : ['the report was not mounted in the examiner alone'])].join('; '));
  }
  if (!sameBinding(record.binding, expected)) untrusted('REPORT_BINDING_MISMATCH', 'the run was bound to another run, check, candidate or verifier identity');
  const r = record.report;
  if (r.state !== 'collected') {
    untrusted(r.reason, r.message);
  } else {
    if (!sameBinding(r.binding, expected)) untrusted('REPORT_BINDING_MISMATCH', 'the report is bound to another run, check, candidate or verifier identity');
    const digest = bytes === undefined ? undefined : DIGEST_PREFIX + sha256Hex(bytes);
    if (bytes === undefined || bytes.length !== r.size || digest !== r.digest) untrusted('REPORT_BYTES_MISMATCH', 'the retained bytes are not the collected report');
  }
  if (reasons.length > 0 || bytes === undefined) return { classification: 'UNTRUSTED', reasons, details };
  const read = READERS[record.reportFormat];
  if (read === undefined) return { classification: 'UNTRUSTED', reasons: ['REPORT_FORMAT_UNSUPPORTED'], details: [`report format ${record.reportFormat} is not read by this node-agent`] };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { classification: 'UNTRUSTED', reasons: ['REPORT_UNPARSEABLE'], details: ['the report is not UTF-8'] };
  }
  const parsed = read(text);
  if (!parsed.ok) return { classification: 'UNTRUSTED', reasons: ['REPORT_UNPARSEABLE'], details: [parsed.problem] };
  const t = parsed.totals;
  return { classification: 'ADMISSIBLE', verdict: t.tests > 0 && t.failures === 0 && t.errors === 0 ? 'PASS' : 'FAIL', totals: t };
}

/** A private run's id as the node-agent names it from its Check's uid (node-agent/checks/check-reconciler.ts). */
export function privateRunId(checkUid: string): string {
  return checkUid.replace(/[^A-Za-z0-9-]/g, '');
}
