// The check execution record as a statement (issue 13, item 1): what one Check run was — which Check of
// which World, on which candidate (the statement's subject: the candidate's canonical document, whose
// SHA-256 is the candidate digest), under which requirement, with which verifiers declared and executed,
// how it ended and with what verdict. A closed schema: an unknown field is refused. Pure.
import { z } from 'zod';
import { canonicalJson } from '../canonical-json.js';
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import type { Subject } from './statement.js';

export const CANDIDATE_MEDIA_TYPE = 'application/vnd.worldline.candidate+json';

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const instant = z.iso.datetime({ offset: true });

export const CheckExecutionSchema = z.strictObject({
  check: z.strictObject({ namespace: z.string().min(1).max(63), name: z.string().min(1).max(253), uid: z.string().min(1).max(128) }),
  world: z.strictObject({ uid: z.string().min(1).max(128) }),
  checkName: z.string().min(1).max(253),
  subject: digest,
  requirementHash: digest,
  verifierIdentity: digest,
  executedVerifierIdentity: digest,
  verdict: z.enum(['PASS', 'FAIL', 'REFUSED']),
  reason: z.string().regex(/^[A-Z][A-Z0-9_]*$/).max(64).optional(),
  exit: z.strictObject({ code: z.int().nullable(), signal: z.string().max(32).nullable(), reason: z.string().max(64) }),
  startedAt: instant,
  finishedAt: instant,
});
export type CheckExecution = z.infer<typeof CheckExecutionSchema>;

/** The statement subject of a candidate, from its identity document (what candidate.json holds). */
export function candidateSubject(identity: unknown): Subject {
  const bytes = Buffer.from(canonicalJson(identity));
  const d = DIGEST_PREFIX + sha256Hex(bytes);
  return { name: `candidates/${d}`, digest: d, size: bytes.length, mediaType: CANDIDATE_MEDIA_TYPE };
}
