// The cross-check the ledger makes before it opens: a fixed probe message signed by OpenSSL (the signer
// every receipt uses) and by @noble/ed25519 (an independent implementation). Ed25519 signatures are
// deterministic, so two correct implementations produce the same 64 bytes for the same seed and message;
// any difference means one of them is wrong on this machine (a broken OpenSSL build, a patched library),
// and the ledger refuses to sign anything with it. The OpenSSL signature must also verify under the
// public key @noble derived, so a wrong but self-consistent signer is caught too. It costs one signature
// by each and one @noble verification, once per open.
import { ed } from './ed25519.js';
import { ReceiptLedgerError } from './errors.js';
import type { SigningKey } from './signing-key.js';

/** The probe: fixed bytes that no receipt's signature message can equal (those start with their own domain). */
export const SIGNER_PROBE = new TextEncoder().encode('worldline receipts signer cross-check v1');

/** Throws LEDGER_SIGNER_DISAGREES unless both signers produce the same valid signature of the probe. */
export function checkSigners(key: Pick<SigningKey, 'sign' | 'signIndependently' | 'publicKey' | 'keyPath'>): void {
  const openssl = Buffer.from(key.sign(SIGNER_PROBE));
  const noble = Buffer.from(key.signIndependently(SIGNER_PROBE));
  if (!openssl.equals(noble)) {
    throw new ReceiptLedgerError('LEDGER_SIGNER_DISAGREES', `OpenSSL and @noble/ed25519 sign the probe differently with ${key.keyPath} (${openssl.toString('hex').slice(0, 16)}… against ${noble.toString('hex').slice(0, 16)}…); no receipt is signed until they agree`);
  }
  if (!ed.verify(openssl, SIGNER_PROBE, key.publicKey)) {
    throw new ReceiptLedgerError('LEDGER_SIGNER_DISAGREES', `the probe signature made with ${key.keyPath} does not verify under its public key`);
  }
}
