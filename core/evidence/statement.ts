// in-toto v1 Statements as worldline's evidence: exactly one SHA-256 subject, which also states its byte
// size and media type, and a predicate of a known type read against its closed schema (an unknown field
// is refused). The subject must be what the predicate itself says it is about, so a valid statement
// cannot be re-pointed at other bytes: an isolation observation's subject is the artifact its execution
// ran over; an isolation decision's is the observation it evaluated. Read from the exact bytes a DSSE
// envelope verified (dsse.ts), with the same strict, bounded JSON.
import type { z } from 'zod';
import { canonicalJson } from '../canonical-json.js';
import { IsolationDecisionSchema, IsolationObservationSchema } from '../isolation/records.js';
import { IsolationWaiverSchema, worldRefSubject, type IsolationWaiver } from './isolation-waiver.js';
import { CheckExecutionSchema } from './check-execution.js';
import { CollapseGrantSchema, transactionRefSubject, type CollapseGrantPredicate } from './collapse-grant.js';
import { receiptBodySchema, receiptId, type ReceiptBody } from '../receipts/receipt.js';
import { parseStrictJson, StrictJsonError } from './strict-json.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';

export const PREDICATE_TYPES = {
  isolationObservation: 'https://worldline.dev/attestations/isolation-observation/v1',
  isolationDecision: 'https://worldline.dev/attestations/isolation-decision/v1',
  isolationWaiver: 'https://worldline.dev/attestations/isolation-waiver/v1',
  checkExecution: 'https://worldline.dev/attestations/check-execution/v1',
  collapseReceipt: 'https://worldline.dev/attestations/collapse-receipt/v1',
  collapseGrant: 'https://worldline.dev/attestations/collapse-grant/v1',
} as const;
export type PredicateType = (typeof PREDICATE_TYPES)[keyof typeof PREDICATE_TYPES];

export type StatementErrorCode = 'STATEMENT_INVALID' | 'SUBJECT_INVALID' | 'PREDICATE_TYPE_MISMATCH' | 'PREDICATE_INVALID' | 'SUBJECT_MISMATCH';

export class StatementError extends Error {
  constructor(
    readonly code: StatementErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StatementError';
  }
}

/** The one thing a statement is about: its SHA-256 (as `sha256:<hex>`), size in bytes and media type. */
export interface Subject {
  name: string;
  digest: string;
  size: number;
  mediaType: string;
}

interface PredicateRule {
  schema: z.ZodType;
  /** The digest the predicate says it is about (what the subject must be). */
  about: (predicate: never) => string | null;
  /** When the predicate also fixes the subject's size and media type (its bytes are known). */
  exact?: (predicate: never) => Subject;
}

const RULES: Record<PredicateType, PredicateRule> = {
  [PREDICATE_TYPES.isolationObservation]: { schema: IsolationObservationSchema, about: (p: { subject: string }) => p.subject },
  [PREDICATE_TYPES.isolationDecision]: { schema: IsolationDecisionSchema, about: (p: { observationIdentity: string | null }) => p.observationIdentity },
  [PREDICATE_TYPES.checkExecution]: { schema: CheckExecutionSchema, about: (p: { subject: string }) => p.subject },
  [PREDICATE_TYPES.collapseReceipt]: {
    schema: receiptBodySchema,
    about: (p: ReceiptBody) => receiptId(p),
    exact: (p: ReceiptBody) => receiptSubject(p),
  },
  [PREDICATE_TYPES.collapseGrant]: { schema: CollapseGrantSchema, about: (p: CollapseGrantPredicate) => transactionRefSubject(p.about).digest, exact: (p: CollapseGrantPredicate) => transactionRefSubject(p.about) },
  [PREDICATE_TYPES.isolationWaiver]: { schema: IsolationWaiverSchema, about: (p: IsolationWaiver) => worldRefSubject(p.world).digest, exact: (p: IsolationWaiver) => worldRefSubject(p.world) },
};

const LIMITS = { maxLength: 256 << 10, maxDepth: 16 };
const HEX64 = /^[0-9a-f]{64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function closed(o: Record<string, unknown>, allowed: readonly string[], where: string, code: StatementErrorCode): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new StatementError(code, `unknown field ${JSON.stringify(k)} in ${where}`);
}

function subjectOf(raw: unknown): Subject {
  if (!Array.isArray(raw) || raw.length !== 1) throw new StatementError('SUBJECT_INVALID', 'a statement has exactly one subject');
  const s: unknown = raw[0];
  if (!isObject(s)) throw new StatementError('SUBJECT_INVALID', 'the subject is not an object');
  closed(s, ['name', 'digest', 'mediaType', 'annotations'], 'the subject', 'SUBJECT_INVALID');
  if (typeof s.name !== 'string' || s.name === '') throw new StatementError('SUBJECT_INVALID', 'the subject needs a name');
  if (!isObject(s.digest)) throw new StatementError('SUBJECT_INVALID', 'the subject needs a digest');
  closed(s.digest, ['sha256'], 'the subject digest (SHA-256 only)', 'SUBJECT_INVALID');
  if (typeof s.digest.sha256 !== 'string' || !HEX64.test(s.digest.sha256)) throw new StatementError('SUBJECT_INVALID', 'the subject digest is not 64 lowercase hex characters of SHA-256');
  if (typeof s.mediaType !== 'string' || s.mediaType === '') throw new StatementError('SUBJECT_INVALID', 'the subject needs a media type');
  if (!isObject(s.annotations)) throw new StatementError('SUBJECT_INVALID', 'the subject needs annotations.size');
  closed(s.annotations, ['size'], 'the subject annotations', 'SUBJECT_INVALID');
  const size = s.annotations.size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw new StatementError('SUBJECT_INVALID', 'annotations.size must be a byte count');
  return { name: s.name, digest: `sha256:${s.digest.sha256}`, size, mediaType: s.mediaType };
}

export const RECEIPT_MEDIA_TYPE = 'application/vnd.worldline.receipt+json';

/** The subject of a collapse receipt's statement: the receipt body's canonical bytes (their digest is its id). */
export function receiptSubject(body: ReceiptBody): Subject {
  return { name: `receipts/${receiptId(body)}`, digest: receiptId(body), size: Buffer.byteLength(canonicalJson(body)), mediaType: RECEIPT_MEDIA_TYPE };
}

/** The canonical bytes of a statement about `subject` (what a producer signs). */
export function statementBytes(subject: Subject, predicateType: PredicateType, predicate: unknown): Buffer {
  if (!/^sha256:[0-9a-f]{64}$/.test(subject.digest)) throw new Error(`subject digest ${subject.digest} is not sha256:<64 hex>`);
  return Buffer.from(
    canonicalJson({
      _type: STATEMENT_TYPE,
      subject: [{ name: subject.name, digest: { sha256: subject.digest.slice('sha256:'.length) }, mediaType: subject.mediaType, annotations: { size: subject.size } }],
      predicateType,
      predicate,
    }),
  );
}

/**
 * Reads a statement of the expected predicate type from verified payload bytes: its closed form, its one
 * subject, the predicate against its schema, and the subject against what the predicate is about.
 */
export function parseStatement<T>(payload: Uint8Array, expected: PredicateType): { subject: Subject; predicate: T } {
  let v: unknown;
  try {
    v = parseStrictJson(new TextDecoder('utf-8', { fatal: true }).decode(payload), LIMITS);
  } catch (e) {
    throw new StatementError('STATEMENT_INVALID', `not a strict JSON statement: ${e instanceof StrictJsonError ? `${e.code}: ${e.message}` : (e as Error).message}`);
  }
  if (!isObject(v)) throw new StatementError('STATEMENT_INVALID', 'the statement is not an object');
  closed(v, ['_type', 'subject', 'predicateType', 'predicate'], 'the statement', 'STATEMENT_INVALID');
  if (v._type !== STATEMENT_TYPE) throw new StatementError('STATEMENT_INVALID', `_type must be ${STATEMENT_TYPE}`);
  const subject = subjectOf(v.subject);
  if (v.predicateType !== expected) throw new StatementError('PREDICATE_TYPE_MISMATCH', `predicate type ${JSON.stringify(v.predicateType)}, expected ${expected}`);
  const rule = RULES[expected];
  const parsed = rule.schema.safeParse(v.predicate);
  if (!parsed.success) throw new StatementError('PREDICATE_INVALID', `the predicate does not match ${expected}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}`);
  const about = rule.about(parsed.data as never);
  if (about !== subject.digest) throw new StatementError('SUBJECT_MISMATCH', `the subject ${subject.digest} is not what the predicate is about (${about ?? 'nothing'})`);
  const exact = rule.exact?.(parsed.data as never);
  if (exact && (exact.size !== subject.size || exact.mediaType !== subject.mediaType)) {
    throw new StatementError('SUBJECT_MISMATCH', `the subject says ${subject.size} bytes of ${subject.mediaType}; what the predicate is about is ${exact.size} bytes of ${exact.mediaType}`);
  }
  return { subject, predicate: parsed.data as T };
}
