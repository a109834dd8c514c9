// Who may have signed a ledger's receipts, and the check of one receipt's signature against them, for
// `worldline receipts verify` and its threads (Node's OpenSSL-backed crypto.verify, never the signer's library).
import { verify, type KeyObject } from 'node:crypto';
import { signatureMessage } from '../core/receipts/ledger-line.js';
import { trustReceipt } from '../core/receipts/receipt-trust.js';
import type { TrustPolicy } from '../core/evidence/trust-policy.js';
import type { SignerCheck } from './receipts-lines.js';

/**
 * Who may have signed a ledger's receipts: one given public key, or the keys a trust policy pins for the
 * node at each receipt's own time (rotation: consecutive rules; revocation: the snapshot), judged `now`.
 */
export type LedgerSigners = { key: KeyObject; keyId: string } | { policy: TrustPolicy; node: string; now: Date };

/** Why a signature by `keyId` over receipt `id` (issued `issuedAt`) does not count, or null when it does. */
export function signerProblem(signers: LedgerSigners, r: { id: string; keyId: string; signature: string; issuedAt: string }): { problem: 'KEY_MISMATCH' | 'KEY_UNTRUSTED' | 'SIGNATURE_INVALID'; message: string } | null {
  if ('policy' in signers) {
    const t = trustReceipt(signers.policy, { node: signers.node, id: r.id, keyId: r.keyId, signature: r.signature, at: new Date(r.issuedAt) }, signers.now);
    return t.ok ? null : { problem: t.code, message: t.message };
  }
  if (r.keyId !== signers.keyId) return { problem: 'KEY_MISMATCH', message: `signed by ${r.keyId}, not by the given key ${signers.keyId}` };
  if (!verify(null, signatureMessage(r.id), signers.key, Buffer.from(r.signature, 'hex'))) return { problem: 'SIGNATURE_INVALID', message: `the Ed25519 signature over ${r.id} does not verify with ${signers.keyId}` };
  return null;
}

/** The signature check of checkLines for these signers. */
export function signerCheck(signers: LedgerSigners): SignerCheck {
  return (r) => signerProblem(signers, r);
}
