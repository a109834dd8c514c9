// Shared builders for the core/isolation tests: a well-formed policy, request and matching observation,
// each overridable field by field.
import { digestOf } from '../../core/digest.js';
import {
  canonicalControls,
  identityOf,
  INTRINSIC_CONTROLS,
  type IsolationControl,
  type IsolationObservation,
  type IsolationPolicy,
  type IsolationRequest,
  type StageRule,
} from '../../core/isolation/index.js';

export const SUBJECT = 'sha256:' + 'a'.repeat(64);
export const OTHER = 'sha256:' + 'b'.repeat(64);

export const OS_SANDBOXED_CONTROLS: IsolationControl[] = canonicalControls([...INTRINSIC_CONTROLS['os-sandboxed'], 'network-denied']);

export function rule(over: Partial<StageRule> = {}): StageRule {
  return { stage: 'agent', minimumLevel: 'os-sandboxed', requiredControls: ['network-denied'], allowHostYolo: false, ...over };
}

export function policy(...rules: StageRule[]): IsolationPolicy {
  return { schemaVersion: 1, kind: 'IsolationPolicy', stages: rules.length > 0 ? rules : [rule(), rule({ stage: 'check' })] };
}

export function request(over: Partial<IsolationRequest> = {}): IsolationRequest {
  return {
    schemaVersion: 1,
    kind: 'IsolationRequest',
    stage: 'agent',
    subject: SUBJECT,
    target: { os: 'linux', arch: 'amd64' },
    requestedMinimum: 'os-sandboxed',
    extraControls: [],
    hostYoloAcknowledged: false,
    ...over,
  };
}

/** An observation bound to exactly `p` and `r`, reporting os-sandboxed with its intrinsic controls and network-denied. */
export function observation(p: IsolationPolicy, r: IsolationRequest, over: Partial<IsolationObservation> = {}): IsolationObservation {
  return {
    schemaVersion: 1,
    kind: 'IsolationObservation',
    backend: 'worldline-sandbox',
    backendVersion: '0.1.0',
    executionId: 'exec-0001',
    requestIdentity: identityOf(r),
    policyIdentity: identityOf(p),
    subject: r.subject,
    target: { ...r.target },
    achievedLevel: 'os-sandboxed',
    enforcedControls: OS_SANDBOXED_CONTROLS,
    complete: true,
    ...over,
  };
}

export const otherDigest = (seed: string): string => digestOf({ seed });
