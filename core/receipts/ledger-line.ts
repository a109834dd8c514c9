// One line of the signed receipt ledger, shared by the writer (node-agent) and the verifier (cli).
//
// A ledger is a UTF-8 file of lines, each the canonical JSON of
//   { receipt: <body>, id: 'sha256:…', signature: <128 hex>, keyId: 'ed25519:<16 hex>' }
// followed by '\n'.
//
// Signature: Ed25519 (RFC 8032, pure, no pre-hash) over the UTF-8 bytes of
//   SIGNATURE_DOMAIN + id            e.g. "worldline.receipt.signature/v1\nsha256:3f…"
// The id already commits to the canonical body (SHA-256), so signing it signs the body; the domain
// prefix keeps a receipt signature from being valid for any other message the same key might sign.
// keyId = 'ed25519:' + the first 16 hex characters of SHA-256 over the 32 raw public-key bytes; it
// names the key, it does not authenticate anything.
import { z } from 'zod';
import { canonicalJson, isCanonicalParse } from '../canonical-json.js';
import { sha256Hex } from '../digest.js';

export const SIGNATURE_DOMAIN = 'worldline.receipt.signature/v1\n';

export interface LedgerLine {
  readonly receipt: unknown;
  readonly id: string;
  readonly signature: string;
  readonly keyId: string;
}

const lineSchema = z.strictObject({
  receipt: z.unknown(),
  id: z.string(),
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'expected 64 signature bytes as lowercase hex'),
  keyId: z.string().regex(/^ed25519:[0-9a-f]{16}$/, 'expected ed25519:<16 hex>'),
});

export function signatureMessage(id: string): Uint8Array {
  return new TextEncoder().encode(SIGNATURE_DOMAIN + id);
}

export function keyIdOf(rawPublicKey: Uint8Array): string {
  if (rawPublicKey.length !== 32) throw new Error(`an Ed25519 public key has 32 bytes, not ${rawPublicKey.length}`);
  return 'ed25519:' + sha256Hex(rawPublicKey).slice(0, 16);
}

/** The exact text of a ledger line, newline included. */
export function formatLedgerLine(line: LedgerLine): string {
  return canonicalJson(line) + '\n';
}

/** Parse one line (without its newline): canonical form and shape; id, chain and signature are checked elsewhere. */
export function parseLedgerLine(text: string): { ok: true; line: LedgerLine } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `not JSON: ${(e as Error).message}` };
  }
  // One text per line: re-serializing must give the same bytes (no spacing, key order or duplicate keys
  // that JSON.parse would quietly accept).
  if (!isCanonicalParse(value, text)) return { ok: false, message: 'not in canonical JSON form (spacing, key order, escapes, duplicate keys or numbers differ)' };
  const r = lineSchema.safeParse(value);
  if (!r.success) {
    const first = r.error.issues[0];
    // Stryker: '' for '.' and for 'invalid' survive as equivalent; the line schema is flat (issue paths have at most one
    // element) and a failed zod parse always has a first issue.
    return { ok: false, message: `${first?.path.join('.') || '(line)'}: ${first?.message ?? 'invalid'}` };
  }
  return { ok: true, line: { receipt: r.data.receipt, id: r.data.id, signature: r.data.signature, keyId: r.data.keyId } };
}

export function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
