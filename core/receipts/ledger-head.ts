// A node's ledger head as the cluster recorded it (issue 13, receipts anchored off the node): the sequence,
// receipt id, key id and signature of the newest receipt the controller has seen that node report on a
// Collapse, kept in a ConfigMap the node-agents cannot write. The ledger is a hash chain, so a recorded
// (sequence, id) pins every receipt up to it: root on a node who later rewrites or truncates that history
// — even re-signing it all with the node's own key — no longer has the recorded id at that sequence, and
// `worldline receipts verify --heads` says so.
//
// nextHead() is the recording rule: a head only moves forward, under the key first seen for the node. A
// different id at the recorded sequence, or a new key, is never recorded over the old head: it is a
// conflict for an operator to look at — unless the recorder verified the new receipt under a key the
// trust policy pins for the node (receipt-trust.ts): that is a rotation, and the head moves on.
import { z } from 'zod';

export const LEDGER_HEAD_FORMAT = 'worldline.ledger-head/v1';

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lowercase hex>');

export const ledgerHeadSchema = z.strictObject({
  format: z.literal(LEDGER_HEAD_FORMAT),
  node: z.string().min(1).max(253),
  sequence: z.number().int().min(1),
  receipt: digest,
  keyId: z.string().min(1).max(128),
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'expected an Ed25519 signature as 128 lowercase hex'),
  recordedAt: z.iso.datetime({ offset: false }),
});

export type LedgerHead = z.infer<typeof ledgerHeadSchema>;

/** A receipt as a Collapse's status shows it. */
export interface SeenReceipt {
  sequence: number;
  id: string;
  keyId: string;
  signature: string;
}

export type HeadStep =
  | { kind: 'advance'; head: LedgerHead }
  | { kind: 'keep' }
  | { kind: 'conflict'; code: 'HEAD_CONFLICT' | 'KEY_CHANGED'; message: string };

/** Parses a recorded head (untrusted text), or says what is wrong with it. */
export function parseLedgerHead(text: string): { ok: true; head: LedgerHead } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `not JSON: ${(e as Error).message}` };
  }
  const r = ledgerHeadSchema.safeParse(value);
  if (r.success) return { ok: true, head: r.data };
  const first = r.error.issues[0];
  return { ok: false, message: `${first && first.path.length > 0 ? first.path.join('.') : '(head)'}: ${first?.message ?? 'invalid'}` };
}

/** What recording `seen` does to the head recorded for `node` (undefined: none yet). */
export function nextHead(recorded: LedgerHead | undefined, seen: SeenReceipt, node: string, now: Date, o: { keyPinned?: boolean } = {}): HeadStep {
  const head = (): LedgerHead => ({ format: LEDGER_HEAD_FORMAT, node, sequence: seen.sequence, receipt: seen.id, keyId: seen.keyId, signature: seen.signature, recordedAt: now.toISOString() });
  if (!ledgerHeadSchema.shape.receipt.safeParse(seen.id).success || !ledgerHeadSchema.shape.signature.safeParse(seen.signature).success || !Number.isInteger(seen.sequence) || seen.sequence < 1) {
    return { kind: 'conflict', code: 'HEAD_CONFLICT', message: `node ${node} reported a receipt that is not well formed (sequence ${seen.sequence}, id ${seen.id})` };
  }
  if (!recorded) return { kind: 'advance', head: head() };
  if (seen.keyId !== recorded.keyId && !o.keyPinned) {
    return { kind: 'conflict', code: 'KEY_CHANGED', message: `node ${node} reported receipt ${seen.sequence} signed by ${seen.keyId}; its recorded head is signed by ${recorded.keyId} (a rotated key is recorded only by an operator)` };
  }
  if (seen.sequence === recorded.sequence && seen.id !== recorded.receipt) {
    return { kind: 'conflict', code: 'HEAD_CONFLICT', message: `node ${node} reported receipt ${seen.id} at sequence ${seen.sequence}, where the cluster recorded ${recorded.receipt}: its ledger was rewritten` };
  }
  if (seen.keyId !== recorded.keyId && seen.sequence <= recorded.sequence) {
    return { kind: 'conflict', code: 'HEAD_CONFLICT', message: `node ${node} reported receipt ${seen.sequence} under ${seen.keyId}, not after its recorded head ${recorded.sequence} (${recorded.keyId}): a rotated key continues the ledger, it does not sign its past` };
  }
  return seen.sequence > recorded.sequence ? { kind: 'advance', head: head() } : { kind: 'keep' };
}
