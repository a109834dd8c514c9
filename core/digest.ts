// Content identities: lowercase hex SHA-256, and `sha256:<hex>` digests of canonical JSON values.
// node:crypto is used as a pure function here; nothing in this file does I/O.
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

export const DIGEST_PREFIX = 'sha256:';
const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
const HEX_PATTERN = /^[0-9a-f]{64}$/;

/** SHA-256 of bytes, or of a string's UTF-8 encoding, as 64 lowercase hex characters. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The identity of a JSON value: `sha256:` + SHA-256 of its canonical JSON text. */
export function digestOf(value: unknown): string {
  return DIGEST_PREFIX + sha256Hex(canonicalJson(value));
}

/** `sha256:` digest of the concatenation of `parts` (text as UTF-8), hashed as they come (no one large string). */
export function digestOfText(parts: Iterable<string | Uint8Array>): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return DIGEST_PREFIX + hash.digest('hex');
}

export function isDigest(s: string): boolean {
  return DIGEST_PATTERN.test(s);
}

export function isSha256Hex(s: string): boolean {
  return HEX_PATTERN.test(s);
}
