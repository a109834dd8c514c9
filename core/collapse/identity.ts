// Typed identities with explicit presence, the values the collapse decision compares.
//
// An identity either carries a value or says why it does not: `absent` (the record that should hold it
// has none) or `unmeasured` (nobody looked). Equality is deliberately not reflexive on missing values:
// two absent identities are never equal, so "both sides forgot" can never look like agreement.
//
// Each kind is its own type. `idsEqual` accepts only two identities of the same kind, checked both by
// the compiler (the second argument cannot widen the kind) and at run time (the `kind` fields must agree).
import { Refusal } from '../errors.js';

export const ID_KINDS = [
  'parent',
  'evidenceSubject',
  'base',
  'delta',
  'rootSet',
  'stagedRoot',
  'checkpoint',
  'requirement',
  'verifierDeclared',
  'verifierExecuted',
  'primeGeneration',
  'primeObservation',
  'world',
] as const;
export type IdKind = (typeof ID_KINDS)[number];

export type Missing = 'absent' | 'unmeasured';

export type Id<K extends string> =
  | { readonly kind: K; readonly present: true; readonly value: string }
  | { readonly kind: K; readonly present: false; readonly why: Missing };

export type ParentId = Id<'parent'>;
export type EvidenceSubjectId = Id<'evidenceSubject'>;
export type BaseId = Id<'base'>;
export type DeltaId = Id<'delta'>;
export type RootSetId = Id<'rootSet'>;
export type StagedRootId = Id<'stagedRoot'>;
export type CheckpointId = Id<'checkpoint'>;
export type RequirementId = Id<'requirement'>;
export type VerifierDeclaredId = Id<'verifierDeclared'>;
export type VerifierExecutedId = Id<'verifierExecuted'>;
export type PrimeGenerationId = Id<'primeGeneration'>;
export type WorldId = Id<'world'>;
/** The PRIME watcher's observation state of a Root's layers (node-agent/store/prime-watcher.ts stateOf). */
export type PrimeObservationId = Id<'primeObservation'>;

export class IdentityError extends Refusal {
  declare readonly code: 'IDENTITY_INVALID';
  constructor(message: string) {
    super('IDENTITY_INVALID', message);
    this.name = 'IdentityError';
  }
}

/** A present identity. An empty value is refused: it would be a presence that says nothing. */
export function presentId<K extends string>(kind: K, value: string): Id<K> {
  if (typeof value !== 'string' || value.length === 0) {
    throw new IdentityError(`identity ${kind}: a present value must be a non-empty string`);
  }
  return { kind, present: true, value };
}

export function absentId<K extends string>(kind: K): Id<K> {
  return { kind, present: false, why: 'absent' };
}

export function unmeasuredId<K extends string>(kind: K): Id<K> {
  return { kind, present: false, why: 'unmeasured' };
}

/** From a record field that may be missing: null, undefined and '' become `absent`. */
export function idFrom<K extends string>(kind: K, value: string | null | undefined): Id<K> {
  return value === null || value === undefined || value === '' ? absentId(kind) : presentId(kind, value);
}

/** A PRIME generation number as an identity (decimal text of a non-negative safe integer). */
export function generationId(generation: number | null | undefined): PrimeGenerationId {
  if (generation === null || generation === undefined) return unmeasuredId('primeGeneration');
  if (!Number.isSafeInteger(generation) || generation < 0) {
    throw new IdentityError(`identity primeGeneration: ${String(generation)} is not a non-negative integer`);
  }
  return presentId('primeGeneration', String(generation));
}

/** True only when both identities are present, of the same kind, and carry the same value. */
export function idsEqual<K extends string>(a: Id<K>, b: Id<NoInfer<K>>): boolean {
  return a.present && b.present && a.kind === b.kind && a.value === b.value;
}

/**
 * The one cross-kind comparison the decision needs: the verifier identity the policy declares against
 * the one the check runner recorded as executed. Same presence rule as `idsEqual`.
 */
export function executedMatchesDeclared(declared: VerifierDeclaredId, executed: VerifierExecutedId): boolean {
  return (
    declared.present &&
    executed.present &&
    declared.kind === 'verifierDeclared' &&
    executed.kind === 'verifierExecuted' &&
    declared.value === executed.value
  );
}

/** The value of a present identity, or null. For writing receipts and status, never for deciding. */
export function valueOf<K extends string>(id: Id<K>): string | null {
  return id.present ? id.value : null;
}
