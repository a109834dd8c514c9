// Builds the IsolationObservation of a World's agent stage from measured facts only: the sandbox's
// own frame (identity, capabilities, namespaces, and the target: the kernel's uname as the workload sees
// it), the cgroup limits read back from the kernel, the mounts and interfaces the world actually has,
// and whether the agent's limits are armed.
import { canonicalControls, type IsolationControl, type IsolationLevel } from '../../core/isolation/vocabulary.js';
import type { IsolationObservation } from '../../core/isolation/records.js';
import type { SandboxObservation } from '../../native/index.js';
import type { CgroupReadback } from '../sandbox/cgroup.js';
import type { MountFact, WorldFacts } from './measure-world.js';
import { kernelTarget } from './world-request.js';

/** A bind the node-agent planned for a private-evaluator role: where it appears, and the identity of its host source. */
export interface PlannedBind {
  path: string;
  /** fileIdentity() of the host directory or file, taken before the role started. */
  identity: string;
}

/**
 * A private-evaluator role's mounts, which stand where a World's Roots do: its outputs (the examiner's
 * report directory; a worker's own copies of the inputs, a candidate's own views of them and its case view) and its inputs
 * (the frozen input, the staged verifiers, a leased candidate's stdin).
 */
export interface RoleMounts {
  outputs: PlannedBind[];
  inputs: PlannedBind[];
  /** Identities of the outputs of the run's other roles that are live now: none may be this role's too. */
  othersOutputs: ReadonlySet<string>;
}

export interface ObservationInputs {
  frameProblems: string[];
  frame: SandboxObservation;
  agentNs: Record<string, string>;
  cgroup: CgroupReadback;
  facts: WorldFacts;
  /** Paths where the world's Roots are mounted (its outputs). */
  rootPaths: string[];
  /** A private-evaluator role's planned binds: its outputs and inputs are these, not Roots (rootPaths is then unused). */
  roleMounts?: RoleMounts;
  /** Mount points of the single projected credential (a declared input, not an ambient credential). */
  credentialPaths: string[];
  network: 'None' | 'Allowlist' | 'Shared';
  /** The Allowlist proxy's listener was verified to live in the world's network namespace. */
  proxyInWorldNetns: boolean;
  wallTimeArmed: boolean;
  outputLimitArmed: boolean;
}

const SYSTEM_MOUNTS = ['/usr', '/etc'];
const ALLOWED_DEVICES = new Set(['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty']);
const SECRET_DIRS = ['/var/run/secrets', '/run/secrets'];

function isReadOnly(m: { options: string[] }): boolean {
  return m.options.includes('ro');
}

export function measuredControls(i: ObservationInputs): { controls: IsolationControl[]; notes: string[] } {
  const c = new Set<IsolationControl>();
  const notes: string[] = [];
  const byPoint = new Map(i.facts.mounts.map((m) => [m.mountPoint, m]));
  const root = byPoint.get('/');
  const sys = SYSTEM_MOUNTS.map((p) => byPoint.get(p)).filter((m) => m !== undefined);
  const systemReadOnly = root !== undefined && isReadOnly(root) && sys.length === SYSTEM_MOUNTS.length && sys.every(isReadOnly);
  const inputProblems = i.roleMounts ? roleInputProblems(i.roleMounts, byPoint, i.facts.identities ?? {}) : [];
  if (systemReadOnly && inputProblems.length === 0) c.add('read-only-inputs');
  else if (!systemReadOnly) notes.push('read-only-inputs: / or a system directory is not mounted read-only');
  notes.push(...inputProblems.map((p) => `read-only-inputs: ${p}`));
  if (i.roleMounts) {
    const problems = roleOutputProblems(i.roleMounts, byPoint, i.facts.identities ?? {});
    if (problems.length === 0) c.add('separate-outputs');
    else notes.push(...problems.map((p) => `separate-outputs: ${p}`));
  } else {
    const outputs = i.rootPaths.map((p) => byPoint.get(p));
    if (outputs.length > 0 && outputs.every((m) => m?.fsType === 'overlay' && !isReadOnly(m))) c.add('separate-outputs');
    else notes.push('separate-outputs: a Root is not a writable overlay of its own');
  }
  const secrets = i.facts.mounts.some((m) => SECRET_DIRS.some((d) => m.mountPoint === d || m.mountPoint.startsWith(`${d}/`)));
  const stray = i.facts.mounts.filter((m) => m.mountPoint.startsWith('/') && !i.credentialPaths.includes(m.mountPoint) && /(^|\/)(\.kube|\.ssh|\.aws|\.config)(\/|$)/.test(m.mountPoint));
  if (!secrets && stray.length === 0) c.add('no-credentials');
  else notes.push('no-credentials: a secret or credential directory is mounted');
  const devMounts = i.facts.mounts.filter((m) => m.mountPoint === '/dev' || m.mountPoint.startsWith('/dev/'));
  const devRoot = byPoint.get('/dev');
  const devOk = devRoot?.fsType === 'tmpfs' && devMounts.every((m) => m.mountPoint === '/dev' || m.mountPoint === '/dev/shm' || ALLOWED_DEVICES.has(m.mountPoint));
  if (devOk) c.add('no-devices');
  else notes.push('no-devices: /dev holds more than the minimal device set');
  const ownNet = i.frame.ns.net !== i.agentNs.net;
  const onlyLo = i.facts.interfaces.every((n) => n === 'lo');
  if (i.network === 'None' && ownNet && onlyLo) c.add('network-denied');
  if (i.network === 'Allowlist' && ownNet && onlyLo && i.proxyInWorldNetns) c.add('network-egress-restricted');
  const finite = (v: number | 'max'): boolean => v !== 'max';
  if (finite(i.cgroup.cpuMillis) && finite(i.cgroup.memoryBytes) && finite(i.cgroup.pids)) c.add('resource-limits');
  else notes.push('resource-limits: a cgroup limit reads back as unlimited');
  if (i.wallTimeArmed) c.add('wall-time-limit');
  if (i.outputLimitArmed) c.add('output-limit');
  if (i.frame.ns.pid !== i.agentNs.pid) c.add('process-tree-termination');
  // minimal-environment is measured after exec (the environment exists only then); see envIsMinimal.
  return { controls: canonicalControls([...c]), notes };
}

/** What the role's world shows at a planned bind's path that differs from the plan ("" when nothing). */
function bindMismatch(b: PlannedBind, byPoint: ReadonlyMap<string, MountFact>, identities: Readonly<Record<string, string>>): string {
  if (!byPoint.has(b.path)) return `nothing is mounted at ${b.path}`;
  const seen = identities[b.path];
  if (seen === undefined) return `what is mounted at ${b.path} could not be identified`;
  if (seen !== b.identity) return `${b.path} is not the directory the node-agent prepared for it (${seen}, expected ${b.identity})`;
  return '';
}

/** Each input is mounted at its path, read-only, and is the very file or directory the node-agent staged. */
export function roleInputProblems(r: RoleMounts, byPoint: ReadonlyMap<string, MountFact>, identities: Readonly<Record<string, string>>): string[] {
  return r.inputs.flatMap((b) => {
    const wrong = bindMismatch(b, byPoint, identities);
    if (wrong) return [wrong];
    return isReadOnly(byPoint.get(b.path)!) ? [] : [`${b.path} is mounted writable`];
  });
}

/**
 * The role has outputs, each mounted at its path, writable, the very directory the node-agent made for
 * this role, and no other live role's output (nor another of its own).
 */
export function roleOutputProblems(r: RoleMounts, byPoint: ReadonlyMap<string, MountFact>, identities: Readonly<Record<string, string>>): string[] {
  if (r.outputs.length === 0) return ['the role has no output of its own'];
  const mine = new Set<string>();
  return r.outputs.flatMap((b) => {
    const wrong = bindMismatch(b, byPoint, identities);
    if (wrong) return [wrong];
    if (isReadOnly(byPoint.get(b.path)!)) return [`${b.path} is mounted read-only`];
    if (r.othersOutputs.has(b.identity)) return [`${b.path} is another role's output`];
    if (mine.has(b.identity)) return [`${b.path} is mounted at a second path of the same role`];
    mine.add(b.identity);
    return [];
  });
}

/** The level the measured facts support: os-sandboxed needs a clean frame and every os-sandboxed control. */
export function achievedLevel(frameProblems: string[], controls: readonly IsolationControl[], expectMinimalEnv: boolean): IsolationLevel {
  const has = (x: IsolationControl): boolean => controls.includes(x) || (x === 'minimal-environment' && expectMinimalEnv);
  const limited = (['resource-limits', 'wall-time-limit', 'output-limit', 'process-tree-termination'] as const).every(has);
  const sandboxed = frameProblems.length === 0 && limited && (['read-only-inputs', 'separate-outputs', 'no-credentials', 'no-devices'] as const).every(has);
  return sandboxed ? 'os-sandboxed' : limited ? 'process-limited' : 'host-yolo';
}

export function buildObservation(
  i: ObservationInputs,
  ids: { requestIdentity: string; policyIdentity: string; subject: string; requestTarget: IsolationObservation['target']; executionId: string; backendVersion: string },
  minimalEnvironment: boolean,
  /** Measurements or bindings that could not be taken (each a note): the observation is then incomplete. */
  unmeasured: readonly string[] = [],
): { observation: IsolationObservation; notes: string[] } {
  const { controls, notes } = measuredControls(i);
  notes.push(...unmeasured.map((u) => `not measured: ${u}`));
  // The target is what the kernel tells the workload. A machine the contract has no name for leaves the
  // observation incomplete (ENFORCEMENT_INCOMPLETE); the request's target then only fills the field of a
  // record that authorizes nothing.
  const measured = kernelTarget(i.frame.kernel);
  if (!measured) notes.push(`target: the kernel reports ${i.frame.kernel.sysname} ${i.frame.kernel.machine}, which names no known operating system and architecture`);
  const all = canonicalControls(minimalEnvironment ? [...controls, 'minimal-environment'] : controls);
  const level = achievedLevel(i.frameProblems, all, false);
  return {
    observation: {
      schemaVersion: 1,
      kind: 'IsolationObservation',
      backend: 'worldline-node-agent',
      backendVersion: ids.backendVersion,
      executionId: ids.executionId,
      requestIdentity: ids.requestIdentity,
      policyIdentity: ids.policyIdentity,
      subject: ids.subject,
      target: measured ?? ids.requestTarget,
      achievedLevel: level,
      enforcedControls: level === 'host-yolo' ? [] : all,
      complete: measured !== undefined && unmeasured.length === 0,
    },
    notes,
  };
}
