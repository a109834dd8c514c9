// Reconciles the Collapses bound to this node (status.nodeName, set by the controller). Each Collapse runs
// once, as one store transaction: PREPARED, then the decision kernel (core/collapse/decide.ts) fed with
// values measured now, then either AUTHORIZED -> collapseRoot -> COMMITTED or DENIED with named reasons.
// COMMITTED and DENIED transactions each get a signed receipt in <store>/receipts/ledger.jsonl. The
// transaction and the status document are persisted (collapse_transactions), so a restarted agent
// re-applies what it decided and never runs a Collapse twice.
//
// Scope of this first wiring: mode Candidate, single-Root Worlds. Evidence: a Policy with checks fails
// closed (EXECUTION_EVIDENCE_INCOMPLETE) until check evaluations are wired in; with no checks required the
// agent itself records the empty-roster evaluation (no executions, subject the candidate re-hashed in the
// store, requirement the empty check set), which is all "no checks required" can claim.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Database } from 'better-sqlite3';
import { decide, type Decision, type DecisionInput, type Evaluation } from '../core/collapse/decide.js';
import { absentId, generationId, idFrom, presentId, unmeasuredId } from '../core/collapse/identity.js';
import { isFinal, transition, type TransactionState } from '../core/collapse/transaction.js';
import { requirementHash, verifierIdentity } from '../core/evidence/requirement.js';
import type { ReceiptContent } from '../core/receipts/receipt.js';
import type { Clock } from '../kube/clock.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import type { EventRecorder } from '../kube/events.js';
import type { Logger } from '../kube/logger.js';
import { ControllerRunner, type ReconcileMetrics, type ReconcileResult } from '../kube/reconcile.js';
import { Informer } from '../kube/informer.js';
import { objectKey } from '../kube/resource-ref.js';
import { statusEqual, type StatusWriter } from '../kube/status-writer.js';
import { readCandidate, verifierModifiedByCandidate } from './checks/materialize.js';
import { collapseRoot, isCollapseError } from './collapse/index.js';
import { collapseWalk } from './collapse/collapse-walk.js';
import { ReceiptLedger, receiptStatus, type SignedReceipt } from './receipts/ledger.js';
import { PUBLIC_PEM_FILE } from './receipts/signing-key.js';
import { refs } from './resources.js';
import type { Store } from './store/open-store.js';
import { checkRouting } from './store/routing.js';
import { isStoreError } from './store/store-errors.js';
import { getGeneration, getRoot } from './store/store-records.js';
import { AGENT_VERSION } from './version.js';
import type { WorldObj } from './world-launch.js';
import { getWorldRecord } from './world/world-records.js';
import type { AgentWorldStatus } from './world/world-status.js';

export interface CollapseObj extends KubernetesObject {
  spec?: { worldRef?: string; mode?: string };
  status?: Record<string, unknown> & { nodeName?: string; conditions?: Condition[] };
}

/** The part of a Policy the collapse reads: which Roots it governs and whether it requires checks. */
export interface CollapsePolicyView {
  spec?: { roots?: string[]; checks?: unknown[]; isolation?: { check?: unknown } };
}

interface CollapseResultEntry {
  root: string;
  fromGeneration: number;
  toGeneration: number;
  digest: string;
}

/** The node-agent's part of Collapse.status (the controller owns nodeName and WorldFound). */
export interface AgentCollapseStatus {
  phase: 'Preparing' | 'Authorized' | 'Committed' | 'Denied';
  transaction: { id: string; state: TransactionState };
  decision?: { authorized: boolean; reasons: string[] };
  result?: CollapseResultEntry[];
  receipt?: StatusReceipt;
  reason?: string;
  message?: string;
  conditions: Condition[];
}

/** status.receipt: receiptStatus() without `previous` for the first receipt (the schema has no null). */
type StatusReceipt = Omit<ReturnType<typeof receiptStatus>, 'previous'> & { previous?: string };

function statusReceipt(r: SignedReceipt): StatusReceipt {
  const { previous, ...rest } = receiptStatus(r);
  return previous === null ? rest : { ...rest, previous };
}

const OWNED_KEYS = ['phase', 'transaction', 'decision', 'result', 'receipt', 'reason', 'message'] as const;
const OWNED_CONDITIONS = new Set(['Committed']);

/** What a transaction row keeps besides its state: enough to settle it after a restart and to write its receipt. */
interface TransactionData {
  status: AgentCollapseStatus;
  world: { namespace: string; name: string; uid: string };
  root?: { name: string; fromGeneration: number; beforeDigest: string };
  evidence: ReceiptContent['evidence'];
  receipt?: StatusReceipt;
}

interface TransactionRow {
  collapseUid: string;
  id: string;
  state: TransactionState;
  data: TransactionData;
}

function getTransaction(db: Database, collapseUid: string): TransactionRow | undefined {
  const row = db.prepare('SELECT collapse_uid, id, state, data_json FROM collapse_transactions WHERE collapse_uid = ?').get(collapseUid) as
    | { collapse_uid: string; id: string; state: TransactionState; data_json: string }
    | undefined;
  return row && { collapseUid: row.collapse_uid, id: row.id, state: row.state, data: JSON.parse(row.data_json) as TransactionData };
}

function putTransaction(db: Database, t: TransactionRow, now: Date): void {
  db.prepare(
    `INSERT INTO collapse_transactions (collapse_uid, id, state, data_json, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (collapse_uid) DO UPDATE SET state = excluded.state, data_json = excluded.data_json, updated_at = excluded.updated_at`,
  ).run(t.collapseUid, t.id, t.state, JSON.stringify(t.data), now.toISOString());
}

/** Opens the node's receipt ledger: <store>/receipts/ledger.jsonl, signed with the key in <store>/keys. */
export function openCollapseLedger(store: Store): { ledger: ReceiptLedger; path: string; publicKeyPath: string } {
  const dir = join(store.dir, 'receipts');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyDir = join(store.dir, 'keys');
  const path = join(dir, 'ledger.jsonl');
  return { ledger: ReceiptLedger.open({ path, keyDir }), path, publicKeyPath: join(keyDir, PUBLIC_PEM_FILE) };
}

export interface CollapseReconcilerDeps {
  informer: Informer<CollapseObj>;
  /** The World `namespace/name` as this node's World informer has it. */
  world: (key: string) => WorldObj | undefined;
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
}

/** A denial before or at the decision: the reasons and a message. */
class Denial extends Error {
  constructor(
    readonly reasons: string[],
    message: string,
  ) {
    super(message);
  }
}

/** What the measurement gives: the decision and what the receipt names. */
interface Prepared {
  decision: Decision;
  rootName: string;
  rootKey: string;
  fromGeneration: number;
  beforeDigest: string;
  candidateDir: string;
  base: { generation: number; digest: string };
  evidence: ReceiptContent['evidence'];
}

const entryQuery = 'SELECT type, mode, uid, gid, size, sha256, target FROM generation_entries WHERE generation_id = ? AND path = ?';

/** Paths the candidate changes that PRIME also changed since the base (entries of the two generations compared). */
function measureConflicts(db: Database, rootKey: string, baseGeneration: number, primeGeneration: number, paths: readonly string[]): { measured: false } | { measured: true; found: string[] } {
  if (baseGeneration === primeGeneration) return { measured: true, found: [] };
  const base = getGeneration(db, rootKey, baseGeneration);
  const prime = getGeneration(db, rootKey, primeGeneration);
  if (!base || !prime) return { measured: false };
  const q = db.prepare(entryQuery);
  const found = paths.filter((p) => JSON.stringify(q.get(base.id, p) ?? null) !== JSON.stringify(q.get(prime.id, p) ?? null));
  return { measured: true, found };
}

export function makeNodeCollapseReconciler(d: CollapseReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const db = d.store.db;

  const applyStatus = async (c: CollapseObj, s: AgentCollapseStatus): Promise<void> => {
    const clean = JSON.parse(JSON.stringify(s)) as AgentCollapseStatus;
    const cur: Record<string, unknown> = {};
    for (const k of OWNED_KEYS) if (c.status?.[k] !== undefined) cur[k] = c.status[k];
    cur.conditions = (c.status?.conditions ?? []).filter((x) => OWNED_CONDITIONS.has(x.type));
    const want: Record<string, unknown> = {};
    for (const k of OWNED_KEYS) if (clean[k] !== undefined) want[k] = clean[k];
    want.conditions = clean.conditions;
    if (statusEqual(cur, want)) return;
    await d.status.applyStatus(refs.Collapse, { metadata: { name: c.metadata?.name ?? '', namespace: c.metadata?.namespace ?? '' }, status: clean as unknown as Record<string, unknown> });
  };

  const condition = (c: CollapseObj, status: 'True' | 'False' | 'Unknown', reason: string, message: string): Condition[] =>
    setCondition(c.status?.conditions?.filter((x) => OWNED_CONDITIONS.has(x.type)), { type: 'Committed', status, reason, message }, c.metadata?.generation, d.clock.now());

  /** Measure everything decide() compares, now, for the single Root of a captured World. */
  const prepare = async (c: CollapseObj, world: WorldObj, ws: AgentWorldStatus): Promise<Prepared> => {
    const roots = world.spec?.roots ?? [];
    if (roots.length !== 1) throw new Denial(['COLLAPSE_MULTI_ROOT_UNSUPPORTED'], `World ${world.metadata?.name ?? ''} has ${roots.length} Roots; this node-agent collapses single-Root Worlds only`);
    const rootName = roots[0]!;
    const candidateDigest = ws.candidate?.digest;
    const worldBase = (ws.base ?? []).find((b) => b.root === rootName);
    if (!candidateDigest || !worldBase) throw new Denial(['CANDIDATE_MISSING'], `World ${world.metadata?.name ?? ''} has no captured candidate for Root ${rootName}`);
    const before = getRoot(db, rootName);
    if (!before) throw new Denial(['ROOT_NOT_FOUND'], `Root ${rootName} is not in this node's store`);

    // The live route first: a broken mapping refuses before anything is read through it.
    let primePayload: string;
    try {
      primePayload = (await checkRouting(d.store, rootName)).payloadPath;
    } catch (e) {
      if (isStoreError(e)) throw new Denial([e.code], e.message);
      throw e;
    }

    // The candidate as stored: candidate.json must hash to its directory's name (the digest captured).
    const candidateDir = join(d.store.layout.candidates, candidateDigest.slice('sha256:'.length));
    let stored: ReturnType<typeof readCandidate> | undefined;
    try {
      stored = readCandidate(candidateDir);
    } catch (e) {
      d.logger.warn('stored candidate is unreadable or does not hash to its name', { collapse: c.metadata?.name, candidateDir, error: (e as Error).message });
    }
    const delta = stored?.deltas.get(before.rootKey);
    const candidateValid = delta !== undefined && delta.root === rootName && delta.baseGeneration === worldBase.generation && delta.baseDigest === worldBase.digest;

    // PRIME re-hashed now, against what the store records for its generation (foreign writes) and the World's base.
    const walk = await collapseWalk(primePayload, d.store.dir);
    const rehash = walk.problems.length === 0 ? walk.digest : undefined;
    const foreign = rehash === before.digest ? [] : [rootName];
    const touched = delta ? [...delta.upsert.map((e) => e.path), ...delta.deleted] : [];
    const conflicts = measureConflicts(db, before.rootKey, worldBase.generation, before.generation, touched);

    // Evidence obligation from the governing Policy.
    const policy = d.policies().find((p) => (p.spec?.roots ?? []).includes(rootName));
    const checks = policy?.spec?.checks ?? [];
    const worldUid = world.metadata?.uid ?? '';
    let requirement: string | null = null;
    let declared: string | null = null;
    let executed: string | null = null;
    const evaluations: Evaluation[] = [];
    if (checks.length === 0) {
      declared = verifierIdentity([]);
      requirement = requirementHash({ checks: [], verifierIdentity: declared, engineVersion: AGENT_VERSION, isolation: policy?.spec?.isolation?.check ?? null });
      if (stored) {
        // The empty roster: nothing ran, nothing was required; its subject is the candidate as re-hashed in the store.
        executed = verifierIdentity([]);
        evaluations.push({
          ordinal: 1,
          subject: presentId('evidenceSubject', stored.digest),
          requirement: presentId('requirement', requirement),
          context: { present: true, intact: true, world: presentId('world', worldUid) },
          executedVerifier: presentId('verifierExecuted', executed),
          executions: [],
        });
      }
    }

    const after = getRoot(db, rootName);
    const input: DecisionInput = {
      stage: 'prepare',
      candidateValid,
      conflicts,
      foreignWrites: { measured: true, found: foreign },
      primeGeneration: { before: generationId(before.generation), after: generationId(after?.generation) },
      parent: { storePrime: presentId('parent', `${rootName}@${before.generation}`), candidateBase: delta ? presentId('parent', `${delta.root}@${delta.baseGeneration}`) : absentId('parent') },
      base: { primeRehash: idFrom('base', rehash), world: idFrom('base', worldBase.digest) },
      delta: { captured: idFrom('delta', candidateDigest), stored: idFrom('delta', stored?.digest) },
      rootSet: { world: presentId('rootSet', roots.join(',')), store: presentId('rootSet', rootName) },
      stagedRoot: { staged: unmeasuredId('stagedRoot'), tested: unmeasuredId('stagedRoot') },
      subject: presentId('evidenceSubject', candidateDigest),
      obligation: {
        mode: 'Candidate',
        world: presentId('world', worldUid),
        currentRequirement: idFrom('requirement', requirement),
        requiredChecks: checks.map((x) => {
          const name = (x as { name?: unknown }).name;
          return typeof name === 'string' ? name : '';
        }),
        declaredVerifier: idFrom('verifierDeclared', declared),
        verifiersModifiedByCandidate: checks.length === 0 && delta ? { measured: true, found: verifierModifiedByCandidate([], delta) } : { measured: false },
        evaluations,
      },
    };
    let decision = decide(input);
    if (checks.length > 0) {
      // Fail closed: check evaluations are not wired into the collapse yet.
      decision = { authorized: false, reasons: [...new Set([...decision.reasons, 'EXECUTION_EVIDENCE_INCOMPLETE'])] as Decision['reasons'] };
    }
    // The PRIME-moved signal the kernel measures as one generation read twice is named too when the World's base is behind.
    if (before.generation !== worldBase.generation && !decision.reasons.includes('PRIME_MOVED')) {
      decision = { authorized: false, reasons: [...decision.reasons, 'PRIME_MOVED'] };
    }
    return {
      decision,
      rootName,
      rootKey: before.rootKey,
      fromGeneration: before.generation,
      beforeDigest: before.digest,
      candidateDir,
      base: { generation: worldBase.generation, digest: worldBase.digest },
      evidence: { requirementHash: requirement, subject: candidateDigest, verifierIdentity: declared, executedVerifierIdentity: executed },
    };
  };

  /** Append the receipt of a final transaction once (a crash after the append finds it as the ledger's head). */
  const receiptFor = (t: TransactionRow, mode: 'Candidate' | 'CheckpointReturn'): SignedReceipt | StatusReceipt => {
    if (t.data.receipt) return t.data.receipt;
    const head = d.ledger.last();
    if (head && head.body.transaction.id === t.id && head.body.transaction.state === t.state) return head;
    const committed = t.state === 'COMMITTED';
    const result = t.data.status.result?.[0];
    const decision = t.data.status.decision ?? { authorized: false, reasons: [t.data.status.reason ?? 'COLLAPSE_DENIED'] };
    return d.ledger.append({
      transaction: { id: t.id, state: committed ? 'COMMITTED' : 'DENIED' },
      world: t.data.world,
      mode,
      decision,
      evidence: t.data.evidence,
      roots: t.data.root
        ? [{ root: t.data.root.name, fromGeneration: t.data.root.fromGeneration, toGeneration: committed && result ? result.toGeneration : null, beforeDigest: t.data.root.beforeDigest, afterDigest: committed && result ? result.digest : null }]
        : [],
      issuedAt: d.clock.now().toISOString(),
    });
  };

  /** Final state reached: persist, receipt, persist the receipt, status, event. */
  const finish = async (c: CollapseObj, t: TransactionRow): Promise<void> => {
    putTransaction(db, t, d.clock.now());
    const r = receiptFor(t, c.spec?.mode === 'CheckpointReturn' ? 'CheckpointReturn' : 'Candidate');
    const receipt = 'body' in r ? statusReceipt(r) : r;
    t.data.receipt = receipt;
    t.data.status = { ...t.data.status, receipt };
    putTransaction(db, t, d.clock.now());
    d.logger.info('collapse receipt appended', { collapse: objectName(c), transaction: t.id, state: t.state, sequence: receipt.sequence, receipt: receipt.id });
    await applyStatus(c, t.data.status);
    if (t.state === 'COMMITTED') d.events.normal(c, 'Committed', t.data.status.message ?? '');
    else d.events.warning(c, t.data.status.reason ?? 'Denied', t.data.status.message ?? '');
  };

  const deny = (c: CollapseObj, t: TransactionRow, reasons: string[], message: string, decision?: Decision): TransactionRow => {
    if (t.state === 'COMMITTED') throw new Error(`transaction ${t.id} is COMMITTED and cannot be denied`);
    const step = transition(t.state, { kind: 'deny', reasons });
    const state: TransactionState = step.ok ? step.state : 'DENIED';
    const reason = reasons[0] ?? 'COLLAPSE_DENIED';
    return {
      ...t,
      state,
      data: {
        ...t.data,
        status: {
          phase: 'Denied',
          transaction: { id: t.id, state },
          decision: { authorized: false, reasons: decision && !decision.authorized ? [...decision.reasons] : reasons },
          reason,
          message,
          conditions: condition(c, 'False', 'Denied', message),
        },
      },
    };
  };

  const objectName = (c: CollapseObj): string => `${c.metadata?.namespace ?? ''}/${c.metadata?.name ?? ''}`;

  /** A transaction a previous agent left before its final state: settled from what the store shows. */
  const settle = (c: CollapseObj, t: TransactionRow): TransactionRow => {
    const root = t.data.root && getRoot(db, t.data.root.name);
    if (t.state === 'AUTHORIZED' && root && t.data.root && root.generation === t.data.root.fromGeneration + 1) {
      // Collapses on a node run one at a time, so the one generation past the recorded base is this one's (recoverCollapses rolled it forward).
      const result = { root: root.name, fromGeneration: t.data.root.fromGeneration, toGeneration: root.generation, digest: root.digest };
      const message = `Root ${root.name} moved from generation ${result.fromGeneration} to ${result.toGeneration} (settled after an agent restart)`;
      return { ...t, state: 'COMMITTED', data: { ...t.data, status: { ...t.data.status, phase: 'Committed', transaction: { id: t.id, state: 'COMMITTED' }, result: [result], reason: 'COMMITTED', message, conditions: condition(c, 'True', 'Committed', message) } } };
    }
    return deny(c, t, ['COLLAPSE_INTERRUPTED'], 'the node-agent restarted before this collapse committed; PRIME was left at its base');
  };

  const run = async (c: CollapseObj, uid: string): Promise<void> => {
    const ns = c.metadata?.namespace ?? '';
    const world = d.world(`${ns}/${c.spec?.worldRef ?? ''}`);
    const id = randomUUID();
    let t: TransactionRow = {
      collapseUid: uid,
      id,
      state: 'PREPARED',
      data: {
        world: { namespace: ns, name: c.spec?.worldRef ?? '', uid: world?.metadata?.uid ?? 'unknown' },
        evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
        status: { phase: 'Preparing', transaction: { id, state: 'PREPARED' }, reason: 'PREPARING', message: 'measuring PRIME, the candidate and its evidence', conditions: condition(c, 'Unknown', 'Preparing', 'the collapse is being prepared') },
      },
    };
    putTransaction(db, t, d.clock.now());
    await applyStatus(c, t.data.status);

    const wrec = world?.metadata?.uid ? getWorldRecord(db, world.metadata.uid) : undefined;
    if ((c.spec?.mode ?? 'Candidate') !== 'Candidate') return finish(c, deny(c, t, ['COLLAPSE_MODE_UNSUPPORTED'], `mode ${c.spec?.mode ?? ''} is not supported by this node-agent yet`));
    if (!world || !wrec || wrec.state !== 'captured') {
      return finish(c, deny(c, t, ['CANDIDATE_MISSING'], `World ${c.spec?.worldRef ?? ''} has no captured candidate on node ${d.nodeName} (phase ${String(world?.status?.phase ?? 'unknown')})`));
    }

    let p: Prepared;
    try {
      p = await prepare(c, world, wrec.status as AgentWorldStatus);
    } catch (e) {
      if (e instanceof Denial) return finish(c, deny(c, t, e.reasons, e.message));
      throw e;
    }
    t = { ...t, data: { ...t.data, root: { name: p.rootName, fromGeneration: p.fromGeneration, beforeDigest: p.beforeDigest }, evidence: p.evidence } };
    if (!p.decision.authorized) {
      return finish(c, deny(c, t, [...p.decision.reasons], `denied: ${p.decision.reasons.join(', ')}`, p.decision));
    }
    const authorized = transition(t.state, { kind: 'authorize', decision: p.decision });
    if (!authorized.ok) return finish(c, deny(c, t, [authorized.error], `the transaction could not be authorized: ${authorized.error}`));
    const decisionDoc = { authorized: true, reasons: [] };
    t = { ...t, state: authorized.state, data: { ...t.data, status: { ...t.data.status, phase: 'Authorized', transaction: { id, state: authorized.state }, decision: decisionDoc, reason: 'AUTHORIZED', message: `authorized; promoting the candidate into Root ${p.rootName}` } } };
    putTransaction(db, t, d.clock.now());
    await applyStatus(c, t.data.status);

    let r: Awaited<ReturnType<typeof collapseRoot>>;
    try {
      r = await collapseRoot(d.store, { rootName: p.rootName, candidateDir: p.candidateDir, base: p.base });
    } catch (e) {
      // Refused at the commit boundary (PRIME re-hashed, staged payload re-hashed) or failed before the exchange: PRIME is the base.
      const code = isCollapseError(e) ? e.code : 'COLLAPSE_FAILED';
      d.logger.warn('collapse refused at the commit boundary', { collapse: objectName(c), transaction: id, code, error: (e as Error).message });
      return finish(c, deny(c, t, [code], (e as Error).message));
    }
    const committed = transition(t.state, { kind: 'commit', decision: p.decision });
    const state: TransactionState = committed.ok ? committed.state : 'COMMITTED'; // PRIME has moved: the record must say so
    const result = { root: p.rootName, fromGeneration: r.fromGeneration, toGeneration: r.toGeneration, digest: r.digest };
    const message = `Root ${p.rootName} moved from generation ${r.fromGeneration} to ${r.toGeneration} (${r.digest})`;
    t = { ...t, state, data: { ...t.data, status: { phase: 'Committed', transaction: { id, state }, decision: decisionDoc, result: [result], reason: 'COMMITTED', message, conditions: condition(c, 'True', 'Committed', message) } } };
    d.logger.info('collapse committed', { collapse: objectName(c), transaction: id, ...result });
    d.requeueRoot(p.rootName);
    // From here a failure (a status write) is retried by the runner: the row is final and keeps its receipt.
    await finish(c, t);
  };

  // One collapse at a time on this node (settle() relies on it); the runner has one worker as well.
  let chain: Promise<unknown> = Promise.resolve();
  return (key) => {
    const next = chain.then(async (): Promise<ReconcileResult> => {
      const c = d.informer.get(key);
      const uid = c?.metadata?.uid;
      if (!c || !uid || c.status?.nodeName !== d.nodeName || c.metadata?.deletionTimestamp) return;
      const t = getTransaction(db, uid);
      if (!t) return run(c, uid);
      if (!isFinal(t.state)) return finish(c, settle(c, t));
      if (!t.data.receipt) return finish(c, t);
      await applyStatus(c, t.data.status);
      return;
    });
    chain = next.catch(() => undefined);
    return next;
  };
}

export interface NodeCollapsesOptions {
  kubeConfig: KubeConfig;
  store: Store;
  worlds: Pick<Informer<WorldObj>, 'get' | 'hasSynced'>;
  policies: { list(): readonly CollapsePolicyView[]; hasSynced(): boolean };
  status: StatusWriter;
  events: EventRecorder;
  clock: Clock;
  nodeName: string;
  logger: Logger;
  metrics?: ReconcileMetrics;
  requeueRoot: (name: string) => void;
}

/**
 * Everything the agent needs for Collapses, as one unit for main.ts: the receipt ledger, an informer of
 * the Collapses bound to this node and a one-worker runner. start() waits until the World and Policy
 * informers have listed (a Collapse is never judged against a World the agent has not seen yet).
 */
export function startNodeCollapses(o: NodeCollapsesOptions): { start(): Promise<void>; stop(): Promise<void> } {
  const opened = openCollapseLedger(o.store);
  o.logger.info('collapse receipts ledger opened', { ledger: opened.path, publicKey: opened.publicKeyPath, keyId: opened.ledger.keyId });
  const informer = new Informer<CollapseObj>({ kubeConfig: o.kubeConfig, resource: refs.Collapse, fieldSelector: `status.nodeName=${o.nodeName}`, logger: o.logger, clock: o.clock });
  const reconcile = makeNodeCollapseReconciler({
    informer,
    world: (key) => o.worlds.get(key),
    policies: () => o.policies.list(),
    store: o.store,
    ledger: opened.ledger,
    status: o.status,
    events: o.events,
    clock: o.clock,
    nodeName: o.nodeName,
    logger: o.logger,
    requeueRoot: o.requeueRoot,
  });
  const runner = new ControllerRunner({ kind: 'NodeCollapse', reconcile, workers: 1, ...(o.metrics ? { metrics: o.metrics } : {}), logger: o.logger });
  const enqueue = (c: CollapseObj): void => runner.enqueue(objectKey(c));
  informer.onAdd(enqueue);
  informer.onUpdate(enqueue);
  let stopped = false;
  return {
    start: async () => {
      while (!stopped && !(o.worlds.hasSynced() && o.policies.hasSynced())) await new Promise((r) => setTimeout(r, 100));
      if (stopped) return;
      await informer.start();
      runner.start();
    },
    stop: async () => {
      stopped = true;
      informer.stop();
      await runner.stop();
      opened.ledger.close();
    },
  };
}
