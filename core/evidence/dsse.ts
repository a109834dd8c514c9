// DSSE envelopes (the signing format in-toto attestations travel in), read as evidence must be: bounded
// before anything is decoded, exactly one meaning per text (strict JSON, closed fields, canonical base64
// only), and trusted only through keys the verifier brings. A signature counts when it verifies over the
// pre-authentication encoding (PAE) of the payload type and payload under one of the trusted public
// keys; the envelope's keyid is a hint nobody reads for trust, and a key listed twice under two names
// still counts once. Verification returns the exact verified payload bytes and the distinct trusted keys
// that signed them. Ed25519 (RFC 8032) through Node's OpenSSL.
import { createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { parseStrictJson, StrictJsonError } from './strict-json.js';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export type DsseErrorCode =
  | 'ENVELOPE_TOO_LARGE'
  | 'ENVELOPE_INVALID'
  | 'BASE64_NON_CANONICAL'
  | 'PAYLOAD_TOO_LARGE'
  | 'PAYLOAD_TYPE_MISMATCH'
  | 'NO_TRUSTED_SIGNATURE'
  | 'TOO_FEW_SIGNERS';

export class DsseError extends Error {
  constructor(
    readonly code: DsseErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DsseError';
  }
}

export interface DsseLimits {
  maxEnvelopeBytes: number;
  maxPayloadBytes: number;
  maxSignatures: number;
  /** JSON nesting of the envelope (it is flat: 4 is plenty). */
  maxDepth: number;
}

export const DEFAULT_DSSE_LIMITS: DsseLimits = { maxEnvelopeBytes: 1 << 20, maxPayloadBytes: 512 << 10, maxSignatures: 8, maxDepth: 4 };

export interface TrustedKey {
  /** The name the verifier gives this key (reported back; never matched against the envelope). */
  keyId: string;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
}

export interface Envelope {
  payloadType: string;
  payload: string;
  signatures: { keyid?: string; sig: string }[];
}

export interface Verified {
  payloadType: string;
  /** The exact bytes the signatures cover. */
  payload: Uint8Array;
  /** The distinct trusted keys that signed (one name per public key), sorted. */
  keyIds: string[];
  /** The same keys as raw public keys in hex, sorted (names may repeat across keys; these do not). */
  publicKeys: string[];
}

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in ASCII decimal bytes. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding, refusing any text that is not the one encoding of its bytes. */
export function decodeCanonicalBase64(text: string, what: string): Buffer {
  const bytes = Buffer.from(text, 'base64');
  if (!B64.test(text) || text.length % 4 !== 0 || bytes.toString('base64') !== text) {
    throw new DsseError('BASE64_NON_CANONICAL', `${what} is not canonical base64`);
  }
  return bytes;
}

function rawEd25519Public(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new Error(`an Ed25519 public key has 32 bytes, not ${raw.length}`);
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });
}

/** Signs `payload` as one envelope signature with an Ed25519 private key (PEM or KeyObject). */
export function signEnvelope(payloadType: string, payload: Uint8Array, key: { keyId: string; privateKey: KeyObject | string }): Envelope {
  const priv = typeof key.privateKey === 'string' ? createPrivateKey(key.privateKey) : key.privateKey;
  const sig = edSign(null, pae(payloadType, payload), priv);
  return { payloadType, payload: Buffer.from(payload).toString('base64'), signatures: [{ keyid: key.keyId, sig: sig.toString('base64') }] };
}

function invalid(message: string): never {
  throw new DsseError('ENVELOPE_INVALID', message);
}

/** Reads the envelope's closed shape from bounded, strict JSON. */
export function parseEnvelope(bytes: Uint8Array, limits: DsseLimits = DEFAULT_DSSE_LIMITS): Envelope {
  if (bytes.length > limits.maxEnvelopeBytes) throw new DsseError('ENVELOPE_TOO_LARGE', `envelope of ${bytes.length} bytes exceeds ${limits.maxEnvelopeBytes}`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return invalid('the envelope is not UTF-8');
  }
  let v: unknown;
  try {
    v = parseStrictJson(text, { maxLength: limits.maxEnvelopeBytes, maxDepth: limits.maxDepth });
  } catch (e) {
    return invalid(`the envelope is not strict JSON: ${e instanceof StrictJsonError ? `${e.code}: ${e.message}` : (e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return invalid('the envelope is not an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!['payloadType', 'payload', 'signatures'].includes(k)) invalid(`unknown envelope field ${JSON.stringify(k)}`);
  if (typeof o.payloadType !== 'string' || o.payloadType === '') invalid('payloadType must be a non-empty string');
  if (typeof o.payload !== 'string') invalid('payload must be a base64 string');
  if (!Array.isArray(o.signatures) || o.signatures.length === 0) invalid('signatures must be a non-empty list');
  if (o.signatures.length > limits.maxSignatures) invalid(`more than ${limits.maxSignatures} signatures`);
  const signatures = o.signatures.map((s: unknown, i: number) => {
    if (typeof s !== 'object' || s === null || Array.isArray(s)) return invalid(`signatures[${i}] is not an object`);
    const so = s as Record<string, unknown>;
    for (const k of Object.keys(so)) if (k !== 'keyid' && k !== 'sig') invalid(`unknown field ${JSON.stringify(k)} in signatures[${i}]`);
    if (typeof so.sig !== 'string') invalid(`signatures[${i}].sig must be a base64 string`);
    if (so.keyid !== undefined && typeof so.keyid !== 'string') invalid(`signatures[${i}].keyid must be a string`);
    return { ...(so.keyid !== undefined ? { keyid: so.keyid } : {}), sig: so.sig };
  });
  return { payloadType: o.payloadType, payload: o.payload, signatures };
}

/**
 * Verifies an envelope against `trusted` keys: the payload type must be `payloadType`, and at least
 * `threshold` (default 1) distinct trusted keys must have signed. Signatures by keys not trusted are
 * ignored; a malformed signature refuses the whole envelope.
 */
export function verifyEnvelope(bytes: Uint8Array, o: { payloadType: string; trusted: readonly TrustedKey[]; threshold?: number; limits?: DsseLimits }): Verified {
  const limits = o.limits ?? DEFAULT_DSSE_LIMITS;
  const env = parseEnvelope(bytes, limits);
  if (env.payloadType !== o.payloadType) throw new DsseError('PAYLOAD_TYPE_MISMATCH', `payload type ${JSON.stringify(env.payloadType)}, expected ${JSON.stringify(o.payloadType)}`);
  const payload = decodeCanonicalBase64(env.payload, 'payload');
  if (payload.length > limits.maxPayloadBytes) throw new DsseError('PAYLOAD_TOO_LARGE', `payload of ${payload.length} bytes exceeds ${limits.maxPayloadBytes}`);
  const sigs = env.signatures.map((s, i) => {
    const sig = decodeCanonicalBase64(s.sig, `signatures[${i}].sig`);
    if (sig.length !== 64) invalid(`signatures[${i}].sig is ${sig.length} bytes, not 64`);
    return sig;
  });
  const message = pae(env.payloadType, payload);
  // One entry per distinct public key: an alias (the same key under another name) cannot count twice.
  const keys = new Map<string, { keyId: string; key: KeyObject }>();
  for (const t of o.trusted) {
    const hex = Buffer.from(t.publicKey).toString('hex');
    if (!keys.has(hex)) keys.set(hex, { keyId: t.keyId, key: rawEd25519Public(t.publicKey) });
  }
  const signers = new Set<string>();
  const signed = new Set<string>();
  for (const sig of sigs) {
    for (const [hex, k] of keys) {
      if (!edVerify(null, message, k.key, sig)) continue;
      signers.add(k.keyId);
      signed.add(hex);
    }
  }
  const threshold = o.threshold ?? 1;
  if (signers.size === 0) throw new DsseError('NO_TRUSTED_SIGNATURE', 'no signature verifies under a trusted key');
  // Counted by name, the stricter count: one key under two names is one entry, two keys under one name one signer.
  if (signers.size < threshold) throw new DsseError('TOO_FEW_SIGNERS', `${signers.size} distinct trusted signer(s), ${threshold} required`);
  return { payloadType: env.payloadType, payload: new Uint8Array(payload), keyIds: [...signers].sort(), publicKeys: [...signed].sort() };
}
