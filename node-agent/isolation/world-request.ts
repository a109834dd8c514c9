// The isolation policy and request for a World's agent stage (and, at the end, a check's stage), from the Policy governing its Roots
// and the World's own spec.isolation. A World under no Policy gets the built-in rule: os-sandboxed,
// plus the network control that its own network policy promises — network-denied for Shared, which
// promises none: the host network is then a missing control, which only an isolation waiver lets run.
import { canonicalControls, type IsolationControl, type TargetArch } from '../../core/isolation/vocabulary.js';
import type { IsolationPolicy, IsolationRequest, StageRule } from '../../core/isolation/records.js';
import { DIGEST_PREFIX, sha256Hex } from '../../core/digest.js';
import { worldBaseBytes } from '../../core/evidence/isolation-attestation.js';
import type { BaseEntry, NetworkPolicy, PolicySpec, WorldIsolation } from '../../crds/index.js';

/** What the isolation records read of the governing Policy (a Pick of the parsed Policy). */
export interface PolicyView {
  spec: Pick<PolicySpec, 'isolation' | 'network'>;
}

/** A World's agent-stage request: its Roots, network, spec.isolation and the base it forked. */
export interface WorldIsolationView extends Partial<WorldIsolation> {
  roots: string[];
  network: NetworkPolicy;
  base: BaseEntry[];
}

/** The network control the built-in rule requires of a World with this network policy. */
export function networkControl(policy: WorldIsolationView['network']): IsolationControl {
  return policy === 'Allowlist' ? 'network-egress-restricted' : 'network-denied';
}

export function agentPolicyRecord(policy: PolicyView | undefined, world: WorldIsolationView): IsolationPolicy {
  let rule: StageRule | undefined;
  if (!policy) {
    rule = { stage: 'agent', minimumLevel: 'os-sandboxed', requiredControls: [networkControl(world.network)], allowHostYolo: false };
  } else if (policy.spec.isolation?.agent) {
    const a = policy.spec.isolation.agent;
    rule = {
      stage: 'agent',
      minimumLevel: a.minimumLevel,
      requiredControls: canonicalControls(a.controls ?? []),
      allowHostYolo: a.allowHostYolo,
    };
  }
  return { schemaVersion: 1, kind: 'IsolationPolicy', stages: rule ? [rule] : [] };
}

/** uname(2) machine names and the kubernetes.io/arch value each one is. */
const MACHINE_ARCH: Readonly<Record<string, TargetArch>> = {
  x86_64: 'amd64',
  aarch64: 'arm64',
  ppc64le: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  i386: '386',
  i486: '386',
  i586: '386',
  i686: '386',
  armv7l: 'arm',
  armv8l: 'arm',
};

/**
 * The target the kernel reports to the workload (the sandbox frame's uname, its persona included), or
 * undefined when it names no operating system or architecture the contract knows: measured, never taken
 * from the request.
 */
export function kernelTarget(kernel: { sysname: string; machine: string }): IsolationRequest['target'] | undefined {
  const arch = MACHINE_ARCH[kernel.machine];
  return kernel.sysname === 'Linux' && arch ? { os: 'linux', arch } : undefined;
}

/** Node's process.arch names and the kubernetes.io/arch value each one is. */
const PROCESS_ARCH: Readonly<Record<string, TargetArch>> = { x64: 'amd64', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };

/**
 * The target a request asks for: the architecture the node-agent itself was built for (process.arch),
 * amd64 for one outside the map. The decision never rests on this alone: the observation's target is the
 * kernel's own report (kernelTarget), and they must agree.
 */
export function hostTarget(): IsolationRequest['target'] {
  return { os: 'linux', arch: PROCESS_ARCH[process.arch] ?? 'amd64' };
}

/** The subject of a World's agent stage: the identity of the generations it forked, one per Root. */
export function baseSubject(base: readonly BaseEntry[]): string {
  return DIGEST_PREFIX + sha256Hex(worldBaseBytes(base));
}

export function agentRequestRecord(world: WorldIsolationView): IsolationRequest {
  return {
    schemaVersion: 1,
    kind: 'IsolationRequest',
    stage: 'agent',
    subject: baseSubject(world.base),
    target: hostTarget(),
    requestedMinimum: world.minimumLevel ?? 'os-sandboxed',
    extraControls: canonicalControls(world.controls ?? []),
    hostYoloAcknowledged: world.acknowledgeHostYolo ?? false,
  };
}

/**
 * The isolation policy for the check stage: the governing Policy's spec.isolation.check. A Policy without
 * one leaves the stage unconfigured, which the contract decides as unsupported: checks are refused
 * (the API says so at spec.isolation.check).
 */
export function checkPolicyRecord(policy: PolicyView | undefined): IsolationPolicy {
  const c = policy?.spec.isolation?.check;
  const rule: StageRule | undefined = c
    ? { stage: 'check', minimumLevel: c.minimumLevel, requiredControls: canonicalControls(c.controls ?? []), allowHostYolo: c.allowHostYolo }
    : undefined;
  return { schemaVersion: 1, kind: 'IsolationPolicy', stages: rule ? [rule] : [] };
}

/** What a check asks for: no more than the sandbox minimum; its subject is the candidate it examines. */
export function checkRequestRecord(subject: string): IsolationRequest {
  return { schemaVersion: 1, kind: 'IsolationRequest', stage: 'check', subject, target: hostTarget(), requestedMinimum: 'os-sandboxed', extraControls: [], hostYoloAcknowledged: false };
}
