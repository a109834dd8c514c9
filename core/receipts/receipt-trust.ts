// Receipt keys pinned off the node (issue 13, item 8): which Ed25519 keys may sign a node's collapse
// receipts comes from the trust policy (signer rules whose predicate types include RECEIPT_SIGNER_SCOPE,
// scoped to nodes), which the chart renders where node-agents cannot write — not from the ConfigMap a
// node publishes about itself. Rotation is two rules for one node with consecutive validity intervals;
// revocation is the snapshot's revokedPublicKeys. A receipt counts when its signature verifies under a
// key trusted for its node at the receipt's own time — a key rotated out since still vouches for what it
// signed while it was current — and not revoked by the snapshot, which must be fresh now.
// The receipt's keyId only picks which trusted key to try; it never makes a key trusted.
// Pure: the policy, the receipt and the moments in, a verdict out (signatures through Node's OpenSSL).
import { createPublicKey, verify } from 'node:crypto';
import { trustedKeys, type TrustMemory, type TrustPolicy } from '../evidence/trust-policy.js';
import { keyIdOf, signatureMessage } from './ledger-line.js';
import { PREDICATE_TYPES } from '../evidence/statement.js';

/** The predicate type a signer rule names to trust a key for collapse receipts (ledger lines and statements). */
export const RECEIPT_SIGNER_SCOPE = PREDICATE_TYPES.collapseReceipt;

export interface ReceiptToTrust {
  node: string;
  /** The receipt id (`sha256:…`) the signature covers. */
  id: string;
  /** 128 hex characters. */
  signature: string;
  keyId: string;
  /** When the receipt says it was issued. */
  at: Date;
}

export type ReceiptTrust =
  | { ok: true; issuer: string; memory: TrustMemory }
  | { ok: false; code: 'KEY_UNTRUSTED' | 'SIGNATURE_INVALID'; message: string };

export function trustReceipt(policy: TrustPolicy, r: ReceiptToTrust, now: Date, memory: TrustMemory = {}): ReceiptTrust {
  const answer = trustedKeys(policy, { predicateType: RECEIPT_SIGNER_SCOPE, node: r.node, run: { start: r.at, end: r.at }, now, validNow: false }, memory);
  if (!answer.ok) return { ok: false, code: 'KEY_UNTRUSTED', message: `no key is trusted for receipts of node ${r.node} at ${r.at.toISOString()}: ${answer.reason}: ${answer.message}` };
  const key = answer.keys.find((k) => keyIdOf(k.publicKey) === r.keyId);
  if (!key) return { ok: false, code: 'KEY_UNTRUSTED', message: `receipt ${r.id} of node ${r.node} is signed by ${r.keyId}, which the trust policy does not trust for that node at ${r.at.toISOString()} (trusted: ${answer.keys.map((k) => `${k.keyId} ${keyIdOf(k.publicKey)}`).join(', ')})` };
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key.publicKey).toString('base64url') }, format: 'jwk' });
  if (!/^[0-9a-f]{128}$/.test(r.signature) || !verify(null, signatureMessage(r.id), publicKey, Buffer.from(r.signature, 'hex'))) {
    return { ok: false, code: 'SIGNATURE_INVALID', message: `the signature over receipt ${r.id} does not verify with ${r.keyId} (${key.keyId})` };
  }
  return { ok: true, issuer: key.keyId, memory: answer.memory };
}
