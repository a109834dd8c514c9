import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  decide,
  effectiveEvaluation,
  REASONS,
  type CandidateObligation,
  type CheckpointObligation,
  type DecisionInput,
  type Evaluation,
  type EvidenceContext,
  type ExecutionRecord,
  type Measurement,
  type PrimeRehashSource,
  type Reason,
} from '../../core/collapse/decide.js';
import { absentId, presentId, unmeasuredId, type Id } from '../../core/collapse/identity.js';

// ---- a collapse where every condition holds -------------------------------------------------------

const CHECKS = ['unit', 'lint'];
const none: Measurement = { measured: true, found: [] };

function passingEvaluation(ordinal = 1): Evaluation {
  return {
    ordinal,
    subject: presentId('evidenceSubject', 'sha256:cand'),
    requirement: presentId('requirement', 'sha256:req'),
    context: { present: true, intact: true, world: presentId('world', 'uid-1') },
    executedVerifier: presentId('verifierExecuted', 'sha256:ver'),
    executions: CHECKS.map((check) => ({ check, provenanceEstablished: true, verdict: 'PASS' as const })),
  };
}

function candidateObligation(over: Partial<CandidateObligation> = {}): CandidateObligation {
  return {
    mode: 'Candidate',
    world: presentId('world', 'uid-1'),
    currentRequirement: presentId('requirement', 'sha256:req'),
    requiredChecks: CHECKS,
    declaredVerifier: presentId('verifierDeclared', 'sha256:ver'),
    verifiersModifiedByCandidate: none,
    evaluations: [passingEvaluation()],
    ...over,
  };
}

function checkpointObligation(over: Partial<CheckpointObligation> = {}): CheckpointObligation {
  return {
    mode: 'CheckpointReturn',
    checkpoint: presentId('checkpoint', 'sha256:ckpt'),
    witness: { checkpoint: presentId('checkpoint', 'sha256:ckpt'), subject: presentId('evidenceSubject', 'sha256:cand') },
    ...over,
  };
}

/** PRIME's re-hash vouched for by the watcher: its state when the recorded walk began, and now. */
function vouched(measured: string | null, now: string | null): PrimeRehashSource {
  return { by: 'watcher', measured: measured === null ? absentId('primeObservation') : presentId('primeObservation', measured), now: now === null ? unmeasuredId('primeObservation') : presentId('primeObservation', now) };
}

function happy(over: Partial<DecisionInput> = {}): DecisionInput {
  return {
    stage: 'commit',
    candidateValid: true,
    conflicts: none,
    foreignWrites: none,
    primeGeneration: { before: presentId('primeGeneration', '4'), after: presentId('primeGeneration', '4') },
    parent: { storePrime: presentId('parent', 'gen-4'), candidateBase: presentId('parent', 'gen-4') },
    base: { primeRehash: presentId('base', 'sha256:base'), world: presentId('base', 'sha256:base') },
    primeRehashSource: vouched('w:7', 'w:7'),
    delta: { captured: presentId('delta', 'sha256:delta'), stored: presentId('delta', 'sha256:delta') },
    rootSet: { world: presentId('rootSet', 'sha256:roots'), store: presentId('rootSet', 'sha256:roots') },
    stagedRoot: { staged: presentId('stagedRoot', 'sha256:cand'), tested: presentId('stagedRoot', 'sha256:cand') },
    subject: presentId('evidenceSubject', 'sha256:cand'),
    obligation: candidateObligation(),
    ...over,
  };
}

const withEval = (over: Partial<Evaluation>): DecisionInput => happy({ obligation: candidateObligation({ evaluations: [{ ...passingEvaluation(), ...over }] }) });

// ---- one row per reason ----------------------------------------------------------------------------

const rows: { name: string; input: DecisionInput; want: Reason[] }[] = [
  { name: 'all hold (Candidate, commit)', input: happy(), want: [] },
  { name: 'all hold (Candidate, prepare: nothing staged yet)', input: happy({ stage: 'prepare', stagedRoot: { staged: absentId('stagedRoot'), tested: absentId('stagedRoot') } }), want: [] },
  { name: 'all hold (CheckpointReturn)', input: happy({ obligation: checkpointObligation() }), want: [] },
  { name: 'unknown mode', input: happy({ obligation: { mode: 'Sideways' } as unknown as CheckpointObligation }), want: ['MODE_UNKNOWN', 'IDENTITY_ABSENT_EVIDENCE_SUBJECT'] },
  { name: 'candidate invalid', input: happy({ candidateValid: false }), want: ['CANDIDATE_INVALID'] },
  { name: 'conflicts unmeasured', input: happy({ conflicts: { measured: false } }), want: ['CONFLICTS_UNMEASURED'] },
  { name: 'conflict found', input: happy({ conflicts: { measured: true, found: ['a.txt'] } }), want: ['CONFLICT'] },
  { name: 'foreign writes unmeasured', input: happy({ foreignWrites: { measured: false } }), want: ['FOREIGN_WRITES_UNMEASURED'] },
  { name: 'foreign write found', input: happy({ foreignWrites: { measured: true, found: ['b.txt'] } }), want: ['FOREIGN_WRITE'] },
  { name: 'all hold, PRIME walked for this decision', input: happy({ primeRehashSource: { by: 'walk' } }), want: [] },
  { name: 'PRIME re-hash source missing', input: happy({ primeRehashSource: undefined as unknown as PrimeRehashSource }), want: ['IDENTITY_ABSENT_PRIME_OBSERVATION'] },
  { name: 'PRIME re-hash source unknown', input: happy({ primeRehashSource: { by: 'trust-me' } as unknown as PrimeRehashSource }), want: ['IDENTITY_ABSENT_PRIME_OBSERVATION'] },
  { name: 'watcher state when the walk began not recorded', input: happy({ primeRehashSource: vouched(null, 'w:7') }), want: ['IDENTITY_ABSENT_PRIME_OBSERVATION'] },
  { name: 'watcher not observing now', input: happy({ primeRehashSource: vouched('w:7', null) }), want: ['IDENTITY_ABSENT_PRIME_OBSERVATION'] },
  { name: 'watcher saw a change or a gap since the walk', input: happy({ primeRehashSource: vouched('w:7', 'w:9') }), want: ['PRIME_OBSERVATION_GAP'] },
  { name: 'PRIME generation not observed after', input: happy({ primeGeneration: { before: presentId('primeGeneration', '4'), after: unmeasuredId('primeGeneration') } }), want: ['PRIME_GENERATION_UNOBSERVED'] },
  { name: 'PRIME moved during the decision', input: happy({ primeGeneration: { before: presentId('primeGeneration', '4'), after: presentId('primeGeneration', '5') } }), want: ['PRIME_MOVED'] },
  { name: 'parent absent', input: happy({ parent: { storePrime: presentId('parent', 'gen-4'), candidateBase: absentId('parent') } }), want: ['IDENTITY_ABSENT_PARENT'] },
  { name: 'parent both absent', input: happy({ parent: { storePrime: absentId('parent'), candidateBase: absentId('parent') } }), want: ['IDENTITY_ABSENT_PARENT'] },
  { name: 'parent differs', input: happy({ parent: { storePrime: presentId('parent', 'gen-5'), candidateBase: presentId('parent', 'gen-4') } }), want: ['IDENTITY_MISMATCH_PARENT'] },
  { name: 'evidence subject absent', input: happy({ subject: absentId('evidenceSubject') }), want: ['IDENTITY_ABSENT_EVIDENCE_SUBJECT'] },
  { name: 'evidence subject differs', input: withEval({ subject: presentId('evidenceSubject', 'sha256:other') }), want: ['IDENTITY_MISMATCH_EVIDENCE_SUBJECT'] },
  { name: 'base unmeasured', input: happy({ base: { primeRehash: unmeasuredId('base'), world: presentId('base', 'sha256:base') } }), want: ['IDENTITY_ABSENT_BASE'] },
  { name: 'base differs', input: happy({ base: { primeRehash: presentId('base', 'sha256:moved'), world: presentId('base', 'sha256:base') } }), want: ['IDENTITY_MISMATCH_BASE'] },
  { name: 'delta absent', input: happy({ delta: { captured: presentId('delta', 'sha256:delta'), stored: absentId('delta') } }), want: ['IDENTITY_ABSENT_DELTA'] },
  { name: 'delta differs', input: happy({ delta: { captured: presentId('delta', 'sha256:delta'), stored: presentId('delta', 'sha256:other') } }), want: ['IDENTITY_MISMATCH_DELTA'] },
  { name: 'root set absent', input: happy({ rootSet: { world: absentId('rootSet'), store: presentId('rootSet', 'sha256:roots') } }), want: ['IDENTITY_ABSENT_ROOT_SET'] },
  { name: 'root set differs', input: happy({ rootSet: { world: presentId('rootSet', 'sha256:one'), store: presentId('rootSet', 'sha256:two') } }), want: ['IDENTITY_MISMATCH_ROOT_SET'] },
  { name: 'staged root absent at commit', input: happy({ stagedRoot: { staged: absentId('stagedRoot'), tested: presentId('stagedRoot', 'sha256:cand') } }), want: ['IDENTITY_ABSENT_STAGED_ROOT'] },
  { name: 'staged bytes differ from tested', input: happy({ stagedRoot: { staged: presentId('stagedRoot', 'sha256:x'), tested: presentId('stagedRoot', 'sha256:cand') } }), want: ['STAGED_UNTESTED'] },
  { name: 'unknown stage is held to the commit rule', input: happy({ stage: 'later' as 'commit', stagedRoot: { staged: absentId('stagedRoot'), tested: absentId('stagedRoot') } }), want: ['IDENTITY_ABSENT_STAGED_ROOT'] },
  { name: 'no evaluation', input: happy({ obligation: candidateObligation({ evaluations: [] }) }), want: ['IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'EVIDENCE_MISSING'] },
  { name: 'two newest evaluations tie', input: happy({ obligation: candidateObligation({ evaluations: [passingEvaluation(3), passingEvaluation(3)] }) }), want: ['IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'EVIDENCE_AMBIGUOUS'] },
  { name: 'requirement absent', input: withEval({ requirement: absentId('requirement') }), want: ['IDENTITY_ABSENT_REQUIREMENT'] },
  { name: 'requirement stale', input: withEval({ requirement: presentId('requirement', 'sha256:old') }), want: ['EVIDENCE_STALE'] },
  { name: 'context missing', input: withEval({ context: { present: false } }), want: ['EVIDENCE_CONTEXT_MISSING'] },
  { name: 'context corrupt', input: withEval({ context: { present: true, intact: false, world: presentId('world', 'uid-1') } }), want: ['EVIDENCE_CONTEXT_INVALID'] },
  { name: 'context from another world', input: withEval({ context: { present: true, intact: true, world: presentId('world', 'uid-2') } }), want: ['EVIDENCE_CONTEXT_INVALID'] },
  { name: 'context names no world', input: withEval({ context: { present: true, intact: true, world: absentId('world') } }), want: ['EVIDENCE_CONTEXT_INVALID'] },
  { name: 'a required check has no execution', input: withEval({ executions: [{ check: 'unit', provenanceEstablished: true, verdict: 'PASS' }] }), want: ['EXECUTION_EVIDENCE_INCOMPLETE'] },
  { name: 'an execution without established provenance', input: withEval({ executions: [{ check: 'unit', provenanceEstablished: true, verdict: 'PASS' }, { check: 'lint', provenanceEstablished: false, verdict: 'PASS' }] }), want: ['EXECUTION_EVIDENCE_INCOMPLETE'] },
  { name: 'executed verifier absent', input: withEval({ executedVerifier: absentId('verifierExecuted') }), want: ['IDENTITY_ABSENT_VERIFIER'] },
  { name: 'executed verifier differs from declared', input: withEval({ executedVerifier: presentId('verifierExecuted', 'sha256:candidate-copy') }), want: ['VERIFIER_EXECUTION_IDENTITY_MISMATCH'] },
  { name: 'verifier modification unmeasured', input: happy({ obligation: candidateObligation({ verifiersModifiedByCandidate: { measured: false } }) }), want: ['VERIFIER_MODIFICATION_UNMEASURED'] },
  { name: 'candidate modified a bound verifier', input: happy({ obligation: candidateObligation({ verifiersModifiedByCandidate: { measured: true, found: ['test/run.sh'] } }) }), want: ['VERIFIER_MODIFIED_BY_CANDIDATE'] },
  { name: 'a check failed', input: withEval({ executions: [{ check: 'unit', provenanceEstablished: true, verdict: 'FAIL' }, { check: 'lint', provenanceEstablished: true, verdict: 'PASS' }] }), want: ['CHECK_NOT_PASSED'] },
  { name: 'a check was refused', input: withEval({ executions: [{ check: 'unit', provenanceEstablished: true, verdict: 'PASS' }, { check: 'lint', provenanceEstablished: true, verdict: 'REFUSED' }] }), want: ['CHECK_NOT_PASSED'] },
  { name: 'checkpoint witness missing', input: happy({ obligation: checkpointObligation({ witness: null }) }), want: ['IDENTITY_ABSENT_EVIDENCE_SUBJECT', 'CHECKPOINT_WITNESS_MISSING'] },
  { name: 'checkpoint absent', input: happy({ obligation: checkpointObligation({ checkpoint: absentId('checkpoint') }) }), want: ['IDENTITY_ABSENT_CHECKPOINT'] },
  { name: 'checkpoint witness differs', input: happy({ obligation: checkpointObligation({ checkpoint: presentId('checkpoint', 'sha256:other') }) }), want: ['CHECKPOINT_WITNESS_MISMATCH'] },
];

test('decide: one row per reason, plus the paths where everything holds', async (t) => {
  for (const row of rows) {
    await t.test(row.name, () => {
      const d = decide(row.input);
      assert.deepEqual(d, { authorized: row.want.length === 0, reasons: row.want });
    });
  }
  const covered = new Set(rows.flatMap((r) => r.want));
  assert.deepEqual(REASONS.filter((r) => !covered.has(r)), [], 'every reason has a row');
});

test('decide: several failures are all reported, once each, in canonical order', () => {
  const d = decide(
    happy({
      candidateValid: false,
      conflicts: { measured: true, found: ['x', 'y'] },
      stagedRoot: { staged: presentId('stagedRoot', 'a'), tested: presentId('stagedRoot', 'b') },
      obligation: candidateObligation({ evaluations: [{ ...passingEvaluation(), requirement: presentId('requirement', 'old') }] }),
    }),
  );
  assert.deepEqual(d.reasons, ['CANDIDATE_INVALID', 'CONFLICT', 'STAGED_UNTESTED', 'EVIDENCE_STALE']);
});

// ---- property: Authorized <=> every condition holds ------------------------------------------------

/** Mostly the value that holds, sometimes anything: so both outcomes are common. */
function mostly<T>(holds: fc.Arbitrary<T>, anything: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: holds, weight: 12 }, { arbitrary: anything, weight: 1 });
}

function idArb<K extends string>(kind: K, values: readonly string[]): fc.Arbitrary<Id<K>> {
  return fc.oneof(fc.constantFrom(...values).map((v) => presentId(kind, v)), fc.constant(absentId(kind)), fc.constant(unmeasuredId(kind)));
}

function pairArb<K extends string>(kind: K): fc.Arbitrary<[Id<K>, Id<K>]> {
  const any = fc.tuple(idArb(kind, ['a', 'b']), idArb(kind, ['a', 'b']));
  return mostly(fc.constant<[Id<K>, Id<K>]>([presentId(kind, 'a'), presentId(kind, 'a')]), any);
}

const measurementArb: fc.Arbitrary<Measurement> = mostly(
  fc.constant(none),
  fc.oneof(fc.constant<Measurement>({ measured: false }), fc.constant(none), fc.constant<Measurement>({ measured: true, found: ['p'] })),
);

const executionArb: fc.Arbitrary<ExecutionRecord> = fc.record({
  check: fc.constantFrom('unit', 'lint', 'e2e'),
  provenanceEstablished: mostly(fc.constant(true), fc.boolean()),
  verdict: mostly(fc.constant('PASS' as const), fc.constantFrom('PASS' as const, 'FAIL' as const, 'REFUSED' as const)),
});

const contextArb: fc.Arbitrary<EvidenceContext> = mostly(
  fc.constant<EvidenceContext>({ present: true, intact: true, world: presentId('world', 'a') }),
  fc.oneof(fc.constant<EvidenceContext>({ present: false }), fc.record({ present: fc.constant(true as const), intact: fc.boolean(), world: idArb('world', ['a', 'b']) })),
);

const evaluationArb: fc.Arbitrary<Evaluation> = fc.record({
  ordinal: fc.integer({ min: 0, max: 6 }),
  subject: mostly(fc.constant(presentId('evidenceSubject', 'a')), idArb('evidenceSubject', ['a', 'b'])),
  requirement: mostly(fc.constant(presentId('requirement', 'a')), idArb('requirement', ['a', 'b'])),
  context: contextArb,
  executedVerifier: mostly(fc.constant(presentId('verifierExecuted', 'a')), idArb('verifierExecuted', ['a', 'b'])),
  executions: mostly(
    fc.constant(['unit', 'lint', 'e2e'].map((check) => ({ check, provenanceEstablished: true, verdict: 'PASS' as const }))),
    fc.array(executionArb, { maxLength: 4 }),
  ),
});

const candidateArb: fc.Arbitrary<CandidateObligation> = fc.record({
  mode: fc.constant('Candidate' as const),
  world: mostly(fc.constant(presentId('world', 'a')), idArb('world', ['a', 'b'])),
  currentRequirement: mostly(fc.constant(presentId('requirement', 'a')), idArb('requirement', ['a', 'b'])),
  requiredChecks: fc.subarray(['unit', 'lint', 'e2e']),
  declaredVerifier: mostly(fc.constant(presentId('verifierDeclared', 'a')), idArb('verifierDeclared', ['a', 'b'])),
  verifiersModifiedByCandidate: measurementArb,
  evaluations: fc.array(evaluationArb, { minLength: 0, maxLength: 4 }),
});

const checkpointArb: fc.Arbitrary<CheckpointObligation> = fc.record({
  mode: fc.constant('CheckpointReturn' as const),
  checkpoint: mostly(fc.constant(presentId('checkpoint', 'a')), idArb('checkpoint', ['a', 'b'])),
  witness: mostly(
    fc.constant({ checkpoint: presentId('checkpoint', 'a'), subject: presentId('evidenceSubject', 'a') }),
    fc.option(fc.record({ checkpoint: idArb('checkpoint', ['a', 'b']), subject: idArb('evidenceSubject', ['a', 'b']) })),
  ),
});

const inputArb: fc.Arbitrary<DecisionInput> = fc
  .record({
    stage: fc.constantFrom('prepare' as const, 'commit' as const),
    candidateValid: mostly(fc.constant(true), fc.boolean()),
    conflicts: measurementArb,
    foreignWrites: measurementArb,
    generation: pairArb('primeGeneration'),
    parent: pairArb('parent'),
    base: pairArb('base'),
    source: mostly(
      fc.oneof(fc.constant<PrimeRehashSource>({ by: 'walk' }), pairArb('primeObservation').map(([measured, now]): PrimeRehashSource => ({ by: 'watcher', measured, now }))),
      fc.oneof(
        fc.constant(undefined as unknown as PrimeRehashSource),
        fc.constant({ by: 'cached' } as unknown as PrimeRehashSource),
        fc.tuple(idArb('primeObservation', ['a', 'b']), idArb('primeObservation', ['a', 'b'])).map(([measured, now]): PrimeRehashSource => ({ by: 'watcher', measured, now })),
      ),
    ),
    delta: pairArb('delta'),
    rootSet: pairArb('rootSet'),
    stagedRoot: pairArb('stagedRoot'),
    subject: mostly(fc.constant(presentId('evidenceSubject', 'a')), idArb('evidenceSubject', ['a', 'b'])),
    obligation: fc.oneof(candidateArb, checkpointArb),
  })
  .map((g) => ({
    stage: g.stage,
    candidateValid: g.candidateValid,
    conflicts: g.conflicts,
    foreignWrites: g.foreignWrites,
    primeGeneration: { before: g.generation[0], after: g.generation[1] },
    parent: { storePrime: g.parent[0], candidateBase: g.parent[1] },
    base: { primeRehash: g.base[0], world: g.base[1] },
    primeRehashSource: g.source,
    delta: { captured: g.delta[0], stored: g.delta[1] },
    rootSet: { world: g.rootSet[0], store: g.rootSet[1] },
    stagedRoot: { staged: g.stagedRoot[0], tested: g.stagedRoot[1] },
    subject: g.subject,
    obligation: g.obligation,
  }));

// An independent statement of the conditions, written without the decision's helpers.
const same = (a: Id<string>, b: Id<string>): boolean => a.present && b.present && a.value === b.value;
const clean = (m: Measurement): boolean => m.measured && m.found.length === 0;

function newestAlone(evaluations: readonly Evaluation[]): Evaluation | undefined {
  const top = Math.max(...evaluations.map((e) => e.ordinal));
  const newest = evaluations.filter((e) => e.ordinal === top);
  return newest.length === 1 ? newest[0] : undefined;
}

function obligationHolds(input: DecisionInput): boolean {
  const o = input.obligation;
  if (o.mode === 'CheckpointReturn') return o.witness !== null && same(o.witness.subject, input.subject) && same(o.checkpoint, o.witness.checkpoint);
  const e = newestAlone(o.evaluations);
  if (e === undefined) return false;
  return (
    same(e.subject, input.subject) &&
    same(e.requirement, o.currentRequirement) &&
    e.context.present &&
    e.context.intact &&
    same(e.context.world, o.world) &&
    o.requiredChecks.every((c) => e.executions.some((x) => x.check === c && x.provenanceEstablished)) &&
    same(o.declaredVerifier, e.executedVerifier) &&
    clean(o.verifiersModifiedByCandidate) &&
    e.executions.every((x) => x.verdict === 'PASS')
  );
}

function allHold(input: DecisionInput): boolean {
  return (
    input.candidateValid &&
    clean(input.conflicts) &&
    clean(input.foreignWrites) &&
    same(input.primeGeneration.before, input.primeGeneration.after) &&
    same(input.parent.storePrime, input.parent.candidateBase) &&
    same(input.base.primeRehash, input.base.world) &&
    (input.primeRehashSource?.by === 'walk' || (input.primeRehashSource?.by === 'watcher' && same(input.primeRehashSource.measured, input.primeRehashSource.now))) &&
    same(input.delta.captured, input.delta.stored) &&
    same(input.rootSet.world, input.rootSet.store) &&
    (input.stage === 'prepare' || same(input.stagedRoot.staged, input.stagedRoot.tested)) &&
    obligationHolds(input)
  );
}

test('decide (property): Authorized exactly when every condition holds; reasons empty exactly then', () => {
  let authorized = 0;
  let refused = 0;
  fc.assert(
    fc.property(inputArb, (input) => {
      const d = decide(input);
      assert.equal(d.authorized, allHold(input));
      assert.equal(d.reasons.length === 0, d.authorized);
      const positions = d.reasons.map((r) => REASONS.indexOf(r));
      assert.ok(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!)), `canonical, unique: ${d.reasons.join(',')}`);
      if (d.authorized) authorized++;
      else refused++;
    }),
    { numRuns: 20_000 },
  );
  assert.ok(authorized > 200 && refused > 200, `both outcomes exercised (${authorized} authorized, ${refused} refused)`);
});

test('decide (property): an absent or unmeasured identity on either side of any pair is never Authorized', () => {
  const missing = fc.constantFrom('absent' as const, 'unmeasured' as const);
  const pairs = ['parent', 'base', 'delta', 'rootSet', 'stagedRoot', 'generation', 'primeObservation'] as const;
  fc.assert(
    fc.property(fc.constantFrom(...pairs), fc.boolean(), missing, (pair, left, why) => {
      const input = structuredClone(happy()) as { -readonly [K in keyof DecisionInput]: DecisionInput[K] };
      const gone = <K extends string>(kind: K): Id<K> => (why === 'absent' ? absentId(kind) : unmeasuredId(kind));
      if (pair === 'parent') input.parent = left ? { ...input.parent, storePrime: gone('parent') } : { ...input.parent, candidateBase: gone('parent') };
      if (pair === 'base') input.base = left ? { ...input.base, primeRehash: gone('base') } : { ...input.base, world: gone('base') };
      if (pair === 'delta') input.delta = left ? { ...input.delta, captured: gone('delta') } : { ...input.delta, stored: gone('delta') };
      if (pair === 'rootSet') input.rootSet = left ? { ...input.rootSet, world: gone('rootSet') } : { ...input.rootSet, store: gone('rootSet') };
      if (pair === 'stagedRoot') input.stagedRoot = left ? { ...input.stagedRoot, staged: gone('stagedRoot') } : { ...input.stagedRoot, tested: gone('stagedRoot') };
      if (pair === 'primeObservation') input.primeRehashSource = left ? { by: 'watcher', measured: gone('primeObservation'), now: presentId('primeObservation', 'w:7') } : { by: 'watcher', measured: presentId('primeObservation', 'w:7'), now: gone('primeObservation') };
      if (pair === 'generation') input.primeGeneration = left ? { ...input.primeGeneration, before: gone('primeGeneration') } : { ...input.primeGeneration, after: gone('primeGeneration') };
      assert.equal(decide(input).authorized, false);
    }),
  );
});

// ---- effective evaluation -------------------------------------------------------------------------

const distinctOrdinals = fc.uniqueArray(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 8 });

test('effectiveEvaluation (property): the newest speaks, whatever order the list is in', () => {
  fc.assert(
    fc.property(distinctOrdinals, (ordinals) => {
      const evals = ordinals.map((o) => passingEvaluation(o));
      const r = effectiveEvaluation(evals);
      assert.equal(r.speaks?.ordinal, Math.max(...ordinals));
      assert.equal(effectiveEvaluation([...evals].reverse()).speaks?.ordinal, Math.max(...ordinals));
    }),
  );
  assert.deepEqual(effectiveEvaluation([]), { speaks: null, why: 'none' });
  assert.deepEqual(effectiveEvaluation([passingEvaluation(2), passingEvaluation(2), passingEvaluation(1)]), { speaks: null, why: 'ambiguous' });
  assert.deepEqual(effectiveEvaluation([passingEvaluation(NaN)]), { speaks: null, why: 'ambiguous' });
});

test('effectiveEvaluation (property): a FAIL after any number of PASSes revokes them', () => {
  fc.assert(
    fc.property(distinctOrdinals, fc.constantFrom('FAIL' as const, 'REFUSED' as const), (ordinals, verdict) => {
      const passes = ordinals.map((o) => passingEvaluation(o));
      const before = decide(happy({ obligation: candidateObligation({ evaluations: passes }) }));
      assert.equal(before.authorized, true);
      const failing: Evaluation = {
        ...passingEvaluation(Math.max(...ordinals) + 1),
        executions: CHECKS.map((check) => ({ check, provenanceEstablished: true, verdict })),
      };
      const after = decide(happy({ obligation: candidateObligation({ evaluations: [...passes, failing] }) }));
      assert.deepEqual(after, { authorized: false, reasons: ['CHECK_NOT_PASSED'] });
    }),
  );
});

test('effectiveEvaluation (property): a superseded evaluation never regains authority', () => {
  fc.assert(
    fc.property(distinctOrdinals, fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 6 }), (ordinals, older) => {
      // The newest is stale; older fresh PASSes, however many are added, never speak over it.
      const top = Math.max(...ordinals);
      const stale: Evaluation = { ...passingEvaluation(top + 1), requirement: presentId('requirement', 'sha256:old') };
      const fresh = [...ordinals, ...older.map((o) => o % (top + 1))].map((o) => passingEvaluation(o));
      const d = decide(happy({ obligation: candidateObligation({ evaluations: [...fresh, stale] }) }));
      assert.deepEqual(d, { authorized: false, reasons: ['EVIDENCE_STALE'] });
      assert.equal(effectiveEvaluation([stale, ...fresh]).speaks, stale);
    }),
  );
});
