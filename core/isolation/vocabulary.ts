// Isolation vocabulary of the containment contract: the ordered levels, the named controls a stage may
// require, the stages a policy covers and the targets an observation names. Levels are guarantees a
// backend must prove, not implementation labels; controls are recorded separately so that a coarse
// level never silently stands in for a specific guarantee. Pure data and functions, no I/O.

/** Isolation levels from weakest to strongest. The array order IS the ordering. */
export const ISOLATION_LEVELS = ['host-yolo', 'process-limited', 'os-sandboxed', 'vm-isolated'] as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[number];

/** The controls a stage may require, in canonical order (the order used for identities and reports). */
export const ISOLATION_CONTROLS = [
  'read-only-inputs',
  'separate-outputs',
  'minimal-environment',
  'no-credentials',
  'no-devices',
  'network-denied',
  'network-egress-restricted',
  'resource-limits',
  'wall-time-limit',
  'output-limit',
  'process-tree-termination',
] as const;
export type IsolationControl = (typeof ISOLATION_CONTROLS)[number];

/** Rank of a level (0 = host-yolo). */
export function levelRank(level: IsolationLevel): number {
  return ISOLATION_LEVELS.indexOf(level);
}

/** True when `a` is at least as strong as `b`. */
export function levelAtLeast(a: IsolationLevel, b: IsolationLevel): boolean {
  return levelRank(a) >= levelRank(b);
}

/** The stronger of two levels. */
export function maxLevel(a: IsolationLevel, b: IsolationLevel): IsolationLevel {
  return levelAtLeast(a, b) ? a : b;
}

const SANDBOXED_CONTROLS: readonly IsolationControl[] = [
  'read-only-inputs',
  'separate-outputs',
  'minimal-environment',
  'no-credentials',
  'no-devices',
  'resource-limits',
  'wall-time-limit',
  'output-limit',
  'process-tree-termination',
];

/** Controls implied by a level: an observation claiming the level must also report these. */
export const INTRINSIC_CONTROLS: Readonly<Record<IsolationLevel, readonly IsolationControl[]>> = {
  'host-yolo': [],
  'process-limited': ['resource-limits', 'wall-time-limit', 'output-limit', 'process-tree-termination'],
  'os-sandboxed': SANDBOXED_CONTROLS,
  // A VM boundary implies the same controls; its difference is the kernel boundary, not the control set.
  'vm-isolated': SANDBOXED_CONTROLS,
};

/** Sorts and de-duplicates controls into canonical order. */
export function canonicalControls(controls: Iterable<IsolationControl>): IsolationControl[] {
  const present = new Set(controls);
  return ISOLATION_CONTROLS.filter((c) => present.has(c));
}

export function isIsolationLevel(v: unknown): v is IsolationLevel {
  return typeof v === 'string' && (ISOLATION_LEVELS as readonly string[]).includes(v);
}

export function isIsolationControl(v: unknown): v is IsolationControl {
  return typeof v === 'string' && (ISOLATION_CONTROLS as readonly string[]).includes(v);
}

/** Controls that state a network disposition. A stage rule must require at least one of them. */
export const NETWORK_CONTROLS: readonly IsolationControl[] = ['network-denied', 'network-egress-restricted'];

/**
 * Executable stages a policy covers, in canonical order. `agent` is a World's program; `check` is a Check run
 * over a captured candidate. Each stage gets its own rule so that one broad grant never leaks across stages.
 */
export const ISOLATION_STAGES = ['agent', 'check'] as const;
export type IsolationStage = (typeof ISOLATION_STAGES)[number];

/** Operating systems an observation may name (Kubernetes `kubernetes.io/os` values). */
export const TARGET_OSES = ['linux', 'darwin', 'windows'] as const;
export type TargetOs = (typeof TARGET_OSES)[number];

/** Architectures an observation may name (Kubernetes `kubernetes.io/arch` values). */
export const TARGET_ARCHES = ['amd64', 'arm64', 'ppc64le', 's390x', 'riscv64', '386', 'arm'] as const;
export type TargetArch = (typeof TARGET_ARCHES)[number];
