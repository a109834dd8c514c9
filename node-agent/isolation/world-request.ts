// The isolation policy and request for a World's agent stage (and, at the end, a check's stage), from the Policy governing its Roots
// and the World's own spec.isolation. A World under no Policy gets the built-in rule: os-sandboxed,
// plus the network control that its own network policy promises.
import { canonicalControls, type IsolationControl, type IsolationLevel } from '../../core/isolation/vocabulary.js';
import type { IsolationPolicy, IsolationRequest, StageRule } from '../../core/isolation/records.js';
import { digestOf } from '../../core/digest.js';

export interface PolicyView {
  metadata?: { name?: string };
  spec?: {
    roots?: string[];
    isolation?: { agent?: { minimumLevel?: string; controls?: string[]; allowHostYolo?: boolean }; check?: { minimumLevel?: string; controls?: string[]; allowHostYolo?: boolean } };
    network?: { policy?: string; allow?: string[] };
  };
}

export interface WorldIsolationView {
  roots: string[];
  network: 'None' | 'Allowlist' | 'Shared';
  minimumLevel?: string;
  controls?: string[];
  acknowledgeHostYolo?: boolean;
  base: { root: string; generation: number; digest: string }[];
}

export function networkControl(policy: WorldIsolationView['network']): IsolationControl | undefined {
  return policy === 'None' ? 'network-denied' : policy === 'Allowlist' ? 'network-egress-restricted' : undefined;
}

/** The Policy that governs a World: the one naming any of its Roots (the controller refuses overlaps). */
export function governingPolicy<P extends { spec?: { roots?: string[] } }>(policies: readonly P[], roots: readonly string[]): P | undefined {
  return policies.find((p) => (p.spec?.roots ?? []).some((r) => roots.includes(r)));
}

export function agentPolicyRecord(policy: PolicyView | undefined, world: WorldIsolationView): IsolationPolicy {
  let rule: StageRule | undefined;
  if (!policy) {
    const net = networkControl(world.network);
    rule = { stage: 'agent', minimumLevel: 'os-sandboxed', requiredControls: net ? [net] : [], allowHostYolo: false };
  } else if (policy.spec?.isolation?.agent) {
    const a = policy.spec.isolation.agent;
    rule = {
      stage: 'agent',
      minimumLevel: (a.minimumLevel ?? 'os-sandboxed') as IsolationLevel,
      requiredControls: canonicalControls((a.controls ?? []) as IsolationControl[]),
      allowHostYolo: a.allowHostYolo ?? false,
    };
  }
  return { schemaVersion: 1, kind: 'IsolationPolicy', stages: rule ? [rule] : [] };
}

export function hostTarget(): { os: 'linux'; arch: 'amd64' | 'arm64' | 'ppc64le' | 's390x' | 'riscv64' } {
  const map: Record<string, 'amd64' | 'arm64' | 'ppc64le' | 's390x' | 'riscv64'> = { x64: 'amd64', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };
  return { os: 'linux', arch: map[process.arch] ?? 'amd64' };
}

export function agentRequestRecord(world: WorldIsolationView): IsolationRequest {
  return {
    schemaVersion: 1,
    kind: 'IsolationRequest',
    stage: 'agent',
    subject: digestOf({ format: 'worldline.world-base/v1', base: [...world.base].sort((a, b) => (a.root < b.root ? -1 : 1)) }),
    target: hostTarget(),
    requestedMinimum: (world.minimumLevel ?? 'os-sandboxed') as IsolationLevel,
    extraControls: canonicalControls((world.controls ?? []) as IsolationControl[]),
    hostYoloAcknowledged: world.acknowledgeHostYolo ?? false,
  };
}

/**
 * The isolation policy for the check stage: the governing Policy's spec.isolation.check. A Policy without
 * one leaves the stage unconfigured, which the contract decides as unsupported: checks are refused
 * (the API says so at spec.isolation.check).
 */
export function checkPolicyRecord(policy: PolicyView | undefined): IsolationPolicy {
  const c = policy?.spec?.isolation?.check;
  const rule: StageRule | undefined = c
    ? { stage: 'check', minimumLevel: (c.minimumLevel ?? 'os-sandboxed') as IsolationLevel, requiredControls: canonicalControls((c.controls ?? []) as IsolationControl[]), allowHostYolo: c.allowHostYolo ?? false }
    : undefined;
  return { schemaVersion: 1, kind: 'IsolationPolicy', stages: rule ? [rule] : [] };
}

/** What a check asks for: no more than the sandbox minimum; its subject is the candidate it examines. */
export function checkRequestRecord(subject: string): IsolationRequest {
  return { schemaVersion: 1, kind: 'IsolationRequest', stage: 'check', subject, target: hostTarget(), requestedMinimum: 'os-sandboxed', extraControls: [], hostYoloAcknowledged: false };
}
