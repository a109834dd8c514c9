// The collapse_transactions table: one row per Collapse object, holding the transaction's state and the
// status document the agent applies, so each Collapse runs once and a restarted agent settles or
// re-applies what it decided.
import type { Database } from 'better-sqlite3';
import type { TransactionState } from '../../core/collapse/transaction.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';
import type { Condition } from '../../kube/conditions.js';
import type { RebaseRecord } from './rebase-step.js';
import { statement } from '../store/statements.js';

export interface CollapseResultEntry {
  root: string;
  fromGeneration: number;
  toGeneration: number;
  digest: string;
}

/** status.receipt of a Collapse (no `previous` for the first receipt: the schema has no null). */
export interface StatusReceipt {
  id: string;
  sequence: number;
  previous?: string;
  signature: string;
  keyId: string;
}

/** The node-agent's part of Collapse.status (the controller owns nodeName and WorldFound). */
export interface AgentCollapseStatus {
  phase: 'Queued' | 'Rebasing' | 'Preparing' | 'Authorized' | 'Committed' | 'Denied';
  transaction: { id: string; state: TransactionState };
  queuePosition?: number;
  rebase?: RebaseRecord;
  decision?: { authorized: boolean; reasons: string[] };
  result?: CollapseResultEntry[];
  receipt?: StatusReceipt;
  /** The receipt as a signed statement (DSSE envelope and its evidence-store digest). */
  attestation?: { digest: string; envelope: string };
  reason?: string;
  message?: string;
  conditions: Condition[];
}

/** One Root as the transaction recorded it before anything moved. */
export interface TransactionRoot {
  name: string;
  fromGeneration: number;
  beforeDigest: string;
}

/** What a transaction row keeps besides its state: enough to settle it after a restart and to write its receipt. */
export interface TransactionData {
  status: AgentCollapseStatus;
  world: { namespace: string; name: string; uid: string };
  /** Candidate or CheckpointReturn (rows written before modes were recorded are Candidate). */
  mode?: 'Candidate' | 'CheckpointReturn';
  /** When the agent took the Collapse (ISO time), for the duration metric. */
  startedAt?: string;
  roots: TransactionRoot[];
  evidence: ReceiptContent['evidence'];
  /** A rebased candidate (spec.rebase): what the agent produced, what it was rebased onto, the bytes judged. */
  rebase?: RebaseRecord;
  receipt?: StatusReceipt;
  /**
   * For a row a previous agent left before its final state: whether it committed, as the store showed at
   * the next agent's start, before that agent committed anything (collapse-reconciler.ts noteInterrupted).
   */
  interrupted?: { committed: boolean; result?: CollapseResultEntry[] };
}

export interface TransactionRow {
  collapseUid: string;
  id: string;
  state: TransactionState;
  data: TransactionData;
}

interface RawTransaction {
  collapse_uid: string;
  id: string;
  state: TransactionState;
  data_json: string;
}

export function getTransaction(db: Database, collapseUid: string): TransactionRow | undefined {
  const row = statement(db, 'SELECT collapse_uid, id, state, data_json FROM collapse_transactions WHERE collapse_uid = ?').get(collapseUid) as RawTransaction | undefined;
  return row && fromRow(row);
}

/** Every transaction in a state, newest first. */
export function listTransactions(db: Database, state: TransactionState): TransactionRow[] {
  const rows = statement(db, 'SELECT collapse_uid, id, state, data_json FROM collapse_transactions WHERE state = ? ORDER BY updated_at DESC').all(state) as RawTransaction[];
  return rows.map(fromRow);
}

function fromRow(row: RawTransaction): TransactionRow {
  const data = JSON.parse(row.data_json) as TransactionData & { root?: TransactionRoot };
  // Rows written before multi-root transactions kept one `root`.
  if (!Array.isArray(data.roots)) data.roots = data.root ? [data.root] : [];
  delete data.root;
  return { collapseUid: row.collapse_uid, id: row.id, state: row.state, data };
}

export function putTransaction(db: Database, t: TransactionRow, now: Date): void {
  statement(
    db,
    `INSERT INTO collapse_transactions (collapse_uid, id, state, data_json, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (collapse_uid) DO UPDATE SET state = excluded.state, data_json = excluded.data_json, updated_at = excluded.updated_at`,
  ).run(t.collapseUid, t.id, t.state, JSON.stringify(t.data), now.toISOString());
}

/** Per Root, what this World's committed Candidate collapse made (the newest COMMITTED row of that World). */
export function committedCandidate(db: Database, worldUid: string): ReadonlyMap<string, { toGeneration: number; digest: string }> | undefined {
  for (const t of listTransactions(db, 'COMMITTED')) {
    if (t.data.world.uid !== worldUid || (t.data.mode ?? 'Candidate') !== 'Candidate') continue;
    return new Map((t.data.status.result ?? []).map((r) => [r.root, { toGeneration: r.toGeneration, digest: r.digest }]));
  }
  return undefined;
}
