import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson } from '../../core/canonical-json.js';
import {
  canonicalControls,
  evaluate,
  identityOf,
  INTRINSIC_CONTROLS,
  ISOLATION_CONTROLS,
  ISOLATION_LEVELS,
  ISOLATION_OUTCOMES,
  ISOLATION_REASONS,
  ISOLATION_STAGES,
  IsolationRecomputationError,
  levelAtLeast,
  maxLevel,
  parseRecord,
  requireExactRecomputation,
  type IsolationControl,
  type IsolationDecision,
  type IsolationObservation,
  type IsolationPolicy,
  type IsolationRequest,
  type IsolationTarget,
  type StageRule,
} from '../../core/isolation/index.js';
import { OTHER, SUBJECT, otherDigest } from './core-isolation-fixtures.js';

const NUM_RUNS = 500;

const level = fc.constantFrom(...ISOLATION_LEVELS);
const controls = fc.subarray<IsolationControl>([...ISOLATION_CONTROLS]);
const target: fc.Arbitrary<IsolationTarget> = fc.record({ os: fc.constantFrom('linux' as const, 'darwin' as const), arch: fc.constantFrom('amd64' as const, 'arm64' as const) });
/** Mostly true, so that generated inputs reach deep into the evaluation. */
const usually = fc.constantFrom(true, true, true, true, false);

const stageRule = (stage: StageRule['stage']) =>
  fc.record({
    stage: fc.constant(stage),
    minimumLevel: level,
    requiredControls: fc.oneof(controls, fc.constant<StageRule['requiredControls']>(['network-denied'])),
    allowHostYolo: fc.boolean(),
  });

const policyArb: fc.Arbitrary<IsolationPolicy> = fc
  .subarray([...ISOLATION_STAGES], { minLength: 0 })
  .chain((stages) => fc.tuple(...stages.map(stageRule)))
  .map((stages) => ({ schemaVersion: 1 as const, kind: 'IsolationPolicy' as const, stages }));

const requestArb: fc.Arbitrary<IsolationRequest> = fc.record({
  schemaVersion: fc.constant(1 as const),
  kind: fc.constant('IsolationRequest' as const),
  stage: fc.constantFrom(...ISOLATION_STAGES),
  subject: fc.constantFrom(SUBJECT, OTHER),
  target,
  requestedMinimum: level,
  extraControls: fc.oneof(fc.constant<IsolationControl[]>([]), controls),
  hostYoloAcknowledged: fc.boolean(),
});

/** An observation that is usually bound to the request and policy and usually reports what they require. */
function observationArb(p: IsolationPolicy, r: IsolationRequest): fc.Arbitrary<IsolationObservation> {
  const rule = p.stages.find((s) => s.stage === r.stage);
  const effective = maxLevel(r.requestedMinimum, rule?.minimumLevel ?? 'host-yolo');
  const required = canonicalControls([...(rule?.requiredControls ?? []), ...r.extraControls, ...INTRINSIC_CONTROLS[effective]]);
  return fc
    .record({
      bindRequest: usually,
      bindPolicy: usually,
      sameSubject: usually,
      otherTarget: fc.option(target, { freq: 4 }),
      achievedLevel: fc.oneof(fc.constant(effective), level),
      drop: fc.oneof(fc.constant<IsolationControl[]>([]), fc.subarray<IsolationControl>([...ISOLATION_CONTROLS], { maxLength: 2 })),
      add: fc.oneof(fc.constant<IsolationControl[]>([]), controls),
      complete: usually,
    })
    .map((f) => {
      const claimed = canonicalControls([...required, ...INTRINSIC_CONTROLS[f.achievedLevel], ...f.add]).filter((c) => !f.drop.includes(c));
      return {
        schemaVersion: 1 as const,
        kind: 'IsolationObservation' as const,
        backend: 'prop-backend',
        backendVersion: '1',
        executionId: 'exec-prop',
        requestIdentity: f.bindRequest ? identityOf(r) : otherDigest('request'),
        policyIdentity: f.bindPolicy ? identityOf(p) : otherDigest('policy'),
        subject: f.sameSubject ? r.subject : r.subject === SUBJECT ? OTHER : SUBJECT,
        target: f.otherTarget ?? { ...r.target },
        achievedLevel: f.achievedLevel,
        enforcedControls: claimed,
        complete: f.complete,
      };
    });
}

interface Scenario {
  p: IsolationPolicy;
  r: IsolationRequest;
  o: IsolationObservation | undefined;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .tuple(policyArb, requestArb)
  .chain(([p, r]) => fc.option(observationArb(p, r), { nil: undefined, freq: 8 }).map((o) => ({ p, r, o })));

/** A host-yolo scenario in which everything local permits it: policy allows, request acknowledges, backend reports host-yolo. */
const hostYoloArb: fc.Arbitrary<Scenario> = fc
  .tuple(policyArb, requestArb, fc.boolean())
  .map(([p, r, noControls]) => {
    const stages = p.stages.map((s) => (s.stage === r.stage ? { ...s, minimumLevel: 'host-yolo' as const, allowHostYolo: true, requiredControls: noControls ? [] : s.requiredControls } : s));
    const hasRule = stages.some((s) => s.stage === r.stage);
    const added: StageRule = { stage: r.stage, minimumLevel: 'host-yolo', requiredControls: [], allowHostYolo: true };
    const p2: IsolationPolicy = { ...p, stages: hasRule ? stages : [...stages, added].sort((a, b) => ISOLATION_STAGES.indexOf(a.stage) - ISOLATION_STAGES.indexOf(b.stage)) };
    const r2: IsolationRequest = { ...r, requestedMinimum: 'host-yolo', hostYoloAcknowledged: true, extraControls: noControls ? [] : r.extraControls };
    return { p: p2, r: r2 };
  })
  .chain(({ p, r }) => observationArb(p, r).map((o) => ({ p, r, o: { ...o, achievedLevel: 'host-yolo' as const, enforcedControls: [] } })));

const missingAny = (o: IsolationObservation, wanted: readonly string[]): boolean => wanted.some((c) => !(o.enforcedControls as string[]).includes(c));

test('the generators reach every outcome, including reported-sufficient', () => {
  const outcomes = new Set(fc.sample(scenarioArb, { numRuns: 3000, seed: 42 }).map((s) => evaluate(s.p, s.r, s.o).outcome));
  assert.deepEqual([...outcomes].sort(), [...ISOLATION_OUTCOMES].sort());
});

test('(a) evaluate is deterministic: equal inputs give deep-equal decisions with a stable identity', () => {
  fc.assert(
    fc.property(scenarioArb, ({ p, r, o }) => {
      const d1 = evaluate(p, r, o);
      const d2 = evaluate(structuredClone(p), structuredClone(r), o === undefined ? undefined : structuredClone(o));
      assert.deepEqual(d2, d1);
      assert.equal(identityOf(d2), identityOf(d1));
      const parsed = parseRecord('IsolationDecision', JSON.parse(canonicalJson(d1)));
      assert.ok(parsed.ok, parsed.ok ? '' : JSON.stringify(parsed.problems));
    }),
    { numRuns: NUM_RUNS },
  );
});

test('(b) an observation missing an intrinsic or required control is never reported-sufficient', () => {
  fc.assert(
    fc.property(scenarioArb, ({ p, r, o }) => {
      if (o === undefined) return;
      const rule = p.stages.find((s) => s.stage === r.stage);
      const effective = maxLevel(r.requestedMinimum, rule?.minimumLevel ?? r.requestedMinimum);
      const required = [...(rule?.requiredControls ?? []), ...r.extraControls, ...INTRINSIC_CONTROLS[effective]];
      if (missingAny(o, INTRINSIC_CONTROLS[o.achievedLevel]) || missingAny(o, required)) {
        assert.notEqual(evaluate(p, r, o).outcome, 'reported-sufficient');
      }
    }),
    { numRuns: NUM_RUNS },
  );
});

test('(c) reported-sufficient implies level, controls, completeness and every binding hold', () => {
  fc.assert(
    fc.property(scenarioArb, ({ p, r, o }) => {
      const d = evaluate(p, r, o);
      if (d.outcome !== 'reported-sufficient') return;
      assert.ok(o !== undefined);
      const rule = p.stages.find((s) => s.stage === r.stage);
      assert.ok(rule !== undefined);
      assert.equal(d.effectiveMinimum, maxLevel(r.requestedMinimum, rule.minimumLevel));
      assert.ok(levelAtLeast(o.achievedLevel, d.effectiveMinimum));
      for (const c of [...rule.requiredControls, ...r.extraControls, ...INTRINSIC_CONTROLS[d.effectiveMinimum], ...INTRINSIC_CONTROLS[o.achievedLevel]]) {
        assert.ok(o.enforcedControls.includes(c), `missing ${c}`);
      }
      assert.ok(rule.requiredControls.includes('network-denied') || rule.requiredControls.includes('network-egress-restricted'));
      assert.equal(o.complete, true);
      assert.equal(o.requestIdentity, identityOf(r));
      assert.equal(o.policyIdentity, identityOf(p));
      assert.equal(o.subject, r.subject);
      assert.equal(canonicalJson(o.target), canonicalJson(r.target));
      assert.deepEqual(d.reasons, []);
      assert.deepEqual(d.missingControls, []);
      assert.equal(d.observationIdentity, identityOf(o));
    }),
    { numRuns: NUM_RUNS },
  );
});

test('(d) host-yolo is never reported-sufficient, however permitted', () => {
  const check = ({ p, r, o }: Scenario): void => {
    const d = evaluate(p, r, o);
    if (o?.achievedLevel === 'host-yolo' || d.effectiveMinimum === 'host-yolo') assert.notEqual(d.outcome, 'reported-sufficient');
    // An unconfigured stage is unsupported and says only that; otherwise a host-yolo report always says it was reported only.
    if (o?.achievedLevel === 'host-yolo' && !d.reasons.includes('STAGE_NOT_CONFIGURED')) assert.ok(d.reasons.includes('HOST_YOLO_REPORTED_ONLY'));
  };
  fc.assert(fc.property(scenarioArb, check), { numRuns: NUM_RUNS });
  fc.assert(fc.property(hostYoloArb, check), { numRuns: NUM_RUNS });
});

// ---- (e) exact recomputation -------------------------------------------------------------------------------

type Field = keyof IsolationDecision;
const FIELDS: Field[] = [
  'schemaVersion',
  'kind',
  'requestIdentity',
  'policyIdentity',
  'observationIdentity',
  'outcome',
  'reasons',
  'effectiveMinimum',
  'requiredControls',
  'missingControls',
  'authority',
];

/** Every way to change one field of `d` to a different value (or to remove it). */
function mutations(d: IsolationDecision, field: Field): unknown[] {
  const toggle = <T>(list: readonly T[], x: T): T[] => (list.includes(x) ? list.filter((y) => y !== x) : [...list, x]);
  const remove = undefined;
  switch (field) {
    case 'schemaVersion':
      return [2, 0, '1', remove];
    case 'kind':
      return ['IsolationRequest', 'isolationdecision', remove];
    case 'requestIdentity':
    case 'policyIdentity':
      return [otherDigest(field), d[field].toUpperCase(), remove];
    case 'observationIdentity':
      return [d.observationIdentity === null ? otherDigest('o') : null, otherDigest('o2'), remove];
    case 'outcome':
      return [...ISOLATION_OUTCOMES.filter((o) => o !== d.outcome), remove];
    case 'reasons':
      return [toggle(d.reasons, 'CONTROLS_MISSING'), toggle(d.reasons, 'HOST_YOLO_REPORTED_ONLY'), [...ISOLATION_REASONS], [...d.reasons].reverse().concat(d.reasons.length > 1 ? [] : ['TARGET_MISMATCH']), remove];
    case 'effectiveMinimum':
      return [...ISOLATION_LEVELS.filter((l) => l !== d.effectiveMinimum), remove];
    case 'requiredControls':
    case 'missingControls':
      return [toggle(d[field], 'no-devices'), toggle(d[field], 'network-egress-restricted'), [...d[field], ...d[field].slice(0, 1), 'output-limit'], remove];
    case 'authority':
      return ['authenticated', '', remove];
  }
}

test('(e) requireExactRecomputation accepts the real decision and rejects any single-field mutation', () => {
  fc.assert(
    fc.property(scenarioArb, fc.constantFrom(...FIELDS), fc.nat(), ({ p, r, o }, field, pick) => {
      const d = evaluate(p, r, o);
      assert.deepEqual(requireExactRecomputation(structuredClone(d), p, r, o), d);
      const options = mutations(d, field);
      const value = options[pick % options.length];
      const mutated: Record<string, unknown> = { ...d };
      if (value === undefined) delete mutated[field];
      else mutated[field] = value;
      assert.throws(
        () => requireExactRecomputation(mutated as IsolationDecision, p, r, o),
        (e: unknown) => e instanceof IsolationRecomputationError && e.field === field,
      );
    }),
    { numRuns: NUM_RUNS },
  );
});

test('(e) an added field or a substituted input is named', () => {
  fc.assert(
    fc.property(scenarioArb, requestArb, ({ p, r, o }, r2) => {
      const d = evaluate(p, r, o);
      assert.throws(
        () => requireExactRecomputation({ ...d, trusted: true } as IsolationDecision, p, r, o),
        (e: unknown) => e instanceof IsolationRecomputationError && e.field === 'trusted',
      );
      const otherPolicy: IsolationPolicy = { ...p, stages: p.stages.length > 0 ? p.stages.slice(1) : [{ stage: 'agent', minimumLevel: 'vm-isolated', requiredControls: [], allowHostYolo: false }] };
      assert.throws(() => requireExactRecomputation(d, otherPolicy, r, o), (e: unknown) => e instanceof IsolationRecomputationError && e.field === 'policyIdentity');
      if (identityOf(r2) !== identityOf(r)) {
        assert.throws(() => requireExactRecomputation(d, p, r2, o), (e: unknown) => e instanceof IsolationRecomputationError && e.field === 'requestIdentity');
      }
      const o2 = o === undefined ? { schemaVersion: 1, kind: 'IsolationObservation', backend: 'b', backendVersion: '1', executionId: 'x', requestIdentity: identityOf(r), policyIdentity: identityOf(p), subject: r.subject, target: r.target, achievedLevel: 'vm-isolated', enforcedControls: [], complete: true } as IsolationObservation : undefined;
      assert.throws(() => requireExactRecomputation(d, p, r, o2), (e: unknown) => e instanceof IsolationRecomputationError && e.field === 'observationIdentity');
    }),
    { numRuns: 200 },
  );
});
