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

/** Why a body stored under `storedId` whose hash is `actualId` is not that entry, or null when it is. */
export function idFault(storedId: unknown, actualId: string): { problem: 'ID_MISMATCH'; message: string } | null {
  return storedId === actualId ? null : { problem: 'ID_MISMATCH', message: `stored id ${String(storedId)} is not the hash of the body (${actualId})` };
}

/**
 * Why an entry claiming `sequence` and `previous` does not follow the chain so far (`count` entries, the
 * last one `head`), or null when it does.
 */
export function linkFault(count: number, head: string | null, sequence: number, previous: string | null): { problem: 'SEQUENCE_BROKEN' | 'PREVIOUS_BROKEN'; message: string } | null {
  const expected = count + 1;
  if (sequence !== expected) {
    // Stryker: `sequence >= expected` survives as equivalent; here sequence !== expected.
    const why = sequence > expected ? 'an entry is missing or out of order' : 'an entry is repeated or out of order';
    return { problem: 'SEQUENCE_BROKEN', message: `expected sequence ${expected}, found ${sequence} (${why})` };
  }
  if (previous !== head) return { problem: 'PREVIOUS_BROKEN', message: `previous is ${String(previous)}, but the entry before it is ${head ?? 'none (this is the first)'}` };
  return null;
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
    const raw = entry.body as { sequence?: unknown } | null;
    const claimed = typeof raw?.sequence === 'number' ? raw.sequence : null;
    const bad = (problem: ChainProblem, message: string): ChainFault => (this.fault = { index, sequence: claimed, problem, message });

    const parsed = parseReceiptBody(entry.body);
    if (!parsed.ok) return bad('BODY_INVALID', `receipt body is not a valid ${RECEIPT_FORMAT} body: ${parsed.message}`);
    const body: ReceiptBody = parsed.body;
    // The id is computed over the body exactly as stored, not over a re-built copy.
    const actualId = digestOf(entry.body);
    const fault = idFault(entry.id, actualId) ?? linkFault(index, this.previousId, body.sequence, body.previous);
    if (fault) return bad(fault.problem, fault.message);
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
