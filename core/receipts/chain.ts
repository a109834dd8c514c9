// Receipt chain verification: each entry's id is the hash of its body, sequences count up from 1 with
// no gap, and each body's `previous` is the id of the entry before it (null for the first).
// Verification stops at the first bad entry and names it; later entries are not judged.
import { digestOf } from '../digest.js';
import { parseReceiptBody, RECEIPT_FORMAT, type ReceiptBody } from './receipt.js';

export type ChainProblem = 'BODY_INVALID' | 'ID_MISMATCH' | 'SEQUENCE_BROKEN' | 'PREVIOUS_BROKEN';

export interface ChainFault {
  /** 0-based position of the bad entry in what was given. */
  readonly index: number;
  /** The sequence the entry claims, when it has a readable one. */
  readonly sequence: number | null;
  readonly problem: ChainProblem;
  readonly message: string;
}

export interface ChainEntry {
  readonly body: unknown;
  readonly id: unknown;
}

/** Incremental verifier, for callers that stream a long ledger. After a fault it refuses everything. */
export class ChainVerifier {
  private index = 0;
  private previousId: string | null = null;
  private fault: ChainFault | null = null;

  /** Check the next entry; null if it extends the chain, else the fault (also kept as `firstFault`). */
  next(entry: ChainEntry): ChainFault | null {
    if (this.fault) return this.fault;
    const index = this.index;
    const expected = index + 1;
    const raw = entry.body as { sequence?: unknown } | null;
    const claimed = typeof raw?.sequence === 'number' ? raw.sequence : null;
    const bad = (problem: ChainProblem, message: string): ChainFault => (this.fault = { index, sequence: claimed, problem, message });

    const parsed = parseReceiptBody(entry.body);
    if (!parsed.ok) return bad('BODY_INVALID', `receipt body is not a valid ${RECEIPT_FORMAT} body: ${parsed.message}`);
    const body: ReceiptBody = parsed.body;
    // The id is computed over the body exactly as stored, not over a re-built copy.
    const actualId = digestOf(entry.body);
    if (entry.id !== actualId) return bad('ID_MISMATCH', `stored id ${String(entry.id)} is not the hash of the body (${actualId})`);
    if (body.sequence !== expected) {
      // Stryker: `body.sequence >= expected` survives as equivalent; here body.sequence !== expected.
      const why = body.sequence > expected ? 'an entry is missing or out of order' : 'an entry is repeated or out of order';
      return bad('SEQUENCE_BROKEN', `expected sequence ${expected}, found ${body.sequence} (${why})`);
    }
    if (body.previous !== this.previousId) {
      return bad('PREVIOUS_BROKEN', `previous is ${String(body.previous)}, but the entry before it is ${this.previousId ?? 'none (this is the first)'}`);
    }
    this.previousId = actualId;
    this.index++;
    return null;
  }

  get count(): number {
    return this.index;
  }

  get head(): string | null {
    return this.previousId;
  }

  get firstFault(): ChainFault | null {
    return this.fault;
  }
}

export type ChainResult =
  | { readonly ok: true; readonly count: number; readonly head: string | null }
  | { readonly ok: false; readonly fault: ChainFault };

export function verifyChain(receipts: Iterable<ChainEntry>): ChainResult {
  const v = new ChainVerifier();
  for (const r of receipts) {
    const fault = v.next(r);
    if (fault) return { ok: false, fault };
  }
  return { ok: true, count: v.count, head: v.head };
}
