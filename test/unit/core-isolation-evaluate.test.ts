import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalControls,
  evaluate,
  identityOf,
  INTRINSIC_CONTROLS,
  IsolationRecordError,
  ISOLATION_REASONS,
  parseRecord,
  type IsolationControl,
  type IsolationObservation,
  type IsolationOutcome,
  type IsolationPolicy,
  type IsolationReason,
  type IsolationRequest,
} from '../../core/isolation/index.js';
import { OS_SANDBOXED_CONTROLS, OTHER, observation, policy, request, rule } from './core-isolation-fixtures.js';

interface Row {
  name: string;
  policy: IsolationPolicy;
  request: IsolationRequest;
  /** Builds the observation from the row's policy and request; undefined means none is supplied. */
  observation: ((p: IsolationPolicy, r: IsolationRequest) => IsolationObservation) | undefined;
  outcome: IsolationOutcome;
  reasons: IsolationReason[];
  missing?: IsolationControl[];
}

const PL = INTRINSIC_CONTROLS['process-limited'];
const hostYoloRule = rule({ minimumLevel: 'host-yolo', requiredControls: [], allowHostYolo: true });
const hostYoloRequest = request({ requestedMinimum: 'host-yolo', hostYoloAcknowledged: true });
const hostYoloObservation = (p: IsolationPolicy, r: IsolationRequest) => observation(p, r, { achievedLevel: 'host-yolo', enforcedControls: [] });

const rows: Row[] = [
  {
    name: 'happy path: os-sandboxed with its intrinsic controls and network-denied',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r),
    outcome: 'reported-sufficient',
    reasons: [],
  },
  {
    name: 'no rule for the stage',
    policy: policy(rule({ stage: 'check' })),
    request: request(),
    observation: (p, r) => observation(p, r),
    outcome: 'unsupported',
    reasons: ['STAGE_NOT_CONFIGURED'],
  },
  { name: 'no observation', policy: policy(), request: request(), observation: undefined, outcome: 'unsupported', reasons: ['OBSERVATION_MISSING'] },
  {
    name: 'observation for another OS',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { target: { os: 'darwin', arch: 'amd64' } }),
    outcome: 'rejected',
    reasons: ['TARGET_MISMATCH'],
  },
  {
    name: 'observation for another architecture',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { target: { os: 'linux', arch: 'arm64' } }),
    outcome: 'rejected',
    reasons: ['TARGET_MISMATCH'],
  },
  {
    name: 'observation bound to another request',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { requestIdentity: identityOf(request({ stage: 'check' })) }),
    outcome: 'rejected',
    reasons: ['REQUEST_MISMATCH'],
  },
  {
    name: 'observation bound to another policy',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { policyIdentity: identityOf(policy(rule())) }),
    outcome: 'rejected',
    reasons: ['POLICY_MISMATCH'],
  },
  {
    name: 'observation for another subject',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { subject: OTHER }),
    outcome: 'rejected',
    reasons: ['SUBJECT_MISMATCH'],
  },
  {
    name: 'enforcement did not complete',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { complete: false }),
    outcome: 'unsupported',
    reasons: ['ENFORCEMENT_INCOMPLETE'],
  },
  {
    name: 'incomplete enforcement is not judged on its partial controls',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { complete: false, achievedLevel: 'process-limited', enforcedControls: [] }),
    outcome: 'unsupported',
    reasons: ['ENFORCEMENT_INCOMPLETE'],
  },
  {
    name: 'achieved level below the policy minimum (all controls present)',
    policy: policy(),
    request: request({ requestedMinimum: 'process-limited' }),
    observation: (p, r) => observation(p, r, { achievedLevel: 'process-limited' }),
    outcome: 'rejected',
    reasons: ['LEVEL_INSUFFICIENT'],
  },
  {
    name: 'achieved level below the request minimum (policy asks less)',
    policy: policy(rule({ minimumLevel: 'process-limited' })),
    request: request({ requestedMinimum: 'vm-isolated' }),
    observation: (p, r) => observation(p, r),
    outcome: 'rejected',
    reasons: ['LEVEL_INSUFFICIENT'],
  },
  {
    name: 'policy control missing',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { enforcedControls: OS_SANDBOXED_CONTROLS.filter((c) => c !== 'network-denied') }),
    outcome: 'rejected',
    reasons: ['CONTROLS_MISSING'],
    missing: ['network-denied'],
  },
  {
    name: 'request extra control missing',
    policy: policy(),
    request: request({ extraControls: ['network-egress-restricted'] }),
    observation: (p, r) => observation(p, r),
    outcome: 'rejected',
    reasons: ['CONTROLS_MISSING'],
    missing: ['network-egress-restricted'],
  },
  {
    name: 'control intrinsic to the effective level missing',
    policy: policy(rule({ minimumLevel: 'process-limited' })),
    request: request({ requestedMinimum: 'process-limited' }),
    observation: (p, r) =>
      observation(p, r, { achievedLevel: 'process-limited', enforcedControls: ['network-denied', 'resource-limits', 'output-limit', 'process-tree-termination'] }),
    outcome: 'rejected',
    reasons: ['INTRINSIC_CONTROLS_MISSING', 'CONTROLS_MISSING'],
    missing: ['wall-time-limit'],
  },
  {
    name: 'complete observation claims a level without its intrinsic controls',
    policy: policy(rule({ minimumLevel: 'process-limited' })),
    request: request({ requestedMinimum: 'process-limited' }),
    observation: (p, r) => observation(p, r, { achievedLevel: 'os-sandboxed', enforcedControls: ['network-denied', ...PL] }),
    outcome: 'rejected',
    reasons: ['INTRINSIC_CONTROLS_MISSING'],
  },
  {
    name: 'policy requires no network disposition',
    policy: policy(rule({ requiredControls: [] })),
    request: request(),
    observation: (p, r) => observation(p, r),
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED'],
  },
  {
    name: 'network disposition supplied only by the request does not count',
    policy: policy(rule({ requiredControls: [] })),
    request: request({ extraControls: ['network-denied'] }),
    observation: (p, r) => observation(p, r),
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED'],
  },
  {
    name: 'restricted egress satisfies the network rule',
    policy: policy(rule({ requiredControls: ['network-egress-restricted'] })),
    request: request(),
    observation: (p, r) =>
      observation(p, r, { enforcedControls: canonicalControls([...INTRINSIC_CONTROLS['os-sandboxed'], 'network-egress-restricted']) }),
    outcome: 'reported-sufficient',
    reasons: [],
  },
  {
    name: 'host-yolo without policy permission',
    policy: policy(rule({ ...hostYoloRule, allowHostYolo: false })),
    request: hostYoloRequest,
    observation: hostYoloObservation,
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED', 'HOST_YOLO_NOT_PERMITTED', 'HOST_YOLO_REPORTED_ONLY'],
  },
  {
    name: 'host-yolo without request acknowledgement',
    policy: policy(hostYoloRule),
    request: request({ requestedMinimum: 'host-yolo', hostYoloAcknowledged: false }),
    observation: hostYoloObservation,
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED', 'HOST_YOLO_NOT_ACKNOWLEDGED', 'HOST_YOLO_REPORTED_ONLY'],
  },
  {
    name: 'host-yolo permission is checked before any observation exists',
    policy: policy(rule({ ...hostYoloRule, allowHostYolo: false })),
    request: request({ requestedMinimum: 'host-yolo', hostYoloAcknowledged: false }),
    observation: undefined,
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED', 'HOST_YOLO_NOT_PERMITTED', 'HOST_YOLO_NOT_ACKNOWLEDGED', 'OBSERVATION_MISSING'],
  },
  {
    name: 'host-yolo observation claiming a control',
    policy: policy(hostYoloRule),
    request: hostYoloRequest,
    observation: (p, r) => observation(p, r, { achievedLevel: 'host-yolo', enforcedControls: ['no-credentials'] }),
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED', 'HOST_YOLO_CLAIMS_CONTROL', 'HOST_YOLO_REPORTED_ONLY'],
  },
  {
    name: 'host-yolo combined with required controls is unsatisfiable',
    policy: policy(rule({ ...hostYoloRule, requiredControls: ['network-denied'] })),
    request: hostYoloRequest,
    observation: hostYoloObservation,
    outcome: 'rejected',
    reasons: ['HOST_YOLO_CONTROLS_UNSATISFIABLE', 'CONTROLS_MISSING', 'HOST_YOLO_REPORTED_ONLY'],
    missing: ['network-denied'],
  },
  {
    name: 'fully permitted and acknowledged host-yolo is reported only, never sufficient',
    policy: policy(hostYoloRule),
    request: hostYoloRequest,
    observation: hostYoloObservation,
    outcome: 'rejected',
    reasons: ['POLICY_NETWORK_UNSPECIFIED', 'HOST_YOLO_REPORTED_ONLY'],
  },
  {
    name: 'host-yolo reported against a sandboxed minimum',
    policy: policy(),
    request: request({ hostYoloAcknowledged: true }),
    observation: hostYoloObservation,
    outcome: 'rejected',
    reasons: ['LEVEL_INSUFFICIENT', 'CONTROLS_MISSING', 'HOST_YOLO_REPORTED_ONLY'],
    missing: OS_SANDBOXED_CONTROLS,
  },
  {
    name: 'a rejected reason outweighs an unsupported one',
    policy: policy(),
    request: request(),
    observation: (p, r) => observation(p, r, { complete: false, subject: OTHER }),
    outcome: 'rejected',
    reasons: ['SUBJECT_MISMATCH', 'ENFORCEMENT_INCOMPLETE'],
  },
  {
    name: 'stages do not share a rule: the check stage uses its own',
    policy: policy(rule({ minimumLevel: 'vm-isolated' }), rule({ stage: 'check' })),
    request: request({ stage: 'check' }),
    observation: (p, r) => observation(p, r),
    outcome: 'reported-sufficient',
    reasons: [],
  },
  {
    name: 'stages do not share a rule: the agent stage uses its own',
    policy: policy(rule({ minimumLevel: 'vm-isolated' }), rule({ stage: 'check' })),
    request: request({ stage: 'agent' }),
    observation: (p, r) => observation(p, r),
    outcome: 'rejected',
    reasons: ['LEVEL_INSUFFICIENT'],
  },
];

test('evaluate: one row per fail-closed case, plus the sufficient ones', async (t) => {
  for (const row of rows) {
    await t.test(row.name, () => {
      const obs = row.observation?.(row.policy, row.request);
      const d = evaluate(row.policy, row.request, obs);
      assert.equal(d.outcome, row.outcome);
      assert.deepEqual(d.reasons, row.reasons);
      assert.deepEqual(d.missingControls, row.missing ?? []);
      assert.equal(d.authority, 'unauthenticated-local');
      assert.equal(d.requestIdentity, identityOf(row.request));
      assert.equal(d.policyIdentity, identityOf(row.policy));
      assert.equal(d.observationIdentity, obs === undefined ? null : identityOf(obs));
      const parsed = parseRecord('IsolationDecision', JSON.parse(JSON.stringify(d)));
      assert.ok(parsed.ok, parsed.ok ? '' : JSON.stringify(parsed.problems));
    });
  }
});

test('every reason code is exercised by some row', () => {
  const seen = new Set(rows.flatMap((r) => r.reasons));
  assert.deepEqual(ISOLATION_REASONS.filter((r) => !seen.has(r)), []);
});

test('effective minimum and required controls are the documented unions', () => {
  const p = policy(rule({ minimumLevel: 'process-limited', requiredControls: ['network-egress-restricted'] }));
  const r = request({ requestedMinimum: 'os-sandboxed', extraControls: ['no-devices', 'network-denied'] });
  const d = evaluate(p, r, undefined);
  assert.equal(d.effectiveMinimum, 'os-sandboxed');
  assert.deepEqual(d.requiredControls, [...OS_SANDBOXED_CONTROLS.slice(0, 6), 'network-egress-restricted', ...OS_SANDBOXED_CONTROLS.slice(6)]);
});

test('an unconfigured stage still reports the request side of its requirement', () => {
  const d = evaluate(policy(rule({ stage: 'check' })), request({ requestedMinimum: 'process-limited', extraControls: ['no-devices'] }), undefined);
  assert.deepEqual(d.reasons, ['STAGE_NOT_CONFIGURED']);
  assert.equal(d.effectiveMinimum, 'process-limited');
  assert.deepEqual(d.requiredControls, ['no-devices', ...PL]);
});

test('a malformed record is refused by name, not evaluated', () => {
  const p = policy();
  const r = request();
  const bad = { ...observation(p, r), enforcedControls: ['no-devices', 'no-credentials'] } as IsolationObservation;
  assert.throws(
    () => evaluate(p, r, bad),
    (e: unknown) => e instanceof IsolationRecordError && e.kind === 'IsolationObservation' && e.problems[0]?.code === 'NON_CANONICAL_ORDER',
  );
  const extra = { ...r, trusted: true } as IsolationRequest;
  assert.throws(() => evaluate(p, extra, undefined), (e: unknown) => e instanceof IsolationRecordError && e.problems[0]?.code === 'UNKNOWN_FIELD');
  assert.throws(() => evaluate({ ...p, schemaVersion: 2 } as unknown as IsolationPolicy, r, undefined), (e: unknown) => e instanceof IsolationRecordError && e.kind === 'IsolationPolicy');
});
