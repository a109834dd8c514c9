// The collapse collapse decision: a pure function from everything measured about a collapse to
// Authorized or a list of named reasons. It is the only place that says yes.
//
// Contract (tested as a property over generated inputs, test/unit/core-collapse-decide.test.ts):
//   decide(input).authorized  <=>  every condition below holds  <=>  decide(input).reasons is empty.
// Each failing condition adds its own reason; reasons come out once each, in REASONS order.
//
// The decision only guarantees that absent, unmeasured or unequal values are never Authorized. Which
// values reach it is the caller's job: every pair below is meant to be fed from two DIFFERENT records
// (named per field). A caller that copies one value into both sides satisfies the decision and proves
// nothing.
import {
  absentId,
  executedMatchesDeclared,
  idsEqual,
  type BaseId,
  type CheckpointId,
  type DeltaId,
  type EvidenceSubjectId,
  type Id,
  type ParentId,
  type PrimeGenerationId,
  type PrimeObservationId,
  type RequirementId,
  type RootSetId,
  type StagedRootId,
  type VerifierDeclaredId,
  type VerifierExecutedId,
  type WorldId,
} from './identity.js';

/** Canonical order of every reason the decision can give. */
export const REASONS = [
  'MODE_UNKNOWN',
  'CANDIDATE_INVALID',
  'CONFLICTS_UNMEASURED',
  'CONFLICT',
  'FOREIGN_WRITES_UNMEASURED',
  'FOREIGN_WRITE',
  'IDENTITY_ABSENT_PRIME_OBSERVATION',
  'PRIME_OBSERVATION_GAP',
  'PRIME_GENERATION_UNOBSERVED',
  'PRIME_MOVED',
  'IDENTITY_ABSENT_PARENT',
  'IDENTITY_MISMATCH_PARENT',
  'IDENTITY_ABSENT_EVIDENCE_SUBJECT',
  'IDENTITY_MISMATCH_EVIDENCE_SUBJECT',
  'IDENTITY_ABSENT_BASE',
  'IDENTITY_MISMATCH_BASE',
  'IDENTITY_ABSENT_DELTA',
  'IDENTITY_MISMATCH_DELTA',
  'IDENTITY_ABSENT_ROOT_SET',
  'IDENTITY_MISMATCH_ROOT_SET',
  'IDENTITY_ABSENT_STAGED_ROOT',
  'STAGED_UNTESTED',
  'EVIDENCE_MISSING',
  'EVIDENCE_AMBIGUOUS',
  'IDENTITY_ABSENT_REQUIREMENT',
  'EVIDENCE_STALE',
  'EVIDENCE_CONTEXT_MISSING',
  'EVIDENCE_CONTEXT_INVALID',
  'EXECUTION_EVIDENCE_INCOMPLETE',
  'IDENTITY_ABSENT_VERIFIER',
  'VERIFIER_EXECUTION_IDENTITY_MISMATCH',
  'VERIFIER_MODIFICATION_UNMEASURED',
  'VERIFIER_MODIFIED_BY_CANDIDATE',
  'CHECK_NOT_PASSED',
  'CHECKPOINT_WITNESS_MISSING',
  'IDENTITY_ABSENT_CHECKPOINT',
  'CHECKPOINT_WITNESS_MISMATCH',
] as const;
export type Reason = (typeof REASONS)[number];

const ORDER = new Map<string, number>(REASONS.map((r, i) => [r, i]));

/** A measurement that may not have been taken: "none found" is only believable when measured. */
export type Measurement = { readonly measured: false } | { readonly measured: true; readonly found: readonly string[] };

export type Verdict = 'PASS' | 'FAIL' | 'REFUSED';

/** One check's execution, as the check runner recorded it. */
export interface ExecutionRecord {
  readonly check: string;
  /** The runner's record of how the check ran (sandbox, staged verifiers) was found and is intact. */
  readonly provenanceEstablished: boolean;
  readonly verdict: Verdict;
}

/** Where the evaluation says it ran: its context record, and the world that record binds it to. */
export type EvidenceContext =
  | { readonly present: false }
  | { readonly present: true; readonly intact: boolean; readonly world: WorldId };

/** One stored evaluation of a world's candidate (an initial run or a revalidation). */
export interface Evaluation {
  /** Store-assigned, strictly increasing per world: the larger one is newer. */
  readonly ordinal: number;
  /** The bytes it examined (evaluation record). */
  readonly subject: EvidenceSubjectId;
  /** The requirement it was evaluated under (evaluation record). */
  readonly requirement: RequirementId;
  readonly context: EvidenceContext;
  /** The verifier identity the check runner executed (execution records, aggregated). */
  readonly executedVerifier: VerifierExecutedId;
  readonly executions: readonly ExecutionRecord[];
}

export interface CandidateObligation {
  readonly mode: 'Candidate';
  /** The world being collapsed (the Collapse's world record); the evidence context must name it. */
  readonly world: WorldId;
  /** The requirement CURRENT PRIME imposes (policy resolved against PRIME now), not the evaluation's. */
  readonly currentRequirement: RequirementId;
  /** Checks the current policy requires; each needs an execution record with established provenance. */
  readonly requiredChecks: readonly string[];
  /** The verifier identity the policy authorizes (the policy's resolved verifier list). */
  readonly declaredVerifier: VerifierDeclaredId;
  /** Bound verifier paths the candidate's delta touches (delta against the policy's verifier bindings). */
  readonly verifiersModifiedByCandidate: Measurement;
  /** Every stored evaluation of this world; the decision itself picks the one that speaks. */
  readonly evaluations: readonly Evaluation[];
}

export interface CheckpointWitness {
  /** The checkpoint the witness re-hashed (the checkpoint payload as found in the store now). */
  readonly checkpoint: CheckpointId;
  /** The bytes the witness examined. */
  readonly subject: EvidenceSubjectId;
}

export interface CheckpointObligation {
  readonly mode: 'CheckpointReturn';
  /** The checkpoint the world recorded when it was taken (world record). */
  readonly checkpoint: CheckpointId;
  readonly witness: CheckpointWitness | null;
}

export type Obligation = CandidateObligation | CheckpointObligation;

/**
 * How the re-hash of live PRIME in `base.primeRehash` was obtained: walked for this decision, or vouched
 * for by the PRIME watcher — the digest a recorded walk gave, standing only while the watcher's
 * observation state of PRIME's layers when that walk began (the store's measurement record) equals its
 * state when this decision's measurement ended (the watcher, read again). Any other value is absent.
 */
export type PrimeRehashSource =
  | { readonly by: 'walk' }
  | { readonly by: 'watcher'; readonly measured: PrimeObservationId; readonly now: PrimeObservationId };

export interface DecisionInput {
  /** `prepare` before anything is staged; `commit` at the serialized boundary, just before the exchange. */
  readonly stage: 'prepare' | 'commit';
  /** The candidate's capture finished and was found valid (no refused content). */
  readonly candidateValid: boolean;
  /** Paths changed both in PRIME since the base and in the candidate. */
  readonly conflicts: Measurement;
  /** Managed writes to live PRIME that no generation accounts for. */
  readonly foreignWrites: Measurement;
  /** PRIME's generation as observed when the decision started and again when it ended. */
  readonly primeGeneration: { readonly before: PrimeGenerationId; readonly after: PrimeGenerationId };
  /** parent: the store's PRIME record (the generation PRIME is) vs the candidate's capture record (the generation it forked from). */
  readonly parent: { readonly storePrime: ParentId; readonly candidateBase: ParentId };
  /** base: a fresh re-hash of live PRIME vs the base digest the world record kept at fork time. */
  readonly base: { readonly primeRehash: BaseId; readonly world: BaseId };
  /** Where base.primeRehash came from; required (absent: not authorized). */
  readonly primeRehashSource: PrimeRehashSource;
  /** delta: the delta digest in the capture record vs a re-hash of the candidate payload in the content store. */
  readonly delta: { readonly captured: DeltaId; readonly stored: DeltaId };
  /** root set: the roots the world record names vs the roots the store's live mapping holds for them. */
  readonly rootSet: { readonly world: RootSetId; readonly store: RootSetId };
  /**
   * staged root (checked at `commit` only): a re-hash of the staged payload vs the digest the
   * speaking evidence tested (evaluation subject or checkpoint witness).
   */
  readonly stagedRoot: { readonly staged: StagedRootId; readonly tested: StagedRootId };
  /**
   * evidence subject: the digest of the bytes that would go live (capture record) — compared with the
   * subject of the speaking evidence record (the effective evaluation, or the checkpoint witness).
   */
  readonly subject: EvidenceSubjectId;
  readonly obligation: Obligation;
}

export interface Decision {
  readonly authorized: boolean;
  readonly reasons: readonly Reason[];
}

/**
 * The evaluation that speaks for a world: the newest one, whatever it says. An older evaluation never
 * speaks while a newer one exists, so a FAIL recorded after a PASS revokes the PASS, and a newer stale
 * evaluation is not bypassed in favour of an older fresh one (that refusal fails closed). When the
 * newest ordinal is shared, nobody speaks ('ambiguous'). Ordinals must be finite numbers.
 */
export function effectiveEvaluation(
  evaluations: readonly Evaluation[],
): { readonly speaks: Evaluation } | { readonly speaks: null; readonly why: 'none' | 'ambiguous' } {
  let newest: Evaluation | null = null;
  // Stryker disable next-line BooleanLiteral: equivalent; the first evaluation always resets `tied`, and with none the loop never reads it.
  let tied = false;
  for (const e of evaluations) {
    if (!Number.isFinite(e.ordinal)) return { speaks: null, why: 'ambiguous' };
    if (newest === null || e.ordinal > newest.ordinal) {
      newest = e;
      tied = false;
    } else if (e.ordinal === newest.ordinal) {
      tied = true;
    }
  }
  if (newest === null) return { speaks: null, why: 'none' };
  if (tied) return { speaks: null, why: 'ambiguous' };
  return { speaks: newest };
}

export function decide(input: DecisionInput): Decision {
  const out = new Set<Reason>();
  const add = (r: Reason): void => void out.add(r);

  if (input.candidateValid !== true) add('CANDIDATE_INVALID');
  measuredNone(input.conflicts, 'CONFLICTS_UNMEASURED', 'CONFLICT', add);
  measuredNone(input.foreignWrites, 'FOREIGN_WRITES_UNMEASURED', 'FOREIGN_WRITE', add);

  primeRehashSource(input.primeRehashSource, add);

  const { before, after } = input.primeGeneration;
  if (!before.present || !after.present) add('PRIME_GENERATION_UNOBSERVED');
  else if (!idsEqual(before, after)) add('PRIME_MOVED');

  pair(input.parent.storePrime, input.parent.candidateBase, 'IDENTITY_ABSENT_PARENT', 'IDENTITY_MISMATCH_PARENT', add);
  pair(input.base.primeRehash, input.base.world, 'IDENTITY_ABSENT_BASE', 'IDENTITY_MISMATCH_BASE', add);
  pair(input.delta.captured, input.delta.stored, 'IDENTITY_ABSENT_DELTA', 'IDENTITY_MISMATCH_DELTA', add);
  pair(input.rootSet.world, input.rootSet.store, 'IDENTITY_ABSENT_ROOT_SET', 'IDENTITY_MISMATCH_ROOT_SET', add);
  if (input.stage !== 'prepare') {
    // Any stage other than an explicit `prepare` is held to the commit rule (fail closed).
    pair(input.stagedRoot.staged, input.stagedRoot.tested, 'IDENTITY_ABSENT_STAGED_ROOT', 'STAGED_UNTESTED', add);
  }

  const obligation = input.obligation;
  switch (obligation.mode) {
    case 'Candidate':
      candidateObligation(obligation, input.subject, add);
      break;
    case 'CheckpointReturn':
      checkpointObligation(obligation, input.subject, add);
      break;
    default:
      // Only reachable from untyped callers: no obligation we know, so no evidence speaks.
      add('MODE_UNKNOWN');
      add('IDENTITY_ABSENT_EVIDENCE_SUBJECT');
  }

  const reasons = [...out].sort((a, b) => (ORDER.get(a) ?? 0) - (ORDER.get(b) ?? 0));
  return { authorized: reasons.length === 0, reasons };
}

function candidateObligation(o: CandidateObligation, subject: EvidenceSubjectId, add: (r: Reason) => void): void {
  const chosen = effectiveEvaluation(o.evaluations);
  // evidence subject: the speaking evaluation's subject (evaluation record) vs the candidate digest.
  // Stryker disable next-line StringLiteral: equivalent; an absent id is refused by presence before its kind is ever compared.
  const evidenceSubject = chosen.speaks ? chosen.speaks.subject : absentId('evidenceSubject');
  pair(evidenceSubject, subject, 'IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'IDENTITY_MISMATCH_EVIDENCE_SUBJECT', add);
  measuredNone(o.verifiersModifiedByCandidate, 'VERIFIER_MODIFICATION_UNMEASURED', 'VERIFIER_MODIFIED_BY_CANDIDATE', add);
  const e = chosen.speaks;
  if (e === null) {
    add(chosen.why === 'ambiguous' ? 'EVIDENCE_AMBIGUOUS' : 'EVIDENCE_MISSING');
    return;
  }
  // requirement: the evaluation's requirement (evaluation record) vs the one current PRIME imposes (policy now).
  pair(e.requirement, o.currentRequirement, 'IDENTITY_ABSENT_REQUIREMENT', 'EVIDENCE_STALE', add);

  if (!e.context.present) add('EVIDENCE_CONTEXT_MISSING');
  else if (e.context.intact !== true || !idsEqual(e.context.world, o.world)) add('EVIDENCE_CONTEXT_INVALID');

  const established = new Set(e.executions.filter((x) => x.provenanceEstablished === true).map((x) => x.check));
  if (!o.requiredChecks.every((c) => established.has(c))) add('EXECUTION_EVIDENCE_INCOMPLETE');

  // verifier: the policy's resolved verifier list (declared) vs the check runner's execution records (executed).
  if (!o.declaredVerifier.present || !e.executedVerifier.present) add('IDENTITY_ABSENT_VERIFIER');
  else if (!executedMatchesDeclared(o.declaredVerifier, e.executedVerifier)) add('VERIFIER_EXECUTION_IDENTITY_MISMATCH');

  if (!e.executions.every((x) => x.verdict === 'PASS')) add('CHECK_NOT_PASSED');
}

function checkpointObligation(o: CheckpointObligation, subject: EvidenceSubjectId, add: (r: Reason) => void): void {
  const w = o.witness;
  // evidence subject: the bytes the witness examined (witness record) vs the bytes that would go live.
  // Stryker disable next-line StringLiteral: equivalent; an absent id is refused by presence before its kind is ever compared.
  const evidenceSubject = w ? w.subject : absentId('evidenceSubject');
  pair(evidenceSubject, subject, 'IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'IDENTITY_MISMATCH_EVIDENCE_SUBJECT', add);
  if (w === null) {
    add('CHECKPOINT_WITNESS_MISSING');
    return;
  }
  // checkpoint: the checkpoint the world recorded (world record) vs what the witness re-hashed (store now).
  pair(o.checkpoint, w.checkpoint, 'IDENTITY_ABSENT_CHECKPOINT', 'CHECKPOINT_WITNESS_MISMATCH', add);
}

function primeRehashSource(source: PrimeRehashSource | undefined, add: (r: Reason) => void): void {
  if (source?.by === 'walk') return;
  // measured: the watcher's state when the recorded walk began vs now: its state when the measurement ended.
  if (source?.by === 'watcher') pair(source.measured, source.now, 'IDENTITY_ABSENT_PRIME_OBSERVATION', 'PRIME_OBSERVATION_GAP', add);
  else add('IDENTITY_ABSENT_PRIME_OBSERVATION'); // missing, or a source we do not know: nobody vouched
}

function pair<K extends string>(a: Id<K>, b: Id<NoInfer<K>>, ifAbsent: Reason, ifUnequal: Reason, add: (r: Reason) => void): void {
  if (!a.present || !b.present) add(ifAbsent);
  else if (!idsEqual(a, b)) add(ifUnequal);
}

function measuredNone(m: Measurement, ifUnmeasured: Reason, ifFound: Reason, add: (r: Reason) => void): void {
  if (m.measured !== true) add(ifUnmeasured);
  else if (m.found.length > 0) add(ifFound);
}
