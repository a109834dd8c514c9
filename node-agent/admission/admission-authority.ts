// The node's one admission authority. Every start of supervised work (an agent world, a check run) asks
// admit() first and calls release() when the work has ended; the reservation in between is a row of the
// node store's `reservations` table, so it survives an agent restart (see recover()).
//
// One admit() is observe -> lock -> account -> reserve -> authorize, all inside one SQLite
// `BEGIN IMMEDIATE` transaction: the write lock is taken before the live reservations are read, so no
// other connection (in this process or another, on a database that allows several) can reserve between
// our reading and our writing. Inside the node store, which holds its database in EXCLUSIVE locking mode,
// no other process can even open it.
//   observe    measure the node (observe(); a throw counts as every measurement unknown)
//   lock       BEGIN IMMEDIATE
//   account    read the running account of the live reservations (reservation_totals: one row the
//              store's triggers keep equal to their sum, in the same transaction as each change)
//   reserve    decide(); when ADMITTED insert the holder's row
//   authorize  read the account again and check every ceiling still holds, else roll back (an
//              invariant failure, AdmissionInvariantError); COMMIT
// The account is checked against the rows summed once, at start.
import type { Database, Statement } from 'better-sqlite3';
import type { CheckResources } from '../../core/evidence/requirement.js';
import { decide, resolveRequest, sumReservations, type Decision, type ReservedTotals, type ResourceRequest } from './admission-decide.js';
import { WORLD_RESOURCE_FIELDS, type AdmissionOutcome, type AdmissionStage, type NodeCeilings, type PerWorldPolicy, type WorldResources } from './admission-policy.js';
import { UNKNOWN_STATE, type ObservedState } from './observe-node.js';

/** The admission authority as worlds and checks use it (a malformed node policy answers RESOURCE_POLICY_INVALID). */
export interface RunAdmission {
  admit(holder: string, stage: 'agent' | 'check', requested: Partial<WorldResources>): { outcome: string; message: string; reserve?: WorldResources };
  release(holder: string): void;
  /** What a check gets (it asks for nothing, so the per-run defaults); null when the node's policy is invalid. */
  checkResources(): CheckResources | null;
}

/** The resources a run that asks for nothing gets under `perWorld` (what every check gets), as the requirement binds them. */
export function checkResourcesOf(perWorld: PerWorldPolicy): CheckResources {
  const r = resolveRequest({}, perWorld);
  return { cpuMillis: r.cpuMillis, memoryBytes: r.memoryBytes, pids: r.pids, outputBytes: r.outputBytes, ephemeralStorageBytes: r.ephemeralStorageBytes };
}

/** What the authority reports to Prometheus (the node-agent's metrics implement it). */
export interface AdmissionMetrics {
  admission(stage: AdmissionStage, outcome: AdmissionOutcome): void;
  setReserved(totals: ReservedTotals): void;
  setCapacity(ceilings: NodeCeilings): void;
}

export interface Reservation {
  holder: string;
  stage: AdmissionStage;
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  ephemeralStorageBytes: number;
  /** ISO 8601, from the authority's clock. */
  createdAt: string;
}

export interface AdmitRequest {
  /** Who holds the reservation: a world's uid, or a check run's id. One reservation per holder. */
  holder: string;
  stage: AdmissionStage;
  /** Unset fields resolve to the per-world defaults. */
  resources?: ResourceRequest;
}

export interface AdmissionResult extends Decision {
  holder: string;
  stage: AdmissionStage;
  /** True when the holder already held a reservation and this answer hands it back unchanged. */
  existing: boolean;
  /** The holder's reservation (only when ADMITTED). */
  reservation?: Reservation;
}

export interface RecoveryResult {
  kept: string[];
  dropped: string[];
}

export interface AdmissionAuthorityOptions {
  /** The node store's database (migrated: it has the reservations table). */
  db: Database;
  ceilings: NodeCeilings;
  perWorld: PerWorldPolicy;
  /** Measures the node: observeNode from observe-node.ts, or a fake in tests. */
  observe: () => ObservedState;
  clock?: () => Date;
  metrics?: AdmissionMetrics;
}

/** The reservations would exceed a ceiling after an admission: a bug in the decision, never a refusal. */
export class AdmissionInvariantError extends Error {
  override readonly name = 'AdmissionInvariantError';
}

interface Row {
  holder: string;
  stage: AdmissionStage;
  cpu_millis: number;
  memory_bytes: number;
  pids: number;
  ephemeral_storage_bytes: number;
  created_at: string;
}

interface TotalsRow {
  cpu: number;
  mem: number;
  pids: number;
  disk: number;
  n: number;
}

/** Every amount the live reservations hold together, as totals() names them. */
const RESERVED_KEYS = ['cpuMillis', 'memoryBytes', 'pids', 'worlds', 'ephemeralStorageBytes'] as const satisfies readonly (keyof ReservedTotals)[];

const toReservation = (r: Row): Reservation => ({
  holder: r.holder,
  stage: r.stage,
  cpuMillis: r.cpu_millis,
  memoryBytes: r.memory_bytes,
  pids: r.pids,
  ephemeralStorageBytes: r.ephemeral_storage_bytes,
  createdAt: r.created_at,
});

export class AdmissionAuthority {
  readonly ceilings: NodeCeilings;
  readonly perWorld: PerWorldPolicy;
  private readonly db: Database;
  private readonly observe: () => ObservedState;
  private readonly clock: () => Date;
  private readonly metrics: AdmissionMetrics | undefined;
  private readonly selectOne: Statement<[string], Row>;
  private readonly selectAll: Statement<[], Row>;
  private readonly selectTotals: Statement<[], TotalsRow>;
  private readonly insert: Statement<[string, string, number, number, number, number, string]>;
  private readonly remove: Statement<[string]>;
  private readonly admitTx: { immediate(req: AdmitRequest): { result: AdmissionResult; totals: ReservedTotals } };
  private readonly recoverTx: { immediate(live: ReadonlySet<string>): { result: RecoveryResult; totals: ReservedTotals } };

  constructor(options: AdmissionAuthorityOptions) {
    this.db = options.db;
    this.ceilings = Object.freeze({ ...options.ceilings });
    this.perWorld = Object.freeze({ limits: Object.freeze({ ...options.perWorld.limits }), defaults: Object.freeze({ ...options.perWorld.defaults }) });
    this.observe = options.observe;
    this.clock = options.clock ?? (() => new Date());
    this.metrics = options.metrics;
    this.selectOne = this.db.prepare<[string], Row>('SELECT holder, stage, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, created_at FROM reservations WHERE holder = ?');
    this.selectAll = this.db.prepare<[], Row>('SELECT holder, stage, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, created_at FROM reservations ORDER BY created_at, holder');
    // The running account (reservation_totals, kept by triggers in each reservation's own transaction):
    // one row, whatever the number of live reservations.
    this.selectTotals = this.db.prepare<[], TotalsRow>('SELECT cpu_millis AS cpu, memory_bytes AS mem, pids, ephemeral_storage_bytes AS disk, worlds AS n FROM reservation_totals WHERE id = 1');
    this.checkAccount();
    this.insert = this.db.prepare('INSERT INTO reservations (holder, stage, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    this.remove = this.db.prepare('DELETE FROM reservations WHERE holder = ?');
    this.admitTx = this.db.transaction((req: AdmitRequest) => this.admitLocked(req));
    this.recoverTx = this.db.transaction((live: ReadonlySet<string>) => this.recoverLocked(live));
    this.metrics?.setCapacity(this.ceilings);
    this.metrics?.setReserved(this.totals());
  }

  /**
   * Ask to start supervised work. Exactly one outcome; only ADMITTED reserves. Idempotent per holder: a
   * holder that already has a reservation gets it back (existing: true) without a new decision, whatever it
   * asks for now — release it first to ask again with other resources. Throws only for a holder that is
   * not a non-empty string, a database failure, or an AdmissionInvariantError.
   */
  admit(req: AdmitRequest): AdmissionResult {
    if (typeof req?.holder !== 'string' || req.holder.length === 0 || req.holder.length > 512) {
      throw new TypeError(`admission holder must be a non-empty string of at most 512 characters, got ${JSON.stringify(req?.holder)}`);
    }
    const { result, totals } = this.admitTx.immediate(req);
    this.metrics?.admission(req.stage, result.outcome);
    this.metrics?.setReserved(totals);
    return result;
  }

  /** End a holder's reservation; false when it held none (releasing twice is harmless). */
  release(holder: string): boolean {
    const changed = this.remove.run(holder).changes > 0;
    if (changed) this.metrics?.setReserved(this.totals());
    return changed;
  }

  /** Live reservations, oldest first. */
  reservations(): Reservation[] {
    return this.selectAll.all().map(toReservation);
  }

  /** What the live reservations hold together (worlds: how many there are), from the running account. */
  totals(): ReservedTotals {
    const t = this.selectTotals.get();
    if (!t) throw new AdmissionInvariantError('the reservation account (reservation_totals) has no row: the store was changed outside the node-agent');
    return { cpuMillis: t.cpu, memoryBytes: t.mem, pids: t.pids, worlds: t.n, ephemeralStorageBytes: t.disk };
  }

  /**
   * At start, the running account must equal the reservations summed (once, O(reservations)): a store
   * edited outside the node-agent is refused rather than admitted against a wrong account.
   */
  private checkAccount(): void {
    // One read transaction: both reads see the same snapshot, whatever another connection commits between them.
    const { summed, account } = this.db.transaction(() => ({ summed: sumReservations(this.selectAll.all().map(toReservation)), account: this.totals() }))();
    const off = RESERVED_KEYS.filter((k) => summed[k] !== account[k]);
    if (off.length > 0) {
      throw new AdmissionInvariantError(`the reservation account disagrees with the live reservations on ${off.map((k) => `${k} (${account[k]} vs ${summed[k]})`).join(', ')}: the store was changed outside the node-agent`);
    }
  }

  /**
   * After an agent restart, before admitting anything: keep the reservation of every holder in
   * `liveHolders` (work that is still running, or that the agent will resume or clean up itself) and drop
   * every other (work that ended or was lost while the agent was down, so nothing will release it).
   * Runs under the same lock as admit(). Kept reservations are not re-decided: if the ceilings were
   * lowered, the totals may stand above them until work ends, and admission refuses meanwhile.
   */
  recover(liveHolders: ReadonlySet<string>): RecoveryResult {
    const { result, totals } = this.recoverTx.immediate(liveHolders);
    this.metrics?.setReserved(totals);
    return result;
  }

  private admitLocked(req: AdmitRequest): { result: AdmissionResult; totals: ReservedTotals } {
    const base = { holder: req.holder, stage: req.stage };
    const held = this.selectOne.get(req.holder);
    if (held) {
      const reservation = toReservation(held);
      const rest = resolveRequest(withinLimits(req.resources, this.perWorld), this.perWorld);
      const reserve: WorldResources = { ...rest, cpuMillis: held.cpu_millis, memoryBytes: held.memory_bytes, pids: held.pids, ephemeralStorageBytes: held.ephemeral_storage_bytes };
      const result: AdmissionResult = {
        ...base,
        outcome: 'ADMITTED',
        message: `${req.holder} already holds a reservation (${held.stage}, since ${held.created_at}); it is returned unchanged`,
        reserve,
        existing: true,
        reservation,
      };
      return { result, totals: this.totals() };
    }
    let observed: ObservedState;
    try {
      observed = this.observe();
    } catch {
      observed = UNKNOWN_STATE;
    }
    const reserved = this.totals();
    const decision = decide({ ...(req.resources ?? {}), stage: req.stage }, this.ceilings, this.perWorld, observed, reserved);
    if (decision.outcome !== 'ADMITTED' || !decision.reserve) {
      return { result: { ...base, ...decision, existing: false }, totals: reserved };
    }
    const r = decision.reserve;
    const createdAt = this.clock().toISOString();
    this.insert.run(req.holder, req.stage, r.cpuMillis, r.memoryBytes, r.pids, r.ephemeralStorageBytes, createdAt);
    const totals = this.totals();
    const over = RESERVED_KEYS.filter((k) => totals[k] > this.ceilings[k]);
    if (over.length > 0) {
      throw new AdmissionInvariantError(`admitting ${req.holder} would put ${over.join(', ')} above the node ceiling; rolled back`);
    }
    const reservation: Reservation = { holder: req.holder, stage: req.stage, cpuMillis: r.cpuMillis, memoryBytes: r.memoryBytes, pids: r.pids, ephemeralStorageBytes: r.ephemeralStorageBytes, createdAt };
    return { result: { ...base, ...decision, existing: false, reservation }, totals };
  }

  private recoverLocked(live: ReadonlySet<string>): { result: RecoveryResult; totals: ReservedTotals } {
    const kept: string[] = [];
    const dropped: string[] = [];
    for (const r of this.selectAll.all()) {
      if (live.has(r.holder)) {
        kept.push(r.holder);
      } else {
        this.remove.run(r.holder);
        dropped.push(r.holder);
      }
    }
    return { result: { kept, dropped }, totals: this.totals() };
  }
}

/** The request's fields that are positive integers within the per-world limits (for an existing holder's run limits). */
function withinLimits(resources: ResourceRequest | undefined, perWorld: PerWorldPolicy): ResourceRequest {
  const out: ResourceRequest = {};
  for (const f of WORLD_RESOURCE_FIELDS) {
    const v = resources?.[f];
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= perWorld.limits[f]) out[f] = v;
  }
  return out;
}
