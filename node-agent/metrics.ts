// The node-agent's own Prometheus metrics, in one typed object others observe into. Every label takes
// values from a small fixed set (stages, outcomes, resources, phases, reason codes): never a world's name,
// a namespace, a uid or a host, so the number of series stays bounded however many worlds run.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ADMISSION_OUTCOMES, ADMISSION_STAGES, NODE_RESOURCES, type AdmissionOutcome, type AdmissionStage, type NodeCeilings, type NodeResource } from './admission/admission-policy.js';
import type { ReservedTotals } from './admission/admission-decide.js';
import { REASONS } from '../core/collapse/decide.js';
import { FAVOR_DYNMODS_STATES, type FavorDynmodsState } from './sandbox/cgroup-dynmods.js';

export const WORLD_PHASES = ['Pending', 'Admitted', 'Running', 'Captured', 'Collapsed', 'Refused', 'Failed'] as const;
export type WorldPhase = (typeof WORLD_PHASES)[number];

export const ISOLATION_OUTCOMES = ['reported-sufficient', 'rejected', 'unsupported'] as const;
export type IsolationOutcome = (typeof ISOLATION_OUTCOMES)[number];

/** A reason label must look like a code (UPPER_SNAKE, CamelCase, kebab-case); anything else is counted as 'other'. */
const REASON_CODE = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export interface AgentMetrics {
  readonly registry: Registry;
  readonly admissionDecisions: Counter<'stage' | 'outcome'>;
  readonly admissionReserved: Gauge<'resource'>;
  readonly admissionCapacity: Gauge<'resource'>;
  readonly networkRefusals: Counter;
  readonly isolationDecisions: Counter<'stage' | 'outcome' | 'reason'>;
  readonly isolationWaivers: Counter<'outcome'>;
  readonly worlds: Gauge<'phase'>;
  readonly forkDuration: Histogram;
  readonly captureDuration: Histogram;
  readonly checkVerdicts: Counter<'verdict' | 'reason'>;
  readonly collapses: Counter<'mode' | 'state' | 'reason'>;
  readonly collapseDuration: Histogram<'state'>;
  readonly receiptLedgerVerified: Gauge;
  readonly primeRehashes: Counter<'by'>;
  readonly ownerEdits: Counter<'outcome'>;
  readonly compactions: Counter<'outcome'>;
  readonly compactionDuration: Histogram;
  readonly upkeepBacklog: Gauge;

  /** Count one admission answer. */
  admission(stage: AdmissionStage, outcome: AdmissionOutcome): void;
  /** Set the reserved gauges from the live reservations' totals. */
  setReserved(totals: ReservedTotals): void;
  /** Set the capacity gauges from the node ceilings. */
  setCapacity(ceilings: NodeCeilings): void;
  /** Count one isolation decision; `reason` must be a code (free text is counted as 'other'). */
  isolation(stage: AdmissionStage, outcome: IsolationOutcome, reason: string): void;
  /** Count one isolation waiver presented at launch: SPENT, or the code it was refused with. */
  waiver(outcome: string): void;
  /** Set how many worlds on this node are in each phase (phases left out are set to 0). */
  setWorlds(counts: Partial<Record<WorldPhase, number>>): void;
  /** Time a fork (or capture): call the returned function when it ends; it records seconds. */
  timeFork(): () => number;
  timeCapture(): () => number;
  /** Count one finished check run: verdict PASS, FAIL or REFUSED, and its reason code when it has one. */
  checkVerdict(verdict: string, reason?: string): void;
  /** Count one final collapse transaction (COMMITTED or DENIED, its first reason) and its duration in seconds. */
  collapse(mode: string, state: string, reason: string | undefined, seconds: number): void;
  /** Record whether the receipt ledger passed verification when it was opened (1) or failed it (0). */
  ledgerVerified(ok: boolean): void;
  /** Count one re-hash of live PRIME for a collapse decision: walked, or vouched for by the PRIME watcher. */
  primeRehash(by: 'walk' | 'watcher'): void;
  /** Count one owner's edit published (PUBLISHED), or a failure to publish one by its code (once per distinct failure). */
  ownerEdit(outcome: string): void;
  /** Count one background compaction that ran (compacted, refused or failed) and, when compacted, its seconds. */
  compaction(outcome: 'compacted' | 'refused' | 'failed', seconds?: number): void;
  /** Set how many Roots wait for, or are in, PRIME's background upkeep (compaction or measurement). */
  backlog(roots: number): void;
  /** Record what setting favordynmods found at start (sandbox/cgroup-dynmods.ts), or `off` when not asked to. */
  favorDynmods(state: FavorDynmodsState): void;
}

function getOrCreate<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

/** Every first reason a denial can carry: the collapse decision's and the node's own (pre-set to 0 below). */
const DENIAL_REASONS = [...REASONS, 'COLLAPSE_FAILED', 'COLLAPSE_INTERRUPTED', 'LIVE_MAPPING_BROKEN', 'ROOT_NOT_FOUND', 'WORLD_ALREADY_COLLAPSED', 'CHECKPOINT_NOT_COLLAPSED'];

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Create (or reuse, when already registered on `registry`) the node-agent metrics. */
export function createAgentMetrics(registry: Registry): AgentMetrics {
  const registers = [registry];
  const admissionDecisions = getOrCreate(registry, 'worldline_admission_decisions_total', () =>
    new Counter({ name: 'worldline_admission_decisions_total', help: 'Admission answers by stage (agent, check) and outcome.', labelNames: ['stage', 'outcome'] as const, registers }),
  );
  const admissionReserved = getOrCreate(registry, 'worldline_admission_reserved', () =>
    new Gauge({ name: 'worldline_admission_reserved', help: 'Node resources held by live admission reservations (worlds: the number of reservations).', labelNames: ['resource'] as const, registers }),
  );
  const admissionCapacity = getOrCreate(registry, 'worldline_admission_capacity', () =>
    new Gauge({ name: 'worldline_admission_capacity', help: 'The node ceilings admission accounts against.', labelNames: ['resource'] as const, registers }),
  );
  const networkRefusals = getOrCreate(registry, 'worldline_network_refusals_total', () =>
    new Counter({ name: 'worldline_network_refusals_total', help: 'Network connections refused to worlds on this node.', registers }),
  );
  const isolationDecisions = getOrCreate(registry, 'worldline_isolation_decisions_total', () =>
    new Counter({ name: 'worldline_isolation_decisions_total', help: 'Isolation decisions by stage, outcome and reason code.', labelNames: ['stage', 'outcome', 'reason'] as const, registers }),
  );
  const worlds = getOrCreate(registry, 'worldline_worlds', () =>
    new Gauge({ name: 'worldline_worlds', help: 'Worlds bound to this node, by phase.', labelNames: ['phase'] as const, registers }),
  );
  const forkDuration = getOrCreate(registry, 'worldline_fork_duration_seconds', () =>
    new Histogram({ name: 'worldline_fork_duration_seconds', help: 'Time to fork a world from its base generations.', buckets: DURATION_BUCKETS, registers }),
  );
  const captureDuration = getOrCreate(registry, 'worldline_capture_duration_seconds', () =>
    new Histogram({ name: 'worldline_capture_duration_seconds', help: 'Time to capture a world\'s candidate.', buckets: DURATION_BUCKETS, registers }),
  );

  const checkVerdicts = getOrCreate(registry, 'worldline_check_verdicts_total', () =>
    new Counter({ name: 'worldline_check_verdicts_total', help: 'Finished check runs by verdict and reason code (none for a plain PASS or FAIL).', labelNames: ['verdict', 'reason'] as const, registers }),
  );
  const collapses = getOrCreate(registry, 'worldline_collapses_total', () =>
    new Counter({ name: 'worldline_collapses_total', help: 'Final collapse transactions by mode, state (COMMITTED, DENIED) and first reason code.', labelNames: ['mode', 'state', 'reason'] as const, registers }),
  );
  const collapseDuration = getOrCreate(registry, 'worldline_collapse_duration_seconds', () =>
    new Histogram({ name: 'worldline_collapse_duration_seconds', help: 'Time from taking a Collapse to its final state, by state.', labelNames: ['state'] as const, buckets: DURATION_BUCKETS, registers }),
  );
  const isolationWaivers = getOrCreate(registry, 'worldline_isolation_waivers_total', () =>
    new Counter({ name: 'worldline_isolation_waivers_total', help: 'Isolation waivers presented at launch, by outcome: SPENT or the refusal code.', labelNames: ['outcome'] as const, registers }),
  );
  const receiptLedgerVerified = getOrCreate(registry, 'worldline_receipt_ledger_verified', () =>
    new Gauge({ name: 'worldline_receipt_ledger_verified', help: '1 when the receipt ledger passed verification as the agent opened it, 0 when it failed (no Collapse is served until it is repaired).', registers }),
  );

  const primeRehashes = getOrCreate(registry, 'worldline_prime_rehashes_total', () =>
    new Counter({ name: 'worldline_prime_rehashes_total', help: 'Re-hashes of live PRIME for collapse decisions, by how: walk (the tree walked) or watcher (a recorded walk the PRIME watcher vouched for).', labelNames: ['by'] as const, registers }),
  );

  const ownerEdits = getOrCreate(registry, 'worldline_owner_edits_total', () =>
    new Counter({ name: 'worldline_owner_edits_total', help: "Owners' edits made through a Root's host path: PUBLISHED as a generation, or the code a publication failed with (counted once per distinct failure).", labelNames: ['outcome'] as const, registers }),
  );

  const compactions = getOrCreate(registry, 'worldline_compactions_total', () =>
    new Counter({ name: 'worldline_compactions_total', help: "Background compactions of a Root's PRIME stack that ran, by outcome: compacted (published), refused (the tree did not walk to the generation's digest) or failed.", labelNames: ['outcome'] as const, registers }),
  );
  const compactionDuration = getOrCreate(registry, 'worldline_compaction_duration_seconds', () =>
    new Histogram({ name: 'worldline_compaction_duration_seconds', help: 'Time a published background compaction took: build, sealed walk and PRIME re-measured.', buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers }),
  );

  const upkeepBacklog = getOrCreate(registry, 'worldline_upkeep_backlog', () =>
    new Gauge({ name: 'worldline_upkeep_backlog', help: "Roots waiting for, or in, the background upkeep of their PRIME (a compaction of a deep stack, or a walk that measures PRIME ahead of the next collapse).", registers }),
  );

  const favorDynmodsState = getOrCreate(registry, 'worldline_cgroup_favor_dynmods', () =>
    new Gauge({ name: 'worldline_cgroup_favor_dynmods', help: "1 for what setting the kernel's favordynmods cgroup option found at agent start (enabled, already, refused, no-cgroup2, off), 0 for the rest. Without it each launch's first cgroup move may wait ~10 ms.", labelNames: ['state'] as const, registers }),
  );

  // Every bounded series exists from the start, so a rate over it has a zero to start from.
  for (const by of ['walk', 'watcher'] as const) primeRehashes.inc({ by }, 0);
  for (const outcome of ['PUBLISHED', 'OWNER_EDIT_UNPUBLISHABLE']) ownerEdits.inc({ outcome }, 0);
  for (const outcome of ['compacted', 'refused', 'failed']) compactions.inc({ outcome }, 0);
  for (const stage of ADMISSION_STAGES) for (const outcome of ADMISSION_OUTCOMES) admissionDecisions.inc({ stage, outcome }, 0);
  for (const resource of NODE_RESOURCES) admissionReserved.set({ resource }, 0);
  for (const phase of WORLD_PHASES) worlds.set({ phase }, 0);
  networkRefusals.inc(0);
  isolationWaivers.inc({ outcome: 'SPENT' }, 0);
  for (const verdict of ['PASS', 'FAIL', 'REFUSED']) checkVerdicts.inc({ verdict, reason: 'none' }, 0);
  for (const mode of ['Candidate', 'CheckpointReturn']) {
    collapses.inc({ mode, state: 'COMMITTED', reason: 'none' }, 0);
    for (const reason of DENIAL_REASONS) collapses.inc({ mode, state: 'DENIED', reason }, 0);
  }
  for (const state of ['COMMITTED', 'DENIED']) collapseDuration.zero({ state });
  for (const stage of ADMISSION_STAGES) isolationDecisions.inc({ stage, outcome: 'reported-sufficient', reason: 'NONE' }, 0);

  const stageLabel = (s: string): string => ((ADMISSION_STAGES as readonly string[]).includes(s) ? s : 'unknown');
  const set = (g: Gauge<'resource'>, values: Record<NodeResource, number>): void => {
    for (const resource of NODE_RESOURCES) g.set({ resource }, values[resource]);
  };
  return {
    registry,
    admissionDecisions,
    admissionReserved,
    admissionCapacity,
    networkRefusals,
    isolationDecisions,
    isolationWaivers,
    worlds,
    forkDuration,
    captureDuration,
    admission: (stage, outcome) => admissionDecisions.inc({ stage: stageLabel(stage), outcome }),
    setReserved: (t) => set(admissionReserved, { cpu_millis: t.cpuMillis, memory_bytes: t.memoryBytes, pids: t.pids, worlds: t.worlds, ephemeral_storage_bytes: t.ephemeralStorageBytes }),
    setCapacity: (c) => set(admissionCapacity, { cpu_millis: c.cpuMillis, memory_bytes: c.memoryBytes, pids: c.pids, worlds: c.worlds, ephemeral_storage_bytes: c.ephemeralStorageBytes }),
    isolation: (stage, outcome, reason) =>
      isolationDecisions.inc({ stage: stageLabel(stage), outcome, reason: REASON_CODE.test(reason) ? reason : 'other' }),
    waiver: (outcome) => isolationWaivers.inc({ outcome: REASON_CODE.test(outcome) ? outcome : 'other' }),
    setWorlds: (counts) => {
      for (const phase of WORLD_PHASES) worlds.set({ phase }, counts[phase] ?? 0);
    },
    timeFork: () => forkDuration.startTimer(),
    timeCapture: () => captureDuration.startTimer(),
    checkVerdicts,
    collapses,
    collapseDuration,
    checkVerdict: (verdict, reason) => checkVerdicts.inc({ verdict: ['PASS', 'FAIL', 'REFUSED'].includes(verdict) ? verdict : 'other', reason: reason === undefined ? 'none' : REASON_CODE.test(reason) ? reason : 'other' }),
    collapse: (mode, state, reason, seconds) => {
      const st = state === 'COMMITTED' || state === 'DENIED' ? state : 'other';
      collapses.inc({ mode: mode === 'Candidate' || mode === 'CheckpointReturn' ? mode : 'other', state: st, reason: reason === undefined || st === 'COMMITTED' ? 'none' : REASON_CODE.test(reason) ? reason : 'other' });
      collapseDuration.observe({ state: st }, seconds);
    },
    receiptLedgerVerified,
    ledgerVerified: (ok) => receiptLedgerVerified.set(ok ? 1 : 0),
    primeRehashes,
    primeRehash: (by) => primeRehashes.inc({ by }),
    ownerEdits,
    ownerEdit: (outcome) => ownerEdits.inc({ outcome: outcome === 'PUBLISHED' || REASON_CODE.test(outcome) ? outcome : 'other' }),
    compactions,
    compactionDuration,
    compaction: (outcome, seconds) => {
      compactions.inc({ outcome });
      if (seconds !== undefined) compactionDuration.observe(seconds);
    },
    upkeepBacklog,
    backlog: (roots) => upkeepBacklog.set(roots),
    favorDynmods: (state) => {
      for (const s of FAVOR_DYNMODS_STATES) favorDynmodsState.set({ state: s }, s === state ? 1 : 0);
    },
  };
}
