// The one isolation decision: given a policy, a request and (maybe) a backend's post-run observation, say
// whether the observation reports what the stage needs. Deterministic and fail-closed: every gap has a
// stable reason, a decision is reported-sufficient only with no reason at all, and a host-yolo run never is.
// It discovers no backend, runs nothing, upgrades nothing, and its result authorizes nothing.
import { identityOf } from './identity.js';
import { requireRecord } from './parse.js';
import { canonicalReasons, outcomeFor, type IsolationReason } from './reasons.js';
import type { IsolationDecision, IsolationObservation, IsolationPolicy, IsolationRequest, StageRule } from './records.js';
import {
  canonicalControls,
  INTRINSIC_CONTROLS,
  levelAtLeast,
  maxLevel,
  NETWORK_CONTROLS,
  type IsolationControl,
  type IsolationLevel,
} from './vocabulary.js';

/**
 * Evaluates one observation against one request and policy. Each record is validated first; a malformed one
 * throws IsolationRecordError (it is refused, not evaluated).
 */
export function evaluate(policy: IsolationPolicy, request: IsolationRequest, observation: IsolationObservation | undefined): IsolationDecision {
  requireRecord('IsolationPolicy', policy);
  requireRecord('IsolationRequest', request);
  if (observation !== undefined) requireRecord('IsolationObservation', observation);

  const policyIdentity = identityOf(policy);
  const requestIdentity = identityOf(request);
  const observationIdentity = observation === undefined ? null : identityOf(observation);
  const decide = (effectiveMinimum: IsolationLevel, requiredControls: IsolationControl[], reasons: IsolationReason[], missingControls: IsolationControl[]): IsolationDecision => {
    const ordered = canonicalReasons(reasons);
    return {
      schemaVersion: 1,
      kind: 'IsolationDecision',
      requestIdentity,
      policyIdentity,
      observationIdentity,
      outcome: outcomeFor(ordered),
      reasons: ordered,
      effectiveMinimum,
      requiredControls,
      missingControls,
      authority: 'unauthenticated-local',
    };
  };

  const rule = policy.stages.find((r) => r.stage === request.stage);
  if (rule === undefined) {
    // An omitted stage is unsupported, whatever else is true: without a rule there is nothing to evaluate against.
    const effective = request.requestedMinimum;
    return decide(effective, canonicalControls([...request.extraControls, ...INTRINSIC_CONTROLS[effective]]), ['STAGE_NOT_CONFIGURED'], []);
  }

  const effectiveMinimum = maxLevel(request.requestedMinimum, rule.minimumLevel);
  const requiredControls = canonicalControls([...rule.requiredControls, ...request.extraControls, ...INTRINSIC_CONTROLS[effectiveMinimum]]);
  const reasons = ruleAndRequestReasons(rule, request, effectiveMinimum, requiredControls);
  if (observation === undefined) return decide(effectiveMinimum, requiredControls, [...reasons, 'OBSERVATION_MISSING'], []);

  reasons.push(...bindingReasons(observation, request, requestIdentity, policyIdentity));
  let missingControls: IsolationControl[] = [];
  if (!observation.complete) {
    // Facts of an incomplete enforcement are partial: its level and controls are not evaluated at all.
    reasons.push('ENFORCEMENT_INCOMPLETE');
  } else {
    const enforced = new Set(observation.enforcedControls);
    if (!levelAtLeast(observation.achievedLevel, effectiveMinimum)) reasons.push('LEVEL_INSUFFICIENT');
    if (INTRINSIC_CONTROLS[observation.achievedLevel].some((c) => !enforced.has(c))) reasons.push('INTRINSIC_CONTROLS_MISSING');
    missingControls = requiredControls.filter((c) => !enforced.has(c));
    if (missingControls.length > 0) reasons.push('CONTROLS_MISSING');
  }
  if (observation.achievedLevel === 'host-yolo') {
    if (observation.enforcedControls.length > 0) reasons.push('HOST_YOLO_CLAIMS_CONTROL');
    reasons.push('HOST_YOLO_REPORTED_ONLY');
  }
  return decide(effectiveMinimum, requiredControls, reasons, missingControls);
}

/** Reasons that follow from the stage rule and the request alone, before any observation is looked at. */
function ruleAndRequestReasons(
  rule: StageRule,
  request: IsolationRequest,
  effectiveMinimum: IsolationLevel,
  requiredControls: readonly IsolationControl[],
): IsolationReason[] {
  const reasons: IsolationReason[] = [];
  if (!rule.requiredControls.some((c) => NETWORK_CONTROLS.includes(c))) reasons.push('POLICY_NETWORK_UNSPECIFIED');
  if (effectiveMinimum === 'host-yolo') {
    if (!rule.allowHostYolo) reasons.push('HOST_YOLO_NOT_PERMITTED');
    if (!request.hostYoloAcknowledged) reasons.push('HOST_YOLO_NOT_ACKNOWLEDGED');
    if (requiredControls.length > 0) reasons.push('HOST_YOLO_CONTROLS_UNSATISFIABLE');
  }
  return reasons;
}

/** Reasons an observation does not describe this execution: another request, policy, subject or platform. */
function bindingReasons(observation: IsolationObservation, request: IsolationRequest, requestIdentity: string, policyIdentity: string): IsolationReason[] {
  const reasons: IsolationReason[] = [];
  if (observation.requestIdentity !== requestIdentity) reasons.push('REQUEST_MISMATCH');
  if (observation.policyIdentity !== policyIdentity) reasons.push('POLICY_MISMATCH');
  if (observation.subject !== request.subject) reasons.push('SUBJECT_MISMATCH');
  if (observation.target.os !== request.target.os || observation.target.arch !== request.target.arch) reasons.push('TARGET_MISMATCH');
  return reasons;
}
