// Exact recomputation: a consumer holding a decision and the exact policy, request and observation it claims
// to come from re-evaluates them and requires field-for-field equality. Success proves only that the
// unauthenticated report reproduces deterministically; it grants no authority.
import { canonicalJson, CanonicalJsonError } from '../canonical-json.js';
import { IsolationRecomputationError } from './errors.js';
import { evaluate } from './evaluate.js';
import type { IsolationDecision, IsolationObservation, IsolationPolicy, IsolationRequest } from './records.js';

/** Decision fields in comparison order: the input identities first, so a substituted input is named as such. */
const FIELD_ORDER: readonly (keyof IsolationDecision)[] = [
  'policyIdentity',
  'requestIdentity',
  'observationIdentity',
  'schemaVersion',
  'kind',
  'outcome',
  'reasons',
  'effectiveMinimum',
  'requiredControls',
  'missingControls',
  'authority',
];

const SUBSTITUTED: Partial<Record<keyof IsolationDecision, string>> = {
  policyIdentity: 'the decision was made over another policy than the one supplied (substituted policy)',
  requestIdentity: 'the decision was made over another request than the one supplied (substituted request)',
  observationIdentity: 'the decision was made over another observation than the one supplied (substituted or missing observation)',
};

/**
 * Re-evaluates `policy`, `request` and `observation` and requires `decision` to equal the result exactly.
 * Throws IsolationRecomputationError naming the first differing field, or IsolationRecordError when an input
 * record is malformed. Returns the recomputed decision.
 */
export function requireExactRecomputation(
  decision: IsolationDecision,
  policy: IsolationPolicy,
  request: IsolationRequest,
  observation: IsolationObservation | undefined,
): IsolationDecision {
  const expected = evaluate(policy, request, observation);
  if (typeof decision !== 'object' || decision === null || Array.isArray(decision)) {
    throw new IsolationRecomputationError('$', canonicalJson(expected), undefined, 'the decision is not an object');
  }
  const supplied = decision as unknown as Record<string, unknown>;
  for (const field of FIELD_ORDER) {
    const want = canonicalJson(expected[field]);
    const got = Object.hasOwn(supplied, field) ? canonicalText(supplied[field]) : undefined;
    if (got !== want) {
      throw new IsolationRecomputationError(field, want, got, SUBSTITUTED[field] ?? `expected ${want}, got ${got ?? 'nothing'}`);
    }
  }
  const extra = Object.keys(supplied).filter((k) => !(FIELD_ORDER as readonly string[]).includes(k)).sort();
  if (extra.length > 0) throw new IsolationRecomputationError(extra[0]!, undefined, canonicalText(supplied[extra[0]!]), 'unknown field in the decision');
  return expected;
}

/** Canonical JSON of a supplied value, or a marker that cannot equal any canonical text when it has none. */
function canonicalText(value: unknown): string {
  try {
    return value === undefined ? '<undefined>' : canonicalJson(value);
  } catch (err) {
    if (err instanceof CanonicalJsonError) return `<not JSON: ${err.message}>`;
    throw err;
  }
}
