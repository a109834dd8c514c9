// The admission policy of one node: its ceilings (how much of the node supervised work may hold at once)
// and the per-world limits and defaults (how much one world or check may ask for, and what it gets when it
// asks for nothing). Parsing and validation only; reading the host for default ceilings is admission-host.ts.
import { parseDuration, parseQuantity } from '../../crds/common.js';

/** Every answer admission gives. Exactly one per request; the names are part of the API (DESIGN.md §3). */
export const ADMISSION_OUTCOMES = [
  'ADMITTED',
  'RESOURCES_UNAVAILABLE',
  'RESOURCE_STATE_UNKNOWN',
  'RESOURCE_POLICY_INVALID',
  'RESOURCE_LIMIT_EXCEEDED',
] as const;
export type AdmissionOutcome = (typeof ADMISSION_OUTCOMES)[number];

/** Which supervised work asks: the agent world itself, or a check run against a candidate. */
export const ADMISSION_STAGES = ['agent', 'check'] as const;
export type AdmissionStage = (typeof ADMISSION_STAGES)[number];

/** The node-wide resources admission accounts for (also the `resource` label of the admission gauges). */
export const NODE_RESOURCES = ['cpu_millis', 'memory_bytes', 'pids', 'worlds', 'ephemeral_storage_bytes'] as const;
export type NodeResource = (typeof NODE_RESOURCES)[number];

/**
 * What all live reservations together may hold. `worlds` bounds concurrent reservations of either stage
 * (every reservation is one sandbox with its own cgroup). A ceiling of 0 is valid and admits nothing.
 */
export interface NodeCeilings {
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  worlds: number;
  /** Disk all reservations may hold in the node store (each run's upper layer is a filesystem of its own size). */
  ephemeralStorageBytes: number;
}

/** One world's (or check's) resources. cpuMillis, memoryBytes and pids are reserved on the node. */
export interface WorldResources {
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  wallTimeSeconds: number;
  outputBytes: number;
  /** Size of the run's own filesystem for its upper layers (sandbox/disk-limit.ts); reserved on the node. */
  ephemeralStorageBytes: number;
}

export interface PerWorldPolicy {
  /** The most one request may ask for; more is RESOURCE_LIMIT_EXCEEDED. */
  limits: WorldResources;
  /** What an unset request field resolves to (never above the limit). */
  defaults: WorldResources;
}

export interface AdmissionPolicy {
  ceilings: NodeCeilings;
  perWorld: PerWorldPolicy;
}

export type PolicyParseResult =
  | { ok: true; policy: AdmissionPolicy }
  | { ok: false; outcome: 'RESOURCE_POLICY_INVALID'; field: string; fields: string[]; message: string };

export const WORLD_RESOURCE_FIELDS = ['cpuMillis', 'memoryBytes', 'pids', 'wallTimeSeconds', 'outputBytes', 'ephemeralStorageBytes'] as const;

/**
 * Per-world values that do not depend on the host. Where the host matters (cpu and memory limits, the pids
 * limit on a small node) the value is capped by the node ceiling when parsed; see parseCeilings.
 */
export const STATIC_PER_WORLD = {
  limits: { pids: 4096, wallTimeSeconds: 7 * 86400, outputBytes: 8 * 2 ** 30 },
  defaults: { cpuMillis: 1000, memoryBytes: 2 * 2 ** 30, pids: 1024, wallTimeSeconds: 3600, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: 2 ** 30 },
} as const;

/** When not configured, at most this many reservations are live at once. */
export const DEFAULT_WORLDS_CEILING = 64;

type Kind = 'cpu' | 'bytes' | 'count' | 'duration';

/** One configuration key: its flag name (without --), its environment variable, and its unit. */
export interface AdmissionConfigKey {
  key: string;
  env: string;
  kind: Kind;
  description: string;
}

const NODE_KEYS: Record<keyof NodeCeilings, AdmissionConfigKey> = {
  cpuMillis: { key: 'node-cpu', env: 'WORLDLINE_NODE_CPU', kind: 'cpu', description: 'CPU all reservations may hold, in cores (e.g. 8 or 7500m); default: the host\'s CPUs' },
  memoryBytes: { key: 'node-memory', env: 'WORLDLINE_NODE_MEMORY', kind: 'bytes', description: 'memory all reservations may hold (e.g. 28Gi); default: MemTotal minus a reserve' },
  pids: { key: 'node-pids', env: 'WORLDLINE_NODE_PIDS', kind: 'count', description: 'tasks all reservations may hold; default: the host task limit minus a reserve' },
  worlds: { key: 'node-worlds', env: 'WORLDLINE_NODE_WORLDS', kind: 'count', description: `concurrent reservations (worlds and checks); default ${DEFAULT_WORLDS_CEILING}` },
  ephemeralStorageBytes: { key: 'node-ephemeral-storage', env: 'WORLDLINE_NODE_EPHEMERAL_STORAGE', kind: 'bytes', description: 'disk all reservations may hold in the store (e.g. 100Gi); default: the store filesystem\'s size minus a reserve' },
};

const WORLD_KEYS: Record<'limits' | 'defaults', Record<keyof WorldResources, AdmissionConfigKey>> = {
  limits: {
    cpuMillis: { key: 'world-cpu', env: 'WORLDLINE_WORLD_CPU', kind: 'cpu', description: 'most CPU one world may ask for; default: the node ceiling' },
    memoryBytes: { key: 'world-memory', env: 'WORLDLINE_WORLD_MEMORY', kind: 'bytes', description: 'most memory one world may ask for; default: the node ceiling' },
    pids: { key: 'world-pids', env: 'WORLDLINE_WORLD_PIDS', kind: 'count', description: 'most tasks one world may ask for; default 4096 (at most the node ceiling)' },
    wallTimeSeconds: { key: 'world-wall-time', env: 'WORLDLINE_WORLD_WALL_TIME', kind: 'duration', description: 'longest wall time one world may ask for; default 168h' },
    outputBytes: { key: 'world-output-bytes', env: 'WORLDLINE_WORLD_OUTPUT_BYTES', kind: 'bytes', description: 'most output one world may ask for; default 8Gi' },
    ephemeralStorageBytes: { key: 'world-ephemeral-storage', env: 'WORLDLINE_WORLD_EPHEMERAL_STORAGE', kind: 'bytes', description: 'most ephemeral storage (upper-layer disk) one world may ask for; default: the node ceiling' },
  },
  defaults: {
    cpuMillis: { key: 'world-default-cpu', env: 'WORLDLINE_WORLD_DEFAULT_CPU', kind: 'cpu', description: 'CPU of a world that sets none; default 1 (at most the limit)' },
    memoryBytes: { key: 'world-default-memory', env: 'WORLDLINE_WORLD_DEFAULT_MEMORY', kind: 'bytes', description: 'memory of a world that sets none; default 2Gi (at most the limit)' },
    pids: { key: 'world-default-pids', env: 'WORLDLINE_WORLD_DEFAULT_PIDS', kind: 'count', description: 'tasks of a world that sets none; default 1024 (at most the limit)' },
    wallTimeSeconds: { key: 'world-default-wall-time', env: 'WORLDLINE_WORLD_DEFAULT_WALL_TIME', kind: 'duration', description: 'wall time of a world that sets none; default 1h (at most the limit)' },
    outputBytes: { key: 'world-default-output-bytes', env: 'WORLDLINE_WORLD_DEFAULT_OUTPUT_BYTES', kind: 'bytes', description: 'output of a world that sets none; default 64Mi (at most the limit)' },
    ephemeralStorageBytes: { key: 'world-default-ephemeral-storage', env: 'WORLDLINE_WORLD_DEFAULT_EPHEMERAL_STORAGE', kind: 'bytes', description: 'ephemeral storage of a world or check that sets none (every check takes it); default 1Gi (at most the limit)' },
  },
};

/** Every key parseCeilings reads, for the agent's flag parser and its usage text. */
export const ADMISSION_CONFIG_KEYS: readonly AdmissionConfigKey[] = [
  ...Object.values(NODE_KEYS),
  ...Object.values(WORLD_KEYS.limits),
  ...Object.values(WORLD_KEYS.defaults),
];

/** Gather the admission keys from parsed flags (by key) falling back to the environment (by env name). */
export function admissionConfigFrom(
  flags: Readonly<Record<string, string | boolean | undefined>>,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const k of ADMISSION_CONFIG_KEYS) {
    const flag = flags[k.key];
    out[k.key] = typeof flag === 'string' ? flag : env[k.env];
  }
  return out;
}

/** A parsed amount rounded down to a whole number, or what is wrong with it. */
function wholeOrProblem(value: number | undefined, notParsed: string): number | string {
  if (value === undefined) return notParsed;
  const whole = Math.floor(value);
  return Number.isSafeInteger(whole) ? whole : 'is too large';
}

/** A value in the unit the policy stores, or why the text is not one. */
function parseValue(kind: Kind, raw: string): number | string {
  const text = raw.trim();
  if (text === '') return 'is empty';
  switch (kind) {
    case 'cpu': {
      const cores = parseQuantity(text);
      if (cores === undefined) return 'is not a CPU quantity (e.g. 4 or 3500m)';
      const millis = Math.round(cores * 1000);
      return Number.isSafeInteger(millis) ? millis : 'is too large';
    }
    case 'bytes':
      return wholeOrProblem(parseQuantity(text), 'is not a byte quantity (e.g. 8Gi or 512Mi)');
    case 'count': {
      if (!/^[0-9]+$/.test(text)) return 'is not a non-negative integer';
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : 'is too large';
    }
    case 'duration':
      return wholeOrProblem(parseDuration(text), 'is not a duration (e.g. 30m or 1h30m)');
  }
}

/** Problems with a policy that is already in numbers (shared by parseCeilings and decide). */
export function policyProblems(ceilings: NodeCeilings, perWorld: PerWorldPolicy): { field: string; problem: string }[] {
  const out: { field: string; problem: string }[] = [];
  for (const f of ['cpuMillis', 'memoryBytes', 'pids', 'worlds', 'ephemeralStorageBytes'] as const) {
    const v = ceilings?.[f];
    if (!Number.isSafeInteger(v) || v < 0) out.push({ field: NODE_KEYS[f].key, problem: `${NODE_KEYS[f].key}: node ceiling ${f} is ${String(v)}, not a non-negative integer` });
  }
  for (const part of ['limits', 'defaults'] as const) {
    for (const f of WORLD_RESOURCE_FIELDS) {
      const v = perWorld?.[part]?.[f];
      if (!Number.isSafeInteger(v) || v < 1) out.push({ field: WORLD_KEYS[part][f].key, problem: `${WORLD_KEYS[part][f].key}: per-world ${part === 'limits' ? 'limit' : 'default'} ${f} is ${String(v)}, not a positive integer` });
    }
  }
  if (out.length === 0) {
    for (const f of WORLD_RESOURCE_FIELDS) {
      const d = perWorld.defaults[f];
      const l = perWorld.limits[f];
      if (d > l) out.push({ field: WORLD_KEYS.defaults[f].key, problem: `${WORLD_KEYS.defaults[f].key}: per-world default ${f} ${d} is above its limit ${l} (${WORLD_KEYS.limits[f].key})` });
    }
  }
  return out;
}

/**
 * Parse the node's admission policy from configuration text (keys of ADMISSION_CONFIG_KEYS; other keys are
 * ignored). An unset node ceiling falls back to `host` (see readHostCeilings), then, for `worlds` only, to
 * DEFAULT_WORLDS_CEILING. Unset per-world values fall back to:
 *   limits:   cpu, memory and ephemeral storage = the node ceiling; pids = min(4096, node pids);
 *             wall time 168h; output 8Gi
 *   defaults: cpu = min(1 core, limit); memory = min(2Gi, limit); pids = min(1024, limit);
 *             wall time = min(1h, limit); output = min(64Mi, limit); ephemeral storage = min(1Gi, limit)
 * Never throws for bad text: every malformed or missing value is one RESOURCE_POLICY_INVALID answer that
 * names each field at fault (`field` is the first).
 */
export function parseCeilings(raw: Readonly<Record<string, string | undefined>>, host: Partial<NodeCeilings> = {}): PolicyParseResult {
  const problems: { field: string; problem: string }[] = [];
  const read = (k: AdmissionConfigKey, fallback: number | undefined, min: number): number => {
    const text = raw?.[k.key];
    if (text === undefined) {
      if (fallback === undefined) problems.push({ field: k.key, problem: `${k.key} is not set and could not be derived from the host` });
      return fallback ?? 0;
    }
    const v = typeof text === 'string' ? parseValue(k.kind, text) : 'is not text';
    if (typeof v === 'string') {
      problems.push({ field: k.key, problem: `${k.key} "${String(text)}" ${v}` });
      return fallback ?? 0;
    }
    if (v < min) problems.push({ field: k.key, problem: `${k.key} "${text}" must be at least ${min === 1 && k.kind === 'cpu' ? '1m' : min}` });
    return v;
  };
  const hostValue = (v: number | undefined): number | undefined => (v !== undefined && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
  const ceilings: NodeCeilings = {
    cpuMillis: read(NODE_KEYS.cpuMillis, hostValue(host.cpuMillis), 0),
    memoryBytes: read(NODE_KEYS.memoryBytes, hostValue(host.memoryBytes), 0),
    pids: read(NODE_KEYS.pids, hostValue(host.pids), 0),
    worlds: read(NODE_KEYS.worlds, hostValue(host.worlds) ?? DEFAULT_WORLDS_CEILING, 0),
    ephemeralStorageBytes: read(NODE_KEYS.ephemeralStorageBytes, hostValue(host.ephemeralStorageBytes), 0),
  };
  const L = WORLD_KEYS.limits;
  const limits: WorldResources = {
    cpuMillis: read(L.cpuMillis, ceilings.cpuMillis, 1),
    memoryBytes: read(L.memoryBytes, ceilings.memoryBytes, 1),
    pids: read(L.pids, Math.min(STATIC_PER_WORLD.limits.pids, ceilings.pids), 1),
    wallTimeSeconds: read(L.wallTimeSeconds, STATIC_PER_WORLD.limits.wallTimeSeconds, 1),
    outputBytes: read(L.outputBytes, STATIC_PER_WORLD.limits.outputBytes, 1),
    ephemeralStorageBytes: read(L.ephemeralStorageBytes, ceilings.ephemeralStorageBytes, 1),
  };
  const D = WORLD_KEYS.defaults;
  const S = STATIC_PER_WORLD.defaults;
  const defaults: WorldResources = {
    cpuMillis: read(D.cpuMillis, Math.min(S.cpuMillis, limits.cpuMillis), 1),
    memoryBytes: read(D.memoryBytes, Math.min(S.memoryBytes, limits.memoryBytes), 1),
    pids: read(D.pids, Math.min(S.pids, limits.pids), 1),
    wallTimeSeconds: read(D.wallTimeSeconds, Math.min(S.wallTimeSeconds, limits.wallTimeSeconds), 1),
    outputBytes: read(D.outputBytes, Math.min(S.outputBytes, limits.outputBytes), 1),
    ephemeralStorageBytes: read(D.ephemeralStorageBytes, Math.min(S.ephemeralStorageBytes, limits.ephemeralStorageBytes), 1),
  };
  const perWorld: PerWorldPolicy = { limits, defaults };
  if (problems.length === 0) problems.push(...policyProblems(ceilings, perWorld));
  if (problems.length > 0) {
    const fields = [...new Set(problems.map((p) => p.field))];
    return {
      ok: false,
      outcome: 'RESOURCE_POLICY_INVALID',
      field: fields[0]!,
      fields,
      message: `admission policy is invalid: ${problems.map((p) => p.problem).join('; ')}`,
    };
  }
  return { ok: true, policy: { ceilings, perWorld } };
}
