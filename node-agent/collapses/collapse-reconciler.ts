// Reconciles the Collapses bound to this node (status.nodeName, set by the controller). Each Collapse runs
// once, as one store transaction, on the World bound in spec.worldUID (another refuses it): PREPARED; the collapse decision (core/collapse/decide.ts) fed with what
// measure-collapse.ts measures now; then AUTHORIZED -> stage -> the collapse decision again at the serialized commit
// boundary -> one exchange -> COMMITTED, or DENIED with named reasons. COMMITTED and DENIED transactions
// each get a signed receipt. The transaction and the status document are persisted
// (collapse/collapse-transactions.ts), so a restarted agent settles what it left and never runs a
// Collapse twice. A committed World moves to phase Collapsed.
//
// Order: Collapses whose Worlds share a Root are served in order of creation (collapse-queue.ts); a
// younger one waits, phase Queued with its position. With spec.rebase, a Candidate whose base PRIME has
// left is rebased first (rebase-step.ts): phase Rebasing until the Policy's checks have run on the rebased
// bytes, then the transaction judges and commits those bytes, and the receipt names all three identities.
//
// Modes: Candidate promotes the World's captured candidate; CheckpointReturn returns PRIME to the World's
// checkpoint (the generations it forked from) after its own collapse (collapse/measure-checkpoint.ts).
// All of a World's Roots move in one exchange.
import { randomUUID } from 'node:crypto';
import { governingPolicy, type GoverningCandidate } from '../../core/policy/governing.js';
import { agentGate } from '../../core/world-binding.js';
import type { Collapse, World } from '../../crds/index.js';
import { decide, type Decision, type DecisionInput } from '../../core/collapse/decide.js';
import type { CheckResources } from '../../core/evidence/requirement.js';
import { isFinal, transition, TRANSACTION_STATES, type TransactionState } from '../../core/collapse/transaction.js';
import type { Clock } from '../../kube/clock.js';
import { setCondition, type Condition } from '../../kube/conditions.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Logger } from '../../kube/logger.js';
import type { ReconcileResult } from '../../kube/reconcile.js';
import { Informer } from '../../kube/informer.js';
import type { RefusalWriter } from '../../kube/refusal-writer.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import type { PolicyChecksView } from '../evidence/policy-requirement.js';
import { isCollapseError } from './collapse-errors.js';
import { collapseRoots, type CollapseRootRequest } from './collapse-root.js';
import type { BoundaryHashes } from './commit-generation.js';
import type { PrimeRehash } from '../store/prime-measures.js';
import { rehashPrime } from '../store/rehash-prime.js';
import { committedCandidate, getTransaction, listTransactions, putTransaction, type AgentCollapseStatus, type StatusReceipt, type TransactionRow } from './collapse-transactions.js';
import { measureCheckpointReturn } from './measure-checkpoint.js';
import { measureCandidate, type WorldView } from './measure-collapse.js';
import type { CollapseStepHooks } from './step-hooks.js';
import { receiptStatus, type ReceiptLedger, type SignedReceipt } from '../receipts/ledger.js';
import { refs } from '../api-refs.js';
import type { Store } from '../store/open-store.js';
import { checkRouting } from '../store/routing.js';
import { isStoreError } from '../store/store-errors.js';
import { getRoot, upsertRoot } from '../store/store-records.js';
import type { AgentMetrics } from '../metrics.js';
import { getWorldRecord, putWorldRecord } from '../store/world-records.js';
import { collapsedStatus, type AgentWorldStatus } from '../worlds/world-status.js';
import { rootCollapseRefusal, type GateRootView } from '../roots/root-collapse-gate.js';
import { queuePosition, type QueueEntry } from './collapse-queue.js';
import { checksPending, rebaseStep, type RebaseRecord } from './rebase-step.js';
import { GrantError, type GrantStore } from '../evidence/grant-store.js';
import { mintCollapseGrant, spendCollapseGrant, type CollapseGrant } from '../evidence/collapse-grant.js';
import { ControllerGrantRefused, type ControllerGrants, type VerifiedGrant, type VerifiedRun } from '../evidence/controller-grant.js';
import { evaluationsFor } from '../store/evaluation-records.js';
import type { StatementSigner } from '../evidence/statement-signer.js';
import { PREDICATE_TYPES, receiptSubject } from '../../core/evidence/statement.js';
import type { ReceiptBody } from '../../core/receipts/receipt.js';
import { ProgressHold } from './progress-hold.js';

/** How often a Queued or Rebasing Collapse looks again (a finishing Collapse also wakes those behind it). */
const WAIT_POLL_MS = 1_000;
/** How often an authorized Collapse looks for the controller's grant on its status. */
const GRANT_POLL_MS = 25;
/** A status the agent writes on a Collapse. */
type ProgressStatus = Omit<AgentCollapseStatus, 'transaction'> & { transaction?: AgentCollapseStatus['transaction'] };

/** The part of a Policy the collapse reads: which Roots it governs (and its age), its checks and their isolation. */
export type CollapsePolicyView = PolicyChecksView & GoverningCandidate;

function statusReceipt(r: SignedReceipt): StatusReceipt {
  const { previous, ...rest } = receiptStatus(r);
  return previous === null ? rest : { ...rest, previous };
}

const OWNED_KEYS = ['phase', 'queuePosition', 'rebase', 'transaction', 'decision', 'result', 'receipt', 'attestation', 'reason', 'message'] as const;
const OWNED_CONDITIONS = new Set(['Committed', 'Collapsed']);

export interface CollapseReconcilerDeps {
  informer: Informer<Collapse>;
  /** Writes OBJECT_SCHEMA_INVALID on a Collapse bound to this node that its schema refuses. */
  refusals: RefusalWriter;
  /** The World `namespace/name` as this node's World informer has it. */
  world: (key: string) => World | undefined;
  /** The Root object of that name as this node's Root informer has it (a Collapse into a Root not Ready is refused). */
  root: (name: string) => GateRootView | undefined;
  policies: () => readonly CollapsePolicyView[];
  store: Store;
  ledger: ReceiptLedger;
  status: StatusWriter;
  events: EventRecorder;
  clock: Clock;
  nodeName: string;
  logger: Logger;
  /** Puts a Root back on its work queue, so its status shows the new generation. */
  requeueRoot: (name: string) => void;
  /** Puts a World back on the agent's World queue, so its status shows phase Collapsed. */
  requeueWorld: (key: string) => void;
  /** Puts a Collapse back on this node's Collapse queue (those waiting behind one that finished). */
  requeueCollapse?: (key: string) => void;
  hooks?: CollapseStepHooks;
  agentMetrics?: AgentMetrics;
  /** The resources a check runs with on this node now (part of the requirement; null: unknown). */
  checkResources: () => CheckResources | null;
  /** The node's grant store: each authorization is spent there once, before its exchange. */
  grants: () => GrantStore;
  /** Whether a grant id is revoked (the trust policy's revokedGrants; none without one). */
  grantRevoked: (id: string) => boolean;
  /** Signs each receipt as a statement too (none without it). */
  statements?: StatementSigner;
  /** The controller's grants: when required, an authorized Collapse waits for one and spends it instead of its own. */
  controllerGrants?: ControllerGrants;
  /** How long a collapse holds its progress statuses (progress-hold.ts, --collapse-status-hold-ms; 0: written at once). */
  progressHoldMs: number;
}

/** A refusal before the decision or at the commit boundary: the reasons and a message. */
class Denial extends Error {
  constructor(
    readonly reasons: string[],
    message: string,
  ) {
    super(message);
  }
}

/** The collapse decision plus the summary reason PRIME_MOVED when PRIME is not where the collapse starts from. */
function judged(input: DecisionInput, moved: boolean): Decision {
  const d = decide(input);
  if (!moved || d.reasons.includes('PRIME_MOVED')) return d;
  return { authorized: false, reasons: ['PRIME_MOVED', ...d.reasons] as Decision['reasons'] };
}

/** How a mode measures (at prepare, and at the boundary with the commit's re-hashes) and what it stages. */
interface Plan {
  measure(boundary?: BoundaryHashes): Promise<{
    input: DecisionInput;
    /** PRIME is not the generation this collapse starts from (summarised as PRIME_MOVED). */
    moved: boolean;
    evidence: TransactionRow['data']['evidence'];
    requests: CollapseRootRequest[];
    before: TransactionRow['data']['roots'];
  }>;
}

export function makeNodeCollapseReconciler(d: CollapseReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const reconciler = new NodeCollapseReconciler(d);
  return (key) => reconciler.reconcile(key);
}

/** Runs each Collapse bound to this node once, as one store transaction (see the file comment). */
class NodeCollapseReconciler {
  private readonly db: Store['db'];
  private readonly hooks: CollapseStepHooks;
  /** The progress writes of the collapse running now (run()). */
  private progress: ProgressHold<ProgressStatus> | undefined;
  /** One collapse at a time on this node (settle() relies on it); the runner has one worker as well. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly d: CollapseReconcilerDeps) {
    this.db = d.store.db;
    this.hooks = d.hooks ?? { at: () => Promise.resolve() };
    this.noteInterrupted();
  }

  /**
   * Rows a previous agent left before their final state are judged now, at start, before this agent
   * commits anything: a Root one generation past a row's base was moved by that row's collapse only while
   * no other collapse has committed since (collapses run one at a time, and recoverCollapses has rolled
   * the interrupted one forward or back). Judged later, when the row's Collapse is next reconciled, a
   * commit of another Collapse in between would be taken for this one's (found by the fault campaign,
   * seed 1360220974: a Root one generation short of its Committed Collapses). A row already judged by an
   * earlier start keeps that judgement.
   */
  private noteInterrupted(): void {
    for (const state of TRANSACTION_STATES) {
      if (isFinal(state)) continue;
      for (const t of listTransactions(this.db, state)) {
        if (t.data.interrupted) continue;
        putTransaction(this.db, { ...t, data: { ...t.data, interrupted: this.judgeFromStore(t) } }, this.d.clock.now());
      }
    }
  }

  /** Whether a non-final row's collapse moved its Roots, from the store as it is now (see noteInterrupted). */
  private judgeFromStore(t: TransactionRow): NonNullable<TransactionRow['data']['interrupted']> {
    const moved = t.data.roots.map((r) => ({ r, now: getRoot(this.db, r.name) }));
    const committed = t.state === 'AUTHORIZED' && moved.length > 0 && moved.every(({ r, now }) => now && now.generation === r.fromGeneration + 1);
    if (!committed) return { committed };
    return { committed, result: moved.map(({ r, now }) => ({ root: r.name, fromGeneration: r.fromGeneration, toGeneration: now!.generation, digest: now!.digest })) };
  }

  private async applyStatus(c: Collapse, s: ProgressStatus): Promise<void> {
    // Into the informer at once (as the World reconciler's writes): no reconcile re-applies it before the echo.
    this.d.informer.observeWrite(await this.d.status.applyOwnedStatus<Collapse>(refs.Collapse, c, s, { keys: OWNED_KEYS, conditionTypes: OWNED_CONDITIONS }));
  }

  /** Committed (the transaction's outcome) and Collapsed (what `kubectl wait --for=condition=Collapsed` waits for). */
  private conditions(c: Collapse, status: 'True' | 'False' | 'Unknown', reason: string, message: string): Condition[] {
    let out = setCondition(c.status?.conditions?.filter((x) => OWNED_CONDITIONS.has(x.type)), { type: 'Committed', status, reason, message }, c.metadata.generation, this.d.clock.now());
    out = setCondition(out, { type: 'Collapsed', status, reason, message }, c.metadata.generation, this.d.clock.now());
    return out;
  }

  private objectName(c: Collapse): string {
    return `${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`;
  }

  /**
   * Append the receipt of a final transaction once. A crash (or a failure) after the append and before the
   * row recorded it finds it in the ledger by transaction id (ReceiptLedger.receiptOf: the store's receipts
   * rows, which open() backfills from the file after a crash) — not only as the head, since grouped appends
   * put other transactions' receipts after it in the same group.
   */
  private async receiptFor(t: TransactionRow, mode: 'Candidate' | 'CheckpointReturn'): Promise<SignedReceipt | StatusReceipt> {
    if (t.data.receipt) return t.data.receipt;
    const found = this.d.ledger.receiptOf(t.id, t.state);
    if (found) return found;
    const committed = t.state === 'COMMITTED';
    // Every final transaction carries its decision (deny() and the commit both set it); one without a
    // decision or a reason is a bug, never receipted under a made-up reason.
    const reason = t.data.status.reason;
    const decision = t.data.status.decision ?? (reason !== undefined ? { authorized: false, reasons: [reason] } : undefined);
    if (!decision) throw new Error(`transaction ${t.id} (${t.state}) has neither a decision nor a reason; no receipt is written for it`);
    return this.d.ledger.appendAsync({
      transaction: { id: t.id, state: committed ? 'COMMITTED' : 'DENIED' },
      world: t.data.world,
      mode,
      decision,
      evidence: t.data.evidence,
      roots: t.data.roots.map((r) => {
        const result = committed ? t.data.status.result?.find((x) => x.root === r.name) : undefined;
        return { root: r.name, fromGeneration: r.fromGeneration, toGeneration: result ? result.toGeneration : null, beforeDigest: r.beforeDigest, afterDigest: result ? result.digest : null };
      }),
      ...(t.data.rebase ? { rebase: t.data.rebase } : {}),
      issuedAt: this.d.clock.now().toISOString(),
    });
  }

  /** The receipt as a signed statement in the evidence store (none without a signer, or if signing fails: logged). */
  private attest(c: Collapse, body: ReceiptBody): { digest: string; envelope: string } | undefined {
    if (!this.d.statements) return undefined;
    try {
      return this.d.statements.sign(receiptSubject(body), PREDICATE_TYPES.collapseReceipt, body);
    } catch (e) {
      this.d.logger.warn('could not sign the receipt as a statement', { collapse: this.objectName(c), error: (e as Error).message });
      return undefined;
    }
  }

  /** A committed World's record moves to phase Collapsed (idempotent); the World queue applies it. */
  private markWorldCollapsed(t: TransactionRow, c: Collapse): void {
    const rec = getWorldRecord(this.db, t.data.world.uid);
    if (!rec || rec.state === 'collapsed') return;
    const message = `collapsed by ${c.metadata.name ?? ''}: ${t.data.status.message ?? ''}`;
    const status = collapsedStatus(rec.status as AgentWorldStatus, message, this.d.clock.now());
    putWorldRecord(this.db, { uid: rec.uid, namespace: rec.namespace, name: rec.name, state: 'collapsed', status }, this.d.clock.now());
    this.d.requeueWorld(`${rec.namespace}/${rec.name}`);
  }

  /** Final state reached: persist, receipt, persist the receipt, status, event. */
  private async finish(c: Collapse, t: TransactionRow): Promise<void> {
    const firstTime = !t.data.receipt;
    putTransaction(this.db, t, this.d.clock.now());
    if (t.state === 'COMMITTED') await this.hooks.at('after-committed-row');
    const r = await this.receiptFor(t, c.spec.mode);
    await this.hooks.at('after-receipt');
    const receipt = 'body' in r ? statusReceipt(r) : r;
    t.data.receipt = receipt;
    const attestation = 'body' in r ? this.attest(c, r.body) : t.data.status.attestation;
    t.data.status = { ...t.data.status, receipt, ...(attestation ? { attestation } : {}) };
    putTransaction(this.db, t, this.d.clock.now());
    await this.hooks.at('after-receipt-row');
    this.d.logger.info('collapse receipt appended', { collapse: this.objectName(c), transaction: t.id, state: t.state, sequence: receipt.sequence, receipt: receipt.id });
    if (t.state === 'COMMITTED') this.markWorldCollapsed(t, c);
    if (firstTime) {
      const started = t.data.startedAt ? Date.parse(t.data.startedAt) : NaN;
      this.d.agentMetrics?.collapse(t.data.mode ?? 'Candidate', t.state, t.data.status.reason, Number.isFinite(started) ? Math.max(0, (this.d.clock.now().getTime() - started) / 1000) : 0);
    }
    await this.progress?.end(); // the final status supersedes a held one, and follows one under way
    await this.applyStatus(c, t.data.status);
    for (const e of this.pending()) if (e.key !== this.objectName(c)) this.d.requeueCollapse?.(e.key);
    if (t.state === 'COMMITTED') this.d.events.normal(c, 'Committed', t.data.status.message ?? '');
    else this.d.events.warning(c, t.data.status.reason ?? 'Denied', t.data.status.message ?? '');
  }

  /** Why the Root object `name` takes no collapse now (roots/root-collapse-gate.ts), or undefined. */
  private rootRefusal(name: string): ReturnType<typeof rootCollapseRefusal> {
    return rootCollapseRefusal(name, this.d.root(name), getRoot(this.db, name)?.objectUid);
  }

  /** PRIME changed outside any collapse: the store Root is marked (its status shows PrimeConsistent=False) until it re-hashes clean. */
  private markForeignWrites(c: Collapse, input: DecisionInput): void {
    if (!input.foreignWrites.measured) return;
    for (const name of input.foreignWrites.found) {
      const root = getRoot(this.db, name);
      if (!root || root.reason === 'FOREIGN_WRITE') continue;
      const message = `PRIME of ${name} no longer has the bytes of generation ${root.generation} (found by Collapse ${this.objectName(c)}); collapses of it are refused until it does again`;
      upsertRoot(this.db, { ...root, reason: 'FOREIGN_WRITE', message }, this.d.clock.now());
      this.d.logger.warn('foreign write in PRIME: root marked', { root: name, collapse: this.objectName(c) });
      this.d.requeueRoot(name);
    }
  }

  private deny(c: Collapse, t: TransactionRow, reasons: string[], message: string): TransactionRow {
    if (t.state === 'COMMITTED') throw new Error(`transaction ${t.id} is COMMITTED and cannot be denied`);
    const step = transition(t.state, { kind: 'deny', reasons });
    const state: TransactionState = step.ok ? step.state : 'DENIED';
    const reason = reasons[0];
    if (reason === undefined) throw new Error(`transaction ${t.id}: a denial needs at least one named reason`);
    return {
      ...t,
      state,
      data: {
        ...t.data,
        status: { phase: 'Denied', ...rebaseOf(t), transaction: { id: t.id, state }, decision: { authorized: false, reasons }, reason, message, conditions: this.conditions(c, 'False', reason, message) },
      },
    };
  }

  private committedStatus(c: Collapse, t: TransactionRow, result: NonNullable<AgentCollapseStatus['result']>, message: string): TransactionRow {
    return {
    ...t,
    state: 'COMMITTED',
    data: { ...t.data, status: { phase: 'Committed', ...rebaseOf(t), transaction: { id: t.id, state: 'COMMITTED' }, decision: { authorized: true, reasons: [] }, result, reason: 'COMMITTED', message, conditions: this.conditions(c, 'True', 'Committed', message) } },
    };
  }

  /** A transaction a previous agent left before its final state: settled as judged at this agent's start. */
  private settle(c: Collapse, t: TransactionRow): TransactionRow {
    // A row with no judgement was left by this agent's own collapse (an error, not a restart): judged now.
    const judged = t.data.interrupted ?? this.judgeFromStore(t);
    if (judged.committed && judged.result) {
      return this.committedStatus(c, t, judged.result, `${describe(judged.result)} (settled after an agent restart)`);
    }
    return this.deny(c, t, ['COLLAPSE_INTERRUPTED'], 'the node-agent restarted before this collapse committed; PRIME was left at its base');
  }

  /** Live PRIME's digest: vouched for by the watcher when nothing changed under its layers since a recorded walk, else walked. */
  private async walkPrime(root: { name: string }): Promise<PrimeRehash | undefined> {
    try {
      return await rehashPrime(this.d.store, root.name);
    } catch (e) {
      if (isStoreError(e)) return undefined;
      throw e;
    }
  }

  /** What is measured, and how each Root is staged, by mode; or why the World has nothing to collapse. */
  private planFor(c: Collapse, world: World, wrec: NonNullable<ReturnType<typeof getWorldRecord>>, rebase: RebaseRecord | undefined): Plan | { denied: string; message: string } {
    const roots = world.spec.roots;
    const ws = wrec.status as AgentWorldStatus;
    // A rebased candidate is measured as the World's candidate on the generations it was rebased onto.
    const view: WorldView = rebase
      ? { uid: world.metadata.uid ?? '', roots, base: rebase.onto, candidateDigest: rebase.candidate }
      : { uid: world.metadata.uid ?? '', roots, base: ws.base ?? [], candidateDigest: ws.candidate?.digest };
    const policy = governingPolicy(this.d.policies(), roots);
    if (c.spec.mode === 'Candidate') {
      if (wrec.state === 'collapsed') return { denied: 'WORLD_ALREADY_COLLAPSED', message: `World ${c.spec.worldRef} was already collapsed; its candidate is PRIME's history now` };
      if (wrec.state !== 'captured') return { denied: 'CANDIDATE_MISSING', message: `World ${c.spec.worldRef} has no captured candidate on node ${this.d.nodeName} (phase ${world.status?.phase ?? 'unknown'})` };
      return {
        measure: async (boundary) => {
          const m = await measureCandidate(this.d.store, view, policy, (root) => this.walkPrime(root), this.d.checkResources(), boundary);
          const moved = m.roots.some((r) => r.prime.generation !== r.base.generation);
          return { input: m.input, moved, evidence: m.evidence, requests: m.roots.map((r) => ({ rootName: r.name, candidateDir: m.candidateDir, base: r.base })), before: m.roots.map((r) => ({ name: r.name, fromGeneration: r.prime.generation, beforeDigest: r.prime.digest })) };
        },
      };
    }
    const made = committedCandidate(this.db, view.uid);
    if (!made) return { denied: 'CHECKPOINT_NOT_COLLAPSED', message: `World ${c.spec.worldRef} has no committed Candidate collapse on this node to return from` };
    return {
      measure: async (boundary) => {
        const m = await measureCheckpointReturn(this.d.store, view, made, (root) => this.walkPrime(root), boundary);
        const moved = m.roots.some((r) => r.prime.generation !== made.get(r.name)?.toGeneration);
        return {
          input: m.input,
          moved,
          evidence: m.evidence,
          requests: m.roots.map((r) => ({ rootName: r.name, candidateDir: '', base: r.prime, returnTo: r.checkpoint.generation })),
          before: m.roots.map((r) => ({ name: r.name, fromGeneration: r.prime.generation, beforeDigest: r.prime.digest })),
        };
      },
    };
  }

  /**
   * The one transaction of a Collapse, its progress statuses held (progress-hold.ts): a quick collapse
   * writes only its final status. Not held when the controller's grant is required, which answers the
   * Authorized status.
   */
  private async run(c: Collapse, uid: string, pre: { rebase?: RebaseRecord; denied?: { reasons: string[]; message: string } } = {}): Promise<void> {
    const holdMs = this.d.controllerGrants?.required() ? 0 : this.d.progressHoldMs;
    const progress = new ProgressHold<ProgressStatus>((s) => this.applyStatus(c, s), holdMs, (e) => this.d.logger.warn('could not write a collapse\'s progress status', { collapse: this.objectName(c), error: e.message }));
    this.progress = progress;
    try {
      await this.transact(c, uid, pre);
    } finally {
      await progress.end();
      if (this.progress === progress) this.progress = undefined;
    }
  }

  private async transact(c: Collapse, uid: string, pre: { rebase?: RebaseRecord; denied?: { reasons: string[]; message: string } }): Promise<void> {
    const ns = c.metadata.namespace ?? '';
    const world = this.d.world(`${ns}/${c.spec.worldRef}`);
    const id = randomUUID();
    let t: TransactionRow = {
      collapseUid: uid,
      id,
      state: 'PREPARED',
      data: {
        world: { namespace: ns, name: c.spec.worldRef, uid: world?.metadata.uid ?? 'unknown' },
        mode: c.spec.mode,
        startedAt: this.d.clock.now().toISOString(),
        roots: [],
        evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
        ...(pre.rebase ? { rebase: pre.rebase } : {}),
        status: { phase: 'Preparing', ...(pre.rebase ? { rebase: pre.rebase } : {}), transaction: { id, state: 'PREPARED' }, reason: 'PREPARING', message: 'measuring PRIME, the candidate and its evidence', conditions: this.conditions(c, 'Unknown', 'Preparing', 'the collapse is being prepared') },
      },
    };
    putTransaction(this.db, t, this.d.clock.now());
    await this.progress?.note(t.data.status);
    await this.hooks.at('after-prepared');

    const wrec = world?.metadata.uid ? getWorldRecord(this.db, world.metadata.uid) : undefined;
    const mode = c.spec.mode;
    if (!world || !wrec) return this.finish(c, this.deny(c, t, ['CANDIDATE_MISSING'], `World ${c.spec.worldRef} has no record on node ${this.d.nodeName}`));
    const roots = world.spec.roots;
    if (pre.denied) return this.finish(c, this.deny(c, t, pre.denied.reasons, pre.denied.message));
    const plan = this.planFor(c, world, wrec, pre.rebase);
    if ('denied' in plan) return this.finish(c, this.deny(c, t, [plan.denied], plan.message));

    // The Root objects, then the live route: a Root not Ready or a broken mapping refuses before anything is read.
    for (const name of roots) {
      const refused = this.rootRefusal(name);
      if (refused) return this.finish(c, this.deny(c, t, [refused.code], refused.message));
      try {
        await checkRouting(this.d.store, name);
      } catch (e) {
        if (isStoreError(e)) return this.finish(c, this.deny(c, t, [e.code], e.message));
        throw e;
      }
    }

    const m = await plan.measure();
    t = { ...t, data: { ...t.data, roots: m.before, evidence: m.evidence } };
    const decision = judged(m.input, m.moved);
    this.markForeignWrites(c, m.input);
    if (!decision.authorized) return this.finish(c, this.deny(c, t, [...decision.reasons], `denied: ${decision.reasons.join(', ')}`));
    const authorized = transition(t.state, { kind: 'authorize', decision });
    if (!authorized.ok) return this.finish(c, this.deny(c, t, [authorized.error], `the transaction could not be authorized: ${authorized.error}`));
    const names = m.before.map((r) => r.name).join(', ');
    const what = mode === 'Candidate' ? 'promoting the candidate into' : 'returning to the checkpoint';
    t = { ...t, state: authorized.state, data: { ...t.data, status: { ...t.data.status, phase: 'Authorized', transaction: { id, state: authorized.state }, decision: { authorized: true, reasons: [] }, reason: 'AUTHORIZED', message: `authorized; ${what} Root(s) ${names}` } } };
    putTransaction(this.db, t, this.d.clock.now());
    await this.progress?.note(t.data.status);
    await this.hooks.at('after-authorized');
    // The authorization as a single-use grant, spent at the boundary right before the exchange: the
    // controller's, after it verified the evidence graph, when the trust policy pins a grant signer for
    // this node; else the node's own.
    let grant: CollapseGrant;
    let verifiedRuns: VerifiedRun[] | undefined;
    if (this.d.controllerGrants?.required()) {
      await this.progress?.release(); // the controller answers the Authorized status
      const got = await this.controllerGrant(c, uid, id, world.metadata.uid ?? '', mode, m.evidence.subject, m.input.obligation);
      if ('refused' in got) return this.finish(c, this.deny(c, t, [got.refused.reason], got.refused.message));
      grant = got.verified.grant;
      verifiedRuns = got.verified.runs;
    } else {
      grant = mintCollapseGrant({ transactionId: id, collapse: { namespace: ns, name: c.metadata.name ?? '', uid }, worldUid: world.metadata.uid ?? '', mode, roots: m.before.map((r) => ({ name: r.name, generation: r.fromGeneration, digest: r.beforeDigest })) }, this.d.clock.now());
    }

    // At the serialized commit boundary: the collapse decision again, on the commit's own re-hashes and everything else read again.
    const atBoundary = async (h: BoundaryHashes): Promise<void> => {
      for (const name of roots) {
        const refused = this.rootRefusal(name);
        if (refused) throw new Denial([refused.code], `denied at the commit boundary: ${refused.message}`);
      }
      const again = await plan.measure(h);
      // Under a controller's grant the decision relies only on runs the controller verified.
      if (verifiedRuns) {
        const unverified = this.unverifiedRuns(world.metadata.uid ?? '', again.evidence.subject, again.input.obligation, verifiedRuns);
        if (unverified) throw new Denial(['GRANT_EVIDENCE_UNVERIFIED'], `denied at the commit boundary: ${unverified}`);
      }
      const final = judged(again.input, again.moved);
      this.markForeignWrites(c, again.input);
      if (!final.authorized) throw new Denial([...final.reasons], `denied at the commit boundary: ${final.reasons.join(', ')}`);
      try {
        spendCollapseGrant(this.d.grants(), grant, h, { now: () => this.d.clock.now(), revoked: this.d.grantRevoked });
      } catch (e) {
        if (e instanceof GrantError) throw new Denial([e.code], `the authorization could not be spent: ${e.message}`);
        throw e;
      }
      await this.hooks.at('after-grant-spent');
    };
    let committedRoots: Awaited<ReturnType<typeof collapseRoots>>;
    try {
      committedRoots = await collapseRoots(this.d.store, m.requests, { afterStep: (step) => this.hooks.at(step) }, atBoundary);
    } catch (e) {
      // Refused at the boundary or failed before the exchange: PRIME is the base.
      const reasons = e instanceof Denial ? e.reasons : [isCollapseError(e) || isStoreError(e) ? e.code : 'COLLAPSE_FAILED'];
      this.d.logger.warn('collapse refused at the commit boundary', { collapse: this.objectName(c), transaction: id, reasons, error: (e as Error).message });
      return this.finish(c, this.deny(c, t, reasons, (e as Error).message));
    }
    const committed = transition(t.state, { kind: 'commit', decision });
    if (!committed.ok) this.d.logger.error('PRIME moved but the transaction machine refused COMMITTED; recording COMMITTED', { collapse: this.objectName(c), error: committed.error });
    const result = committedRoots.map((r) => ({ root: r.root.name, fromGeneration: r.fromGeneration, toGeneration: r.toGeneration, digest: r.digest }));
    t = this.committedStatus(c, t, result, describe(result));
    this.d.logger.info('collapse committed', { collapse: this.objectName(c), transaction: id, result });
    for (const r of result) this.d.requeueRoot(r.root);
    // From here a failure (a status write) is retried by the runner: the row is final and keeps its receipt.
    await this.finish(c, t);
  }

  /**
   * Waits (up to the configured time) for the controller's answer to transaction `id` on status.grant,
   * then verifies the grant; or the named reason the Collapse is denied with: the controller's refusal of
   * the evidence graph, GRANT_MISSING when no answer came, or why the grant does not verify here.
   */
  private async controllerGrant(c: Collapse, uid: string, id: string, worldUid: string, mode: 'Candidate' | 'CheckpointReturn', subject: string | null, obligation: DecisionInput['obligation']): Promise<{ verified: VerifiedGrant } | { refused: { reason: string; message: string } }> {
    const grants = this.d.controllerGrants!;
    const key = this.objectName(c);
    const deadline = Date.now() + grants.o.waitMs;
    let answer: NonNullable<NonNullable<Collapse['status']>['grant']> | undefined;
    for (;;) {
      const g = this.d.informer.get(key)?.status?.grant;
      if (g?.transaction === id) {
        answer = g;
        break;
      }
      if (Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, GRANT_POLL_MS));
    }
    if (!answer) return { refused: { reason: 'GRANT_MISSING', message: `the controller did not answer transaction ${id} with a grant within ${grants.o.waitMs / 1000} s (is it running with --grant-key?)` } };
    if (answer.outcome !== 'Issued' || answer.envelope === undefined) {
      return { refused: { reason: answer.reason ?? 'GRANT_MISSING', message: `the controller refused the evidence graph: ${answer.message ?? answer.reason ?? 'no reason given'}` } };
    }
    const roster = obligation.mode === 'Candidate' ? obligation.requiredChecks : [];
    try {
      const verified = grants.verify(answer.envelope, { collapse: { namespace: c.metadata.namespace ?? '', name: c.metadata.name ?? '', uid }, transaction: id, world: { uid: worldUid }, mode, candidate: mode === 'Candidate' ? subject : null, roster });
      this.d.logger.info('controller grant verified', { collapse: key, transaction: id });
      return { verified };
    } catch (e) {
      if (e instanceof ControllerGrantRefused) return { refused: { reason: e.code, message: `the controller's grant does not verify on node ${this.d.nodeName}: ${e.message}` } };
      throw e;
    }
  }

  /**
   * Why the decision would rely on a check run the controller did not verify: for each required check, the
   * newest evaluation of this World on the candidate (the one that speaks) must be one of the verified
   * runs — same Check, verdict and requirement. A run that landed after the grant (a newer failure, a
   * revalidation) is not. Undefined when every one is.
   */
  private unverifiedRuns(worldUid: string, subject: string | null, obligation: DecisionInput['obligation'], runs: readonly VerifiedRun[]): string | undefined {
    if (obligation.mode !== 'Candidate' || subject === null) return undefined;
    const rows = evaluationsFor(this.db, worldUid, subject).filter((r) => r.worldUid === worldUid && r.subject === subject);
    for (const name of obligation.requiredChecks) {
      const newest = rows.filter((r) => r.checkName === name).reduce<(typeof rows)[number] | undefined>((a, r) => (!a || r.ordinal > a.ordinal ? r : a), undefined);
      if (!newest) continue; // no run at all: the decision refuses it by itself
      const ok = runs.some((v) => v.checkUid === newest.checkUid && v.checkName === name && v.verdict === newest.verdict && v.requirementHash === newest.requirementHash && v.subject === subject);
      if (!ok) return `the newest run of check ${name} (evaluation ${newest.ordinal}, ${newest.verdict}, Check uid ${newest.checkUid}) is not among the runs the controller verified`;
    }
    return undefined;
  }

  /** Before the one run: another World of the bound one's name refuses it by name, with no transaction (nothing was decided or changed). */
  private async firstRun(c: Collapse, uid: string): Promise<ReconcileResult> {
    if (c.status?.phase === 'Denied' && c.status.reason === 'WORLD_REPLACED') return;
    const world = this.d.world(`${c.metadata.namespace ?? ''}/${c.spec.worldRef}`);
    const gate = agentGate('Collapse', c.spec.worldRef, c.spec.worldUID, world);
    if (gate.act === 'run') {
      if (!world) return this.run(c, uid);
      const position = queuePosition(this.entryOf(c, world), this.pending());
      if (position > 0) {
        const message = `${position} older Collapse(s) of Root(s) ${world.spec.roots.join(', ')} on node ${this.d.nodeName} go first`;
        await this.applyStatus(c, { phase: 'Queued', queuePosition: position, reason: 'QUEUED', message, conditions: this.conditions(c, 'Unknown', 'Queued', message) });
        return { requeueAfterMs: WAIT_POLL_MS };
      }
      if (c.spec.mode !== 'Candidate' || !c.spec.rebase) return this.run(c, uid);
      return this.rebaseThenRun(c, uid, world);
    }
    if (gate.act === 'wait') return;
    this.d.logger.warn('collapse refused: its World was replaced', { collapse: this.objectName(c), bound: c.spec.worldUID });
    await this.applyStatus(c, { phase: 'Denied', reason: gate.code, message: gate.message, conditions: this.conditions(c, 'False', 'WorldReplaced', gate.message) });
    this.d.events.warning(c, gate.code, gate.message);
  }

  /**
   * spec.rebase: when PRIME moved since the World's base, the rebased candidate is formed (or CONFLICT
   * refused) and the Collapse waits, Rebasing, until the Policy's checks have run on it; then it runs on it.
   */
  private async rebaseThenRun(c: Collapse, uid: string, world: World): Promise<ReconcileResult> {
    const wrec = world.metadata.uid ? getWorldRecord(this.db, world.metadata.uid) : undefined;
    const ws = wrec?.status as AgentWorldStatus | undefined;
    if (!wrec || wrec.state !== 'captured' || !ws?.candidate?.digest) return this.run(c, uid);
    const step = rebaseStep(this.d.store, { roots: world.spec.roots, base: ws.base ?? [], candidateDigest: ws.candidate.digest });
    if (step.kind === 'as-is') return this.run(c, uid);
    if (step.kind === 'conflict') return this.run(c, uid, { denied: { reasons: ['PRIME_MOVED', 'CONFLICT'], message: `not rebased: ${step.message}` } });
    await this.hooks.at('after-rebase-formed');
    const required = (governingPolicy(this.d.policies(), world.spec.roots)?.spec.checks ?? []).map((x) => x.name);
    const waiting = checksPending(this.d.store, wrec.uid, step.rebase.candidate, required);
    if (waiting.length === 0) return this.run(c, uid, { rebase: step.rebase });
    const onto = step.rebase.onto.map((o) => `${o.root}@${o.generation}`).join(', ');
    const message = `rebased onto ${onto} as ${step.rebase.candidate}; waiting for check(s) ${waiting.join(', ')} on those bytes`;
    await this.applyStatus(c, { phase: 'Rebasing', rebase: step.rebase, reason: 'REBASE_CHECKS_PENDING', message, conditions: this.conditions(c, 'Unknown', 'Rebasing', message) });
    return { requeueAfterMs: WAIT_POLL_MS };
  }

  /** This Collapse as the queue orders it. */
  private entryOf(c: Collapse, world: World): QueueEntry {
    return { key: this.objectName(c), created: c.metadata.creationTimestamp ?? '', roots: world.spec.roots };
  }

  /** The Collapses of this node that are not finished and could run now (their World is here and theirs). */
  private pending(): QueueEntry[] {
    const out: QueueEntry[] = [];
    for (const o of this.d.informer.list()) {
      const uid = o.metadata.uid;
      if (!uid || o.status?.nodeName !== this.d.nodeName || o.metadata.deletionTimestamp) continue;
      if (o.status.phase === 'Committed' || o.status.phase === 'Denied') continue;
      const t = getTransaction(this.db, uid);
      if (t && isFinal(t.state)) continue;
      const world = this.d.world(`${o.metadata.namespace ?? ''}/${o.spec.worldRef}`);
      if (!world || agentGate('Collapse', o.spec.worldRef, o.spec.worldUID, world).act !== 'run') continue;
      out.push(this.entryOf(o, world));
    }
    return out;
  }

  // One collapse at a time on this node (this.settle() relies on it); the runner has one worker as well.
  reconcile(key: string): Promise<ReconcileResult> {
    const next = this.chain.then(async (): Promise<ReconcileResult> => {
      const refused = this.d.informer.refusal(key);
      if (refused) {
        // Never run: refused by name (phase Denied, OBJECT_SCHEMA_INVALID naming the field paths).
        await this.d.refusals.refuse(refs.Collapse, refused, { phase: 'Denied' }, this.d.clock.now());
        return;
      }
      const c = this.d.informer.get(key);
      const uid = c?.metadata.uid;
      if (!c || !uid || c.status?.nodeName !== this.d.nodeName || c.metadata.deletionTimestamp) return;
      const t = getTransaction(this.db, uid);
      if (!t) return this.firstRun(c, uid);
      if (!isFinal(t.state)) return this.finish(c, this.settle(c, t));
      if (!t.data.receipt) return this.finish(c, t);
      if (t.state === 'COMMITTED') this.markWorldCollapsed(t, c);
      await this.applyStatus(c, t.data.status);
      return;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** status.rebase of a rebased transaction (kept on every status it writes). */
function rebaseOf(t: TransactionRow): { rebase?: RebaseRecord } {
  return t.data.rebase ? { rebase: t.data.rebase } : {};
}

function describe(result: readonly { root: string; fromGeneration: number; toGeneration: number; digest: string }[]): string {
  return result.map((r) => `Root ${r.root} moved from generation ${r.fromGeneration} to ${r.toGeneration} (${r.digest})`).join('; ');
}
