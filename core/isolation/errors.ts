// Typed errors of the isolation contract. Both carry a stable `code` so callers can write it to status.
import { Refusal } from '../errors.js';
import type { IsolationRecordKind } from './records.js';
import type { RecordProblem } from './parse.js';

/** A record handed to the contract is malformed (unknown field, unknown enum value, duplicate, order, version...). */
export class IsolationRecordError extends Refusal {
  declare readonly code: 'ISOLATION_RECORD_INVALID';
  constructor(
    readonly kind: IsolationRecordKind,
    readonly problems: readonly RecordProblem[],
  ) {
    super('ISOLATION_RECORD_INVALID', `invalid ${kind}: ${problems.map((p) => `${p.code} at ${p.path}: ${p.message}`).join('; ')}`);
    this.name = 'IsolationRecordError';
  }
}

/** A decision does not reproduce exactly from the inputs supplied with it (a substituted or altered input or field). */
export class IsolationRecomputationError extends Refusal {
  declare readonly code: 'ISOLATION_DECISION_NOT_REPRODUCED';
  constructor(
    /** The first decision field (in a fixed order, identities first) whose value differs. */
    readonly field: string,
    /** Canonical JSON of the recomputed value, or undefined when the field should be absent. */
    readonly expected: string | undefined,
    /** Canonical JSON of the supplied value, or undefined when it is absent. */
    readonly actual: string | undefined,
    detail: string,
  ) {
    super('ISOLATION_DECISION_NOT_REPRODUCED', `isolation decision does not reproduce: ${field}: ${detail}`);
    this.name = 'IsolationRecomputationError';
  }
}
