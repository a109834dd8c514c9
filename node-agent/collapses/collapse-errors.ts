// Refusals of a collapse, each with a stable UPPER_SNAKE code (the names of DESIGN.md §3 where one exists).
import { Refusal } from '../../core/errors.js';

export const CollapseErrorCodes = {
  /** The staged payload does not walk to the digest the candidate's delta gives (or changed before the exchange). */
  STAGED_UNTESTED: 'STAGED_UNTESTED',
  /** PRIME was written outside a collapse: its content no longer has the digest of the recorded generation. */
  FOREIGN_WRITE: 'FOREIGN_WRITE',
  /** The store's recorded generation of the root is no longer the base the candidate was captured from. */
  PRIME_MOVED: 'PRIME_MOVED',
  /** The candidate has no well-formed delta for this root, or it names another base. */
  CANDIDATE_INVALID: 'CANDIDATE_INVALID',
  /** The root's live mapping is not as the store recorded it. */
  LIVE_MAPPING_BROKEN: 'LIVE_MAPPING_BROKEN',
  ROOT_NOT_FOUND: 'ROOT_NOT_FOUND',
} as const;

export type CollapseErrorCode = (typeof CollapseErrorCodes)[keyof typeof CollapseErrorCodes];

export class CollapseError extends Refusal {
  constructor(
    override readonly code: CollapseErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, `${code}: ${message}`, options);
    this.name = 'CollapseError';
  }
}

export function isCollapseError(e: unknown, code?: CollapseErrorCode): e is CollapseError {
  return e instanceof CollapseError && (code === undefined || e.code === code);
}
