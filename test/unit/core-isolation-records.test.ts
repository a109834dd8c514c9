import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  evaluate,
  isolationJsonSchemas,
  ISOLATION_RECORD_KINDS,
  parseRecord,
  requireRecord,
  IsolationRecordError,
  type IsolationRecordKind,
  type RecordProblemCode,
} from '../../core/isolation/index.js';
import { observation, policy, request, rule } from './core-isolation-fixtures.js';

const p = policy();
const r = request();
const o = observation(p, r);
const d = evaluate(p, r, o);
const valid: Record<IsolationRecordKind, unknown> = { IsolationPolicy: p, IsolationRequest: r, IsolationObservation: o, IsolationDecision: d };
const json = (v: unknown): any => JSON.parse(JSON.stringify(v));

test('well-formed records parse, through a JSON round trip, to equal values', () => {
  for (const kind of ISOLATION_RECORD_KINDS) {
    const parsed = parseRecord(kind, json(valid[kind]));
    assert.ok(parsed.ok, `${kind}: ${parsed.ok ? '' : JSON.stringify(parsed.problems)}`);
    assert.deepEqual(parsed.value, valid[kind]);
  }
});

interface Case {
  name: string;
  kind: IsolationRecordKind;
  mutate: (v: any) => void;
  code: RecordProblemCode;
  path: string;
  /** A fragment the problem message must contain (naming the offending element). */
  mentions?: string;
}

const cases: Case[] = [
  { name: 'unknown top-level field', kind: 'IsolationObservation', mutate: (v) => (v.attested = true), code: 'UNKNOWN_FIELD', path: '$.attested', mentions: 'attested' },
  { name: 'unknown nested field', kind: 'IsolationRequest', mutate: (v) => (v.target.variant = 'v8'), code: 'UNKNOWN_FIELD', path: '$.target.variant' },
  { name: 'unknown field in a stage rule', kind: 'IsolationPolicy', mutate: (v) => (v.stages[0].network = 'open'), code: 'UNKNOWN_FIELD', path: '$.stages[0].network' },
  { name: 'unknown field in a decision', kind: 'IsolationDecision', mutate: (v) => (v.authorized = true), code: 'UNKNOWN_FIELD', path: '$.authorized' },
  { name: 'unknown level', kind: 'IsolationObservation', mutate: (v) => (v.achievedLevel = 'container'), code: 'UNKNOWN_ENUM_VALUE', path: '$.achievedLevel', mentions: 'container' },
  { name: 'unknown control', kind: 'IsolationRequest', mutate: (v) => (v.extraControls = ['seccomp']), code: 'UNKNOWN_ENUM_VALUE', path: '$.extraControls[0]', mentions: 'seccomp' },
  { name: 'unknown stage', kind: 'IsolationPolicy', mutate: (v) => (v.stages[1].stage = 'build'), code: 'UNKNOWN_ENUM_VALUE', path: '$.stages[1].stage' },
  { name: 'unknown os', kind: 'IsolationRequest', mutate: (v) => (v.target.os = 'plan9'), code: 'UNKNOWN_ENUM_VALUE', path: '$.target.os' },
  { name: 'unknown outcome', kind: 'IsolationDecision', mutate: (v) => (v.outcome = 'skipped'), code: 'UNKNOWN_ENUM_VALUE', path: '$.outcome' },
  { name: 'unknown reason', kind: 'IsolationDecision', mutate: (v) => (v.reasons = ['LOOKS_FINE']), code: 'UNKNOWN_ENUM_VALUE', path: '$.reasons[0]' },
  { name: 'other authority', kind: 'IsolationDecision', mutate: (v) => (v.authority = 'authenticated'), code: 'UNKNOWN_ENUM_VALUE', path: '$.authority' },
  {
    name: 'duplicate control',
    kind: 'IsolationObservation',
    mutate: (v) => v.enforcedControls.splice(2, 0, v.enforcedControls[1]),
    code: 'DUPLICATE',
    path: '$.enforcedControls[2]',
    mentions: "'separate-outputs'",
  },
  { name: 'duplicate extra control', kind: 'IsolationRequest', mutate: (v) => (v.extraControls = ['no-devices', 'no-devices']), code: 'DUPLICATE', path: '$.extraControls[1]' },
  { name: 'duplicate stage rule', kind: 'IsolationPolicy', mutate: (v) => (v.stages[1].stage = 'agent'), code: 'DUPLICATE', path: '$.stages[1].stage', mentions: "'agent'" },
  { name: 'duplicate reason', kind: 'IsolationDecision', mutate: (v) => (v.reasons = ['TARGET_MISMATCH', 'TARGET_MISMATCH']), code: 'DUPLICATE', path: '$.reasons[1]' },
  {
    name: 'non-canonical control order',
    kind: 'IsolationObservation',
    mutate: (v) => v.enforcedControls.reverse(),
    code: 'NON_CANONICAL_ORDER',
    path: '$.enforcedControls[1]',
    mentions: "'output-limit'",
  },
  { name: 'non-canonical policy control order', kind: 'IsolationPolicy', mutate: (v) => (v.stages[0].requiredControls = ['network-denied', 'no-devices']), code: 'NON_CANONICAL_ORDER', path: '$.stages[0].requiredControls[1]' },
  { name: 'non-canonical stage order', kind: 'IsolationPolicy', mutate: (v) => v.stages.reverse(), code: 'NON_CANONICAL_ORDER', path: '$.stages[1].stage', mentions: "'agent'" },
  { name: 'non-canonical reason order', kind: 'IsolationDecision', mutate: (v) => (v.reasons = ['TARGET_MISMATCH', 'SUBJECT_MISMATCH']), code: 'NON_CANONICAL_ORDER', path: '$.reasons[1]' },
  ...ISOLATION_RECORD_KINDS.map(
    (kind): Case => ({ name: `schemaVersion 2 of ${kind}`, kind, mutate: (v) => (v.schemaVersion = 2), code: 'WRONG_SCHEMA_VERSION', path: '$.schemaVersion' }),
  ),
  { name: 'schemaVersion as a string', kind: 'IsolationRequest', mutate: (v) => (v.schemaVersion = '1'), code: 'WRONG_SCHEMA_VERSION', path: '$.schemaVersion' },
  { name: 'missing schemaVersion', kind: 'IsolationPolicy', mutate: (v) => delete v.schemaVersion, code: 'MISSING_FIELD', path: '$.schemaVersion' },
  { name: 'another record kind', kind: 'IsolationObservation', mutate: (v) => (v.kind = 'IsolationAttestation'), code: 'WRONG_KIND', path: '$.kind' },
  { name: 'missing field', kind: 'IsolationObservation', mutate: (v) => delete v.complete, code: 'MISSING_FIELD', path: '$.complete' },
  { name: 'malformed digest', kind: 'IsolationRequest', mutate: (v) => (v.subject = 'sha256:ABC'), code: 'INVALID_VALUE', path: '$.subject' },
  { name: 'label with whitespace', kind: 'IsolationObservation', mutate: (v) => (v.executionId = 'exec 1'), code: 'INVALID_VALUE', path: '$.executionId' },
  {
    name: 'decision outcome inconsistent with its reasons',
    kind: 'IsolationDecision',
    mutate: (v) => (v.reasons = ['ENFORCEMENT_INCOMPLETE']),
    code: 'INCONSISTENT',
    path: '$.outcome',
  },
  { name: 'missing controls without CONTROLS_MISSING', kind: 'IsolationDecision', mutate: (v) => (v.missingControls = ['no-devices']), code: 'INCONSISTENT', path: '$.missingControls' },
  {
    name: 'required controls without those intrinsic to the effective minimum',
    kind: 'IsolationDecision',
    mutate: (v) => (v.requiredControls = ['network-denied']),
    code: 'INCONSISTENT',
    path: '$.requiredControls',
  },
  { name: 'sufficient without an observation', kind: 'IsolationDecision', mutate: (v) => (v.observationIdentity = null), code: 'INCONSISTENT', path: '$.observationIdentity' },
];

test('malformed records are refused with a named problem', async (t) => {
  for (const c of cases) {
    await t.test(c.name, () => {
      const raw = json(valid[c.kind]);
      c.mutate(raw);
      const parsed = parseRecord(c.kind, raw);
      assert.equal(parsed.ok, false);
      if (parsed.ok) return;
      const hit = parsed.problems.find((pr) => pr.code === c.code && pr.path === c.path);
      assert.ok(hit, `expected ${c.code} at ${c.path}, got ${JSON.stringify(parsed.problems)}`);
      if (c.mentions !== undefined) assert.ok(hit.message.includes(c.mentions), hit.message);
      assert.throws(() => requireRecord(c.kind, raw), (e: unknown) => e instanceof IsolationRecordError && e.kind === c.kind && e.message.includes(c.code));
    });
  }
});

test('a non-object is refused', () => {
  for (const raw of [null, 1, 'policy', []]) {
    const parsed = parseRecord('IsolationPolicy', raw);
    assert.equal(parsed.ok, false);
  }
  const parsed = parseRecord('IsolationPolicy', null);
  assert.ok(!parsed.ok && parsed.problems[0]?.code === 'NOT_AN_OBJECT');
});

test('an empty policy is well-formed (every stage is then unsupported)', () => {
  const empty = { schemaVersion: 1, kind: 'IsolationPolicy', stages: [] };
  assert.ok(parseRecord('IsolationPolicy', empty).ok);
  assert.deepEqual(evaluate(requireRecord('IsolationPolicy', empty), r, o).reasons, ['STAGE_NOT_CONFIGURED']);
  assert.ok(parseRecord('IsolationPolicy', policy(rule({ stage: 'check' }))).ok);
});

test('JSON Schemas: one closed schema per record, with identities and canonical-set hints', () => {
  const schemas = isolationJsonSchemas();
  assert.deepEqual(Object.keys(schemas), [
    'isolation-policy.schema.json',
    'isolation-request.schema.json',
    'isolation-observation.schema.json',
    'isolation-decision.schema.json',
  ]);
  const closedEverywhere = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => closedEverywhere(n, `${at}[${i}]`));
    if (typeof node !== 'object' || node === null) return;
    const n = node as Record<string, unknown>;
    if (n.type === 'object' && n.properties !== undefined) assert.equal(n.additionalProperties, false, `${at} must be closed`);
    if (n.type === 'array') assert.equal(n.uniqueItems === true || at.includes('stages'), true, `${at} must declare uniqueItems`);
    for (const [k, v] of Object.entries(n)) closedEverywhere(v, `${at}.${k}`);
  };
  for (const [file, schema] of Object.entries(schemas)) {
    assert.equal(schema.$id, `https://worldline.dev/schemas/isolation/v1/${file}`);
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.deepEqual((schema.properties as any).schemaVersion.const, 1);
    closedEverywhere(schema, file);
  }
  const decision = schemas['isolation-decision.schema.json'] as any;
  assert.equal(decision.allOf[0].if.properties.outcome.const, 'reported-sufficient');
  assert.equal(decision.properties.authority.const, 'unauthenticated-local');
});
