// The receipt ledger's lines as rows of the node store's `receipts` table (migration 8): the SQL, and
// the check that keeps the rows equal to the ledger file.
//
// The file is the record; a row is a copy of one line. Every column but appended_at (when the row was
// written) is derived from the line alone, so the table can always be rebuilt from the file and never
// holds anything the file lacks. sync() walks the file and the rows together, in sequence order:
//   - each row must equal its line: the line's text and every column derived from it. A row that differs,
//     or a row for a sequence the file has no line for, is RECEIPTS_DIVERGED: someone changed one of the
//     two, and which one is right is not for us to guess;
//   - lines without a row are checked (signature, key, chain) and their rows inserted, in one
//     transaction. That is the tail a crash between file and table left (or the whole ledger when the
//     table is new); a row missing before the last one (an append inside a caller's transaction that
//     rolled back) is restored the same way. A missing row claims nothing, so restoring it from the
//     signed line is safe; a different row would contradict the file.
import type { Database, Statement } from 'better-sqlite3';
import { canonicalJson } from '../../core/canonical-json.js';
import { ReceiptLedgerError } from './errors.js';

export interface ReceiptRow {
  readonly sequence: number;
  readonly id: string;
  readonly previous: string | null;
  readonly transactionId: string;
  readonly state: string;
  readonly bodyJson: string;
  readonly signature: string;
  readonly keyId: string;
  /** The ledger line's exact text, without its newline. */
  readonly line: string;
  readonly appendedAt: string;
}

type DerivedRow = Omit<ReceiptRow, 'appendedAt'>;
const DERIVED: readonly (keyof DerivedRow)[] = ['sequence', 'id', 'previous', 'transactionId', 'state', 'bodyJson', 'signature', 'keyId', 'line'];

const SELECT = `SELECT sequence, id, previous, transaction_id AS transactionId, state, body_json AS bodyJson, signature,
                       key_id AS keyId, line, appended_at AS appendedAt
                FROM receipts`;

/** The columns of one ledger line (text without its newline); LEDGER_CORRUPT when it is not one. */
export function deriveRow(line: string, where: string): DerivedRow {
  let v: { receipt?: { sequence?: unknown; previous?: unknown; transaction?: { id?: unknown; state?: unknown } }; id?: unknown; signature?: unknown; keyId?: unknown };
  try {
    v = JSON.parse(line) as typeof v;
  } catch (e) {
    throw new ReceiptLedgerError('LEDGER_CORRUPT', `${where}: not JSON: ${(e as Error).message}`);
  }
  const r = v?.receipt;
  const previous = r?.previous;
  if (
    typeof r !== 'object' || r === null ||
    typeof r.sequence !== 'number' || !(previous === null || typeof previous === 'string') ||
    typeof r.transaction?.id !== 'string' || typeof r.transaction.state !== 'string' ||
    typeof v.id !== 'string' || typeof v.signature !== 'string' || typeof v.keyId !== 'string'
  ) {
    throw new ReceiptLedgerError('LEDGER_CORRUPT', `${where}: not a ledger line`);
  }
  return {
    sequence: r.sequence,
    id: v.id,
    previous,
    transactionId: r.transaction.id,
    state: r.transaction.state,
    bodyJson: canonicalJson(r),
    signature: v.signature,
    keyId: v.keyId,
    line,
  };
}

/** Every row, in sequence order. */
export function readReceiptRows(db: Database): ReceiptRow[] {
  return db.prepare(`${SELECT} ORDER BY sequence`).all() as ReceiptRow[];
}

export class ReceiptRows {
  private readonly insertStmt: Statement;
  private readonly findStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly now: () => Date,
  ) {
    this.insertStmt = db.prepare(
      `INSERT INTO receipts (sequence, id, previous, transaction_id, state, body_json, signature, key_id, line, appended_at)
       VALUES (@sequence, @id, @previous, @transactionId, @state, @bodyJson, @signature, @keyId, @line, @appendedAt)`,
    );
    // receipts_by_transaction (migration 8) serves this lookup.
    this.findStmt = db.prepare('SELECT line FROM receipts WHERE transaction_id = ? AND state = ? ORDER BY sequence DESC LIMIT 1');
  }

  /** The highest sequence the table holds (0 when it is empty). */
  lastSequence(): number {
    const row = this.db.prepare('SELECT MAX(sequence) AS last FROM receipts').get() as { last: number | null };
    return row.last ?? 0;
  }

  /** Insert the row of a line just appended (and fsynced) to the ledger. */
  insert(line: string): void {
    this.insertStmt.run({ ...deriveRow(line, 'the appended line'), appendedAt: this.now().toISOString() });
  }

  /** Insert the rows of a group of lines just appended (and fsynced together), in one transaction: all or none. */
  insertGroup(lines: readonly string[]): void {
    const appendedAt = this.now().toISOString();
    this.db.transaction(() => {
      for (const line of lines) this.insertStmt.run({ ...deriveRow(line, 'the appended line'), appendedAt });
    })();
  }

  /**
   * The line of the newest receipt of transaction `transactionId` in state `state`, if the table has one.
   * The table holds every line of the ledger once open() has backfilled it (a crash's tail included), and
   * every line appended since unless an insert failed — and then the ledger refuses appends until reopened.
   */
  lineOf(transactionId: string, state: string): string | undefined {
    const row = this.findStmt.get(transactionId, state) as { line: string } | undefined;
    return row?.line;
  }

  /**
   * Make the rows equal the ledger's `lines` (see the header): refuse a divergence, backfill missing rows.
   * `checkTail` verifies a line about to be backfilled (signature and key) and throws if it is bad.
   * Returns how many rows were backfilled.
   */
  sync(path: string, lines: Iterator<string, void>, checkTail: (line: string, where: string) => void): number {
    let n = 0;
    let previousId: string | null = null;
    const diverged = (message: string): ReceiptLedgerError => new ReceiptLedgerError('RECEIPTS_DIVERGED', `${path} and the store's receipts table differ: ${message}; restore whichever was changed`);
    /** Line n, checked as a backfill candidate: signature, key, and its place in the chain. */
    const take = (text: string): DerivedRow => {
      const where = `${path} line ${n}`;
      checkTail(text, where);
      const row = deriveRow(text, where);
      if (row.sequence !== n) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${where}: sequence ${row.sequence}, expected ${n}`);
      if (row.previous !== previousId) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${where}: previous is ${String(row.previous)}, but line ${n - 1} is ${previousId ?? 'none'}`);
      previousId = row.id;
      return row;
    };
    // Rows missing before the last row (a caller's transaction rolled back) wait here: the open iterator
    // keeps the connection busy, so nothing is written until it is done.
    const gaps: DerivedRow[] = [];
    const rows = this.db.prepare(`${SELECT} ORDER BY sequence`).iterate() as IterableIterator<ReceiptRow>;
    try {
      for (let row = rows.next(); row.done !== true; ) {
        const current: ReceiptRow = row.value;
        const next = lines.next();
        if (next.done === true) throw diverged(`the table has a row for sequence ${current.sequence}, the ledger only ${n} lines`);
        n++;
        if (current.sequence > n) {
          gaps.push(take(next.value));
          continue;
        }
        if (current.sequence !== n) throw diverged(`the table has a row for sequence ${current.sequence}, which no line has`);
        if (current.line !== next.value) throw diverged(`the row of sequence ${n} is not the ledger's line ${n}`);
        const derived = deriveRow(next.value, `${path} line ${n}`);
        const bad = DERIVED.find((k) => derived[k] !== current[k]);
        if (bad !== undefined) throw diverged(`the row of sequence ${n} has a ${bad} its line does not have`);
        previousId = current.id;
        row = rows.next();
      }
    } finally {
      rows.return?.();
    }
    let backfilled = 0;
    const now = this.now().toISOString();
    this.db.transaction(() => {
      for (const row of gaps) this.insertStmt.run({ ...row, appendedAt: now });
      backfilled = gaps.length;
      // The tail: lines after the last row, streamed straight into the table.
      for (let next = lines.next(); next.done !== true; next = lines.next()) {
        n++;
        this.insertStmt.run({ ...take(next.value), appendedAt: now });
        backfilled++;
      }
    })();
    return backfilled;
  }
}
