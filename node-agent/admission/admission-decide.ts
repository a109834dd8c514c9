// The admission decision, pure: the same inputs give the same answer, and nothing is read or written.
//
// Checks run in this order and the first that applies is the answer (exactly one outcome):
//   1. RESOURCE_POLICY_INVALID  the node policy or the request is malformed (a non-integer, a negative or
//                               zero amount, a default above its limit, an unknown stage)
//   2. RESOURCE_LIMIT_EXCEEDED  the request, with unset fields resolved to the per-world defaults, asks
//                               for more than a per-world limit
//   3. RESOURCE_STATE_UNKNOWN   a measurement the decision needs (MemAvailable, the host's task count,
//                               its task limit, the store filesystem's free space) could not be taken. An unknown is never reported as
//                               insufficient, even when the accounting alone would refuse.
//   4. RESOURCES_UNAVAILABLE    the request does not fit in a node ceiling minus the live reservations, or
//                               in what the kernel measures as free (memory: MemAvailable; tasks: the task
//                               limit minus the tasks running now; disk: the store filesystem's free space
//                               minus the reserve, less the unwritten part of the live disk reservations —
//                               a run's disk image is sparse, so what it has not written yet is not yet
//                               used on the store, yet it may write it). Measured free capacity is not reduced
//                               by reservations: running work already shows in it, so the measured check
//                               guards against load WORLDLINE did not start, and the ceilings against
//                               overcommitting ourselves.
//   5. ADMITTED                 `reserve` holds the resolved request: what to reserve and to put on the unit.
import {
  ADMISSION_STAGES,
  NODE_RESOURCES,
  WORLD_RESOURCE_FIELDS,
  policyProblems,
  type AdmissionOutcome,
  type AdmissionStage,
  type NodeCeilings,
  type NodeResource,
  type PerWorldPolicy,
  type WorldResources,
} from './admission-policy.js';
import type { ObservedState } from './observe-node.js';

/** What one world or check asks for; an unset field resolves to the per-world default. */
export type ResourceRequest = Partial<WorldResources>;

export interface DecideRequest extends ResourceRequest {
  stage: AdmissionStage;
}

/** A live reservation as the decision needs it (the store's rows carry more). */
export interface ReservedAmounts {
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  ephemeralStorageBytes: number;
}

export interface Shortfall {
  resource: NodeResource;
  /** 'reserved': against the ceiling minus live reservations; 'measured': against what the kernel reports free. */
  basis: 'reserved' | 'measured';
  requested: number;
  available: number;
  short: number;
}

export interface LimitExcess {
  field: keyof WorldResources;
  requested: number;
  limit: number;
}

export type NeededMeasurement = 'memAvailableBytes' | 'tasks' | 'pidMax' | 'storeFreeBytes';

export interface Decision {
  outcome: AdmissionOutcome;
  message: string;
  /** Only when ADMITTED: the resolved request (node-accounted amounts and the run's own limits). */
  reserve?: WorldResources;
  /** RESOURCES_UNAVAILABLE: every resource that does not fit, and by how much. */
  shortfalls?: Shortfall[];
  /** RESOURCE_LIMIT_EXCEEDED: every field above its per-world limit. */
  exceeded?: LimitExcess[];
  /** RESOURCE_STATE_UNKNOWN: the measurements that could not be taken. */
  unknown?: NeededMeasurement[];
}

export interface ReservedTotals {
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  /** The number of live reservations. */
  worlds: number;
  ephemeralStorageBytes: number;
}

/** The totals of live reservations, given as the reservations themselves or as their running account. */
export type LiveReservations = readonly ReservedAmounts[] | ReservedTotals;

function totalsOf(live: LiveReservations): ReservedTotals {
  return Array.isArray(live) ? sumReservations(live as readonly ReservedAmounts[]) : (live as ReservedTotals);
}

export function sumReservations(reservations: readonly ReservedAmounts[]): ReservedTotals {
  const t: ReservedTotals = { cpuMillis: 0, memoryBytes: 0, pids: 0, worlds: 0, ephemeralStorageBytes: 0 };
  for (const r of reservations) {
    t.cpuMillis += r.cpuMillis;
    t.memoryBytes += r.memoryBytes;
    t.pids += r.pids;
    t.worlds += 1;
    t.ephemeralStorageBytes += r.ephemeralStorageBytes;
  }
  return t;
}

const CEILING_OF: Record<NodeResource, keyof NodeCeilings> = { cpu_millis: 'cpuMillis', memory_bytes: 'memoryBytes', pids: 'pids', worlds: 'worlds', ephemeral_storage_bytes: 'ephemeralStorageBytes' };

function amount(resource: NodeResource | keyof WorldResources, n: number): string {
  if (resource === 'memory_bytes' || resource === 'memoryBytes' || resource === 'outputBytes' || resource === 'ephemeral_storage_bytes' || resource === 'ephemeralStorageBytes') {
    if (n >= 2 ** 30 && n % 2 ** 20 === 0) return `${n} bytes (${(n / 2 ** 30).toFixed(2)}Gi)`;
    if (n >= 2 ** 20) return `${n} bytes (${(n / 2 ** 20).toFixed(1)}Mi)`;
    return `${n} bytes`;
  }
  if (resource === 'cpu_millis' || resource === 'cpuMillis') return `${n}m CPU`;
  if (resource === 'wallTimeSeconds') return `${n}s`;
  if (resource === 'worlds') return `${n} ${n === 1 ? 'reservation' : 'reservations'}`;
  return `${n} tasks`;
}

function requestProblems(request: DecideRequest): string[] {
  const out: string[] = [];
  if (!(ADMISSION_STAGES as readonly unknown[]).includes(request?.stage)) out.push(`stage "${String(request?.stage)}" is not one of ${ADMISSION_STAGES.join(', ')}`);
  for (const f of WORLD_RESOURCE_FIELDS) {
    const v: unknown = request?.[f];
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)) out.push(`requested ${f} ${typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? typeof v)} is not a positive integer`);
  }
  return out;
}

/** Resolve unset request fields to the per-world defaults. */
export function resolveRequest(request: ResourceRequest, perWorld: PerWorldPolicy): WorldResources {
  const r = {} as WorldResources;
  for (const f of WORLD_RESOURCE_FIELDS) r[f] = request[f] ?? perWorld.defaults[f];
  return r;
}

export function decide(
  request: DecideRequest,
  ceilings: NodeCeilings,
  perWorld: PerWorldPolicy,
  observed: ObservedState,
  reservations: LiveReservations,
): Decision {
  // 1. policy (node and request)
  const policy = policyProblems(ceilings, perWorld).map((p) => p.problem);
  const req = requestProblems(request);
  if (policy.length > 0 || req.length > 0) {
    return { outcome: 'RESOURCE_POLICY_INVALID', message: [...policy, ...req].join('; ') };
  }

  // 2. per-world limits
  const want = resolveRequest(request, perWorld);
  const exceeded: LimitExcess[] = [];
  for (const f of WORLD_RESOURCE_FIELDS) {
    if (want[f] > perWorld.limits[f]) exceeded.push({ field: f, requested: want[f], limit: perWorld.limits[f] });
  }
  if (exceeded.length > 0) {
    return {
      outcome: 'RESOURCE_LIMIT_EXCEEDED',
      message: `the ${request.stage} asks for more than one world may have: ${exceeded
        .map((e) => `${e.field} ${amount(e.field, e.requested)} is above the limit of ${amount(e.field, e.limit)}`)
        .join('; ')}`,
      exceeded,
    };
  }

  // 3. measurements the decision needs
  const unknown: NeededMeasurement[] = [];
  const measured = (k: NeededMeasurement): number | undefined => {
    const v = observed?.[k];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return v;
    unknown.push(k);
    return undefined;
  };
  const memFree = measured('memAvailableBytes');
  const tasks = measured('tasks');
  const pidMax = measured('pidMax');
  const storeFree = measured('storeFreeBytes');
  if (memFree === undefined || tasks === undefined || pidMax === undefined || storeFree === undefined) {
    return {
      outcome: 'RESOURCE_STATE_UNKNOWN',
      message: `the node's state could not be measured (${unknown.join(', ')}), so whether the ${request.stage} fits is unknown; nothing was reserved`,
      unknown,
    };
  }

  // 4. accounting against the ceilings, then against what the kernel reports free
  const reserved = totalsOf(reservations);
  const need: Record<NodeResource, number> = { cpu_millis: want.cpuMillis, memory_bytes: want.memoryBytes, pids: want.pids, worlds: 1, ephemeral_storage_bytes: want.ephemeralStorageBytes };
  const shortfalls: Shortfall[] = [];
  for (const resource of NODE_RESOURCES) {
    const key = CEILING_OF[resource];
    const available = Math.max(0, ceilings[key] - reserved[key]);
    if (need[resource] > available) shortfalls.push({ resource, basis: 'reserved', requested: need[resource], available, short: need[resource] - available });
  }
  if (want.memoryBytes > memFree) {
    shortfalls.push({ resource: 'memory_bytes', basis: 'measured', requested: want.memoryBytes, available: memFree, short: want.memoryBytes - memFree });
  }
  const tasksFree = Math.max(0, pidMax - tasks);
  if (want.pids > tasksFree) {
    shortfalls.push({ resource: 'pids', basis: 'measured', requested: want.pids, available: tasksFree, short: want.pids - tasksFree });
  }
  const diskFree = diskFreeForNew(storeFree, reserved, observed.storeUsedByRunsBytes);
  if (want.ephemeralStorageBytes > diskFree) {
    shortfalls.push({ resource: 'ephemeral_storage_bytes', basis: 'measured', requested: want.ephemeralStorageBytes, available: diskFree, short: want.ephemeralStorageBytes - diskFree });
  }
  if (shortfalls.length > 0) {
    const describe = (s: Shortfall): string =>
      s.basis === 'reserved'
        ? `${s.resource}: asks ${amount(s.resource, s.requested)}, ${amount(s.resource, s.available)} left of the node ceiling ${amount(s.resource, ceilings[CEILING_OF[s.resource]])} after ${reserved.worlds} live ${reserved.worlds === 1 ? 'reservation' : 'reservations'} (short by ${amount(s.resource, s.short)})`
        : `${s.resource}: asks ${amount(s.resource, s.requested)}, the kernel reports ${amount(s.resource, s.available)} free (short by ${amount(s.resource, s.short)})`;
    return {
      outcome: 'RESOURCES_UNAVAILABLE',
      message: `the node cannot hold the ${request.stage} now: ${shortfalls.map(describe).join('; ')}`,
      shortfalls,
    };
  }

  // 5.
  return {
    outcome: 'ADMITTED',
    message: `admitted the ${request.stage}: ${amount('cpu_millis', want.cpuMillis)}, ${amount('memory_bytes', want.memoryBytes)}, ${amount('pids', want.pids)}, wall time ${want.wallTimeSeconds}s, output ${amount('outputBytes', want.outputBytes)}, ephemeral storage ${amount('ephemeralStorageBytes', want.ephemeralStorageBytes)}`,
    reserve: want,
  };
}

/**
 * Store space a new run may still claim: the measured free space (already less the host's reserve) less
 * what the live runs may yet write into their sparse images (their reservations minus what their images
 * hold now, `usedByRuns`; when that is unknown, their whole reservations). Never below 0.
 */
export function diskFreeForNew(storeFree: number, reservations: LiveReservations, usedByRuns: number | 'unknown' | undefined): number {
  const reserved = totalsOf(reservations).ephemeralStorageBytes;
  const used = typeof usedByRuns === 'number' && Number.isFinite(usedByRuns) && usedByRuns >= 0 ? Math.min(usedByRuns, reserved) : 0;
  return Math.max(0, storeFree - (reserved - used));
}
