// The two halves of verifying a receipt ledger, so the first can run on several threads:
//   checkLines: each line on its own — canonical form and shape, the body against its schema, the id as
//               the SHA-256 of the body's canonical text (taken from the line, not serialized again), and
//               the signature; what links a line to the others (its sequence, its previous) is returned;
//   linkLines:  in ledger order, the sequence counting up from 1 and each previous naming the entry
//               before it, and the first problem of all, named by line, as one pass over the ledger would.
// A line-level problem ends its chunk (nothing after it can be the first problem); a signature problem is
// reported after its own line's links are checked, as the one-pass verifier did.
import { sha256Hex } from '../core/digest.js';
import { idFault, linkFault } from '../core/receipts/chain.js';
import { parseLedgerLine } from '../core/receipts/ledger-line.js';
import { parseReceiptBody, RECEIPT_FORMAT } from '../core/receipts/receipt.js';

export type LineProblem = 'LINE_INVALID' | 'BODY_INVALID' | 'ID_MISMATCH' | 'SEQUENCE_BROKEN' | 'PREVIOUS_BROKEN' | 'KEY_MISMATCH' | 'KEY_UNTRUSTED' | 'SIGNATURE_INVALID';

/** Why a line's signature does not count (KEY_MISMATCH, KEY_UNTRUSTED, SIGNATURE_INVALID), or null. */
export type SignerCheck = (r: { id: string; keyId: string; signature: string; issuedAt: string }) => { problem: LineProblem; message: string } | null;

export interface ChunkResult {
  /** Per line that passed its own checks, in order. */
  ids: string[];
  sequences: number[];
  previous: (string | null)[];
  /** The chunk's first problem: at line `index` of the chunk (0-based). */
  fault?: { index: number; problem: LineProblem; message: string; sequence: number | null; signer: boolean };
}

/** A best-effort sequence for naming a line that did not parse. */
function sequenceOf(text: string): number | null {
  const m = /"sequence":(\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}

const SIGNATURE_TAIL = ',"signature":"'.length + 128 + '"}'.length;

/** Checks the complete lines of `text` (each ending in '\n'), stopping at the first problem. */
export function checkLines(text: string, signer: SignerCheck): ChunkResult {
  const out: ChunkResult = { ids: [], sequences: [], previous: [] };
  let pos = 0;
  let index = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const line = text.slice(pos, nl);
    pos = nl + 1;
    const fault = (problem: LineProblem, message: string, sequence: number | null, signerFault = false): ChunkResult => ({ ...out, fault: { index, problem, message, sequence, signer: signerFault } });
    const parsed = parseLedgerLine(line);
    if (!parsed.ok) return fault('LINE_INVALID', parsed.message, sequenceOf(line));
    const raw = parsed.line.receipt as { sequence?: unknown } | null;
    const claimed = typeof raw?.sequence === 'number' ? raw.sequence : null;
    const body = parseReceiptBody(parsed.line.receipt);
    if (!body.ok) return fault('BODY_INVALID', `receipt body is not a valid ${RECEIPT_FORMAT} body: ${body.message}`, claimed);
    // The line is canonical and its keys sorted (id, keyId, receipt, signature), so the body's canonical
    // text is the line's own, between "receipt": and the signature; no string value can hold that marker
    // unescaped.
    const start = line.indexOf('"receipt":') + '"receipt":'.length;
    const id = `sha256:${sha256Hex(line.slice(start, line.length - SIGNATURE_TAIL))}`;
    const wrongId = idFault(parsed.line.id, id);
    if (wrongId) return fault(wrongId.problem, wrongId.message, claimed);
    out.ids.push(id);
    out.sequences.push(body.body.sequence);
    out.previous.push(body.body.previous);
    const signed = signer({ id, keyId: parsed.line.keyId, signature: parsed.line.signature, issuedAt: body.body.issuedAt });
    if (signed) return fault(signed.problem, signed.message, body.body.sequence, true);
    index++;
  }
  return out;
}

export type LinkVerdict = { ok: true; count: number; head: string | null } | { ok: false; line: number; sequence: number | null; problem: LineProblem; message: string; verifiedBefore: number };

/** Links the chunks' lines in order and names the first problem (see the file comment). `incomplete`: the ledger ends without a newline. */
export function linkLines(chunks: readonly ChunkResult[], incomplete: boolean): LinkVerdict {
  let count = 0;
  let head: string | null = null;
  let line = 0;
  for (const c of chunks) {
    for (let i = 0; i < c.ids.length; i++) {
      line++;
      const sequence = c.sequences[i]!;
      const broken = linkFault(count, head, sequence, c.previous[i] ?? null);
      if (broken) return { ok: false, line, sequence, problem: broken.problem, message: broken.message, verifiedBefore: count };
      head = c.ids[i]!;
      count++;
      // A signature problem counts its own line as verified before it, as the one-pass verifier reported.
      if (c.fault?.signer && c.fault.index === i) return { ok: false, line, sequence, problem: c.fault.problem, message: c.fault.message, verifiedBefore: count };
    }
    if (c.fault && !c.fault.signer) return { ok: false, line: line + 1, sequence: c.fault.sequence, problem: c.fault.problem, message: c.fault.message, verifiedBefore: count };
  }
  if (incomplete) return { ok: false, line: line + 1, sequence: null, problem: 'LINE_INVALID', message: 'the last line is incomplete (no newline): an append was cut short or the file was truncated', verifiedBefore: count };
  return { ok: true, count, head };
}
