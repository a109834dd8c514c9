// The closed set of reasons an isolation decision can give, in canonical order, and how they map to an
// outcome. A decision lists its reasons in this order, each once; the outcome is a function of the list.

/** Decision outcomes. None of them authorizes execution. */
export const ISOLATION_OUTCOMES = ['reported-sufficient', 'rejected', 'unsupported'] as const;
export type IsolationOutcome = (typeof ISOLATION_OUTCOMES)[number];

/** Every reason code, in canonical order (policy and request first, then the observation's binding, then its facts). */
export const ISOLATION_REASONS = [
  'STAGE_NOT_CONFIGURED',
  'POLICY_NETWORK_UNSPECIFIED',
  'HOST_YOLO_NOT_PERMITTED',
  'HOST_YOLO_NOT_ACKNOWLEDGED',
  'HOST_YOLO_CONTROLS_UNSATISFIABLE',
  'OBSERVATION_MISSING',
  'REQUEST_MISMATCH',
  'POLICY_MISMATCH',
  'SUBJECT_MISMATCH',
  'TARGET_MISMATCH',
  'ENFORCEMENT_INCOMPLETE',
  'LEVEL_INSUFFICIENT',
  'INTRINSIC_CONTROLS_MISSING',
  'CONTROLS_MISSING',
  'HOST_YOLO_CLAIMS_CONTROL',
  'HOST_YOLO_REPORTED_ONLY',
] as const;
export type IsolationReason = (typeof ISOLATION_REASONS)[number];

/**
 * The outcome each reason forces. `unsupported`: the environment did not report (or could not be asked for)
 * the contract the stage needs. `rejected`: the supplied facts or the local policy contradict the request.
 */
export const REASON_OUTCOME: Readonly<Record<IsolationReason, 'rejected' | 'unsupported'>> = {
  STAGE_NOT_CONFIGURED: 'unsupported',
  POLICY_NETWORK_UNSPECIFIED: 'rejected',
  HOST_YOLO_NOT_PERMITTED: 'rejected',
  HOST_YOLO_NOT_ACKNOWLEDGED: 'rejected',
  HOST_YOLO_CONTROLS_UNSATISFIABLE: 'rejected',
  OBSERVATION_MISSING: 'unsupported',
  REQUEST_MISMATCH: 'rejected',
  POLICY_MISMATCH: 'rejected',
  SUBJECT_MISMATCH: 'rejected',
  TARGET_MISMATCH: 'rejected',
  ENFORCEMENT_INCOMPLETE: 'unsupported',
  LEVEL_INSUFFICIENT: 'rejected',
  INTRINSIC_CONTROLS_MISSING: 'rejected',
  CONTROLS_MISSING: 'rejected',
  HOST_YOLO_CLAIMS_CONTROL: 'rejected',
  HOST_YOLO_REPORTED_ONLY: 'rejected',
};

/** One line per reason, for documentation and status messages. */
export const REASON_DESCRIPTIONS: Readonly<Record<IsolationReason, string>> = {
  STAGE_NOT_CONFIGURED: 'The policy has no rule for the requested stage; an omitted stage is unsupported.',
  POLICY_NETWORK_UNSPECIFIED: "The stage rule requires neither network-denied nor network-egress-restricted, so the stage's network disposition is undefined.",
  HOST_YOLO_NOT_PERMITTED: 'The effective minimum is host-yolo but the stage rule does not allow host-yolo.',
  HOST_YOLO_NOT_ACKNOWLEDGED: 'The effective minimum is host-yolo but the request does not record a host-yolo acknowledgement.',
  HOST_YOLO_CONTROLS_UNSATISFIABLE: 'The effective minimum is host-yolo while controls are required; host-yolo has no boundary, so the combination can never be met.',
  OBSERVATION_MISSING: 'No backend observation was supplied; nothing was reported as enforced.',
  REQUEST_MISMATCH: "The observation is bound to another request (its requestIdentity is not this request's identity).",
  POLICY_MISMATCH: "The observation is bound to another policy (its policyIdentity is not this policy's identity).",
  SUBJECT_MISMATCH: 'The observation names another subject than the request.',
  TARGET_MISMATCH: 'The observation names another operating system or architecture than the request.',
  ENFORCEMENT_INCOMPLETE: 'The backend reports that enforcement did not complete; its level and controls are not evaluated.',
  LEVEL_INSUFFICIENT: 'The achieved level is weaker than the effective minimum (the stronger of the requested and policy minimums).',
  INTRINSIC_CONTROLS_MISSING: 'A complete observation claims a level without reporting every control that level implies.',
  CONTROLS_MISSING: 'At least one required control (policy, request extras, or intrinsic to the effective minimum) was not enforced; see missingControls.',
  HOST_YOLO_CLAIMS_CONTROL: 'An observation at host-yolo claims a containment control; host-yolo has no boundary and cannot enforce any.',
  HOST_YOLO_REPORTED_ONLY: 'The run was reported at host-yolo; such a run is recorded, never reported sufficient, even when permitted and acknowledged.',
};

/** The outcome a canonical reason list implies: sufficient only when empty; any rejected reason wins over unsupported. */
export function outcomeFor(reasons: readonly IsolationReason[]): IsolationOutcome {
  if (reasons.length === 0) return 'reported-sufficient';
  return reasons.some((r) => REASON_OUTCOME[r] === 'rejected') ? 'rejected' : 'unsupported';
}

/** Sorts and de-duplicates reasons into canonical order. */
export function canonicalReasons(reasons: Iterable<IsolationReason>): IsolationReason[] {
  const present = new Set(reasons);
  return ISOLATION_REASONS.filter((r) => present.has(r));
}
