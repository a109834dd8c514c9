// `worldline receipts verify --ledger FILE --public-key KEY`: check a signed receipt ledger line by line
// — its form, the hash chain, and every Ed25519 signature — and name the first bad entry.
//
// Signatures are checked with Node's OpenSSL-backed crypto.verify, not with the library that signed
// them, so a bug in the signer's implementation is not repeated by its verifier. This file imports only
// core/receipts and core/errors (and node:), never node-agent/.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ChainVerifier } from '../core/receipts/chain.js';
import { describeError } from '../core/errors.js';
import { keyIdOf, parseLedgerLine, signatureMessage } from '../core/receipts/ledger-line.js';

export type VerifyProblem = 'LINE_INVALID' | 'BODY_INVALID' | 'ID_MISMATCH' | 'SEQUENCE_BROKEN' | 'PREVIOUS_BROKEN' | 'KEY_MISMATCH' | 'SIGNATURE_INVALID';

export type LedgerVerdict =
  | { ok: true; count: number; head: string | null; keyId: string }
  | { ok: false; line: number; sequence: number | null; problem: VerifyProblem; message: string; verifiedBefore: number };

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

export const VERIFY_USAGE = `usage: worldline receipts verify --ledger FILE --public-key KEY

Verifies a signed receipt ledger: every line's form, the hash chain (ids, sequence, previous links)
and every Ed25519 signature, with Node's OpenSSL-backed crypto.
  --ledger FILE       the ledger (JSON lines) to verify
  --public-key KEY    the signer's public key: a PEM file (SPKI) or a file holding 64 hex characters
Exit status: 0 all entries verify; 1 an entry is bad (the first one is named); 2 usage or read error.
`;

/** Load an Ed25519 public key from PEM text or 64 hex characters (raw 32 bytes). */
export function loadPublicKey(text: string): { key: KeyObject; keyId: string } {
  const trimmed = text.trim();
  let key: KeyObject;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    const x = Buffer.from(trimmed, 'hex').toString('base64url');
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
  } else {
    key = createPublicKey(trimmed);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`not an Ed25519 public key (${String(key.asymmetricKeyType)})`);
  const raw = Buffer.from(key.export({ format: 'jwk' }).x ?? '', 'base64url');
  return { key, keyId: keyIdOf(raw) };
}

/** Verify ledger bytes against a public key. Stops at the first bad line. */
export function verifyLedger(data: Buffer, publicKey: { key: KeyObject; keyId: string }): LedgerVerdict {
  const chain = new ChainVerifier();
  let lineNo = 0;
  let pos = 0;
  while (pos < data.length) {
    lineNo++;
    const nl = data.indexOf(0x0a, pos);
    const bad = (problem: VerifyProblem, message: string, sequence: number | null = null): LedgerVerdict => ({
      ok: false,
      line: lineNo,
      sequence,
      problem,
      message,
      verifiedBefore: chain.count,
    });
    if (nl < 0) return bad('LINE_INVALID', 'the last line is incomplete (no newline): an append was cut short or the file was truncated');
    const text = data.subarray(pos, nl).toString('utf8');
    pos = nl + 1;

    const parsed = parseLedgerLine(text);
    if (!parsed.ok) return bad('LINE_INVALID', parsed.message, sequenceOf(text));
    const { line } = parsed;
    const fault = chain.next({ body: line.receipt, id: line.id });
    if (fault) return bad(fault.problem, fault.message, fault.sequence);
    const sequence = chain.count; // the chain just accepted this entry, so its sequence is its position
    if (line.keyId !== publicKey.keyId) {
      return bad('KEY_MISMATCH', `signed by ${line.keyId}, not by the given key ${publicKey.keyId}`, sequence);
    }
    if (!verify(null, signatureMessage(line.id), publicKey.key, Buffer.from(line.signature, 'hex'))) {
      return bad('SIGNATURE_INVALID', `the Ed25519 signature over ${line.id} does not verify with ${publicKey.keyId}`, sequence);
    }
  }
  return { ok: true, count: chain.count, head: chain.head, keyId: publicKey.keyId };
}

/** A best-effort sequence for naming a line that did not parse. */
function sequenceOf(text: string): number | null {
  const m = /"sequence":(\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}

export function runReceiptsVerify(args: readonly string[], io: Output): number {
  let ledger: string | undefined;
  let keyPath: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') {
      io.out(VERIFY_USAGE);
      return 0;
    }
    const value = args[i + 1];
    if ((a === '--ledger' || a === '--public-key') && value !== undefined) {
      if (a === '--ledger') ledger = value;
      else keyPath = value;
      i++;
      continue;
    }
    io.err(`worldline receipts verify: unexpected argument ${JSON.stringify(a)}\n${VERIFY_USAGE}`);
    return 2;
  }
  if (ledger === undefined || keyPath === undefined) {
    io.err(`worldline receipts verify: --ledger and --public-key are both required\n${VERIFY_USAGE}`);
    return 2;
  }
  let publicKey: { key: KeyObject; keyId: string };
  let data: Buffer;
  try {
    publicKey = loadPublicKey(readFileSync(keyPath, 'utf8'));
  } catch (e) {
    io.err(`worldline receipts verify: cannot use ${keyPath} as a public key: ${describeError(e)}\n`);
    return 2;
  }
  try {
    data = readFileSync(ledger);
  } catch (e) {
    io.err(`worldline receipts verify: cannot read ${ledger}: ${describeError(e)}\n`);
    return 2;
  }
  const started = process.hrtime.bigint();
  const v = verifyLedger(data, publicKey);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (v.ok) {
    const range = v.count === 0 ? 'none' : `1..${v.count}`;
    io.out(
      `OK ${ledger}: ${v.count} receipts (sequence ${range}), head ${v.head ?? 'none'}, ` +
        `chain and Ed25519 signatures verified against ${v.keyId} in ${seconds.toFixed(2)}s\n`,
    );
    return 0;
  }
  io.err(
    `FAIL ${ledger} line ${v.line} (sequence ${v.sequence ?? 'unknown'}): ${v.problem}: ${v.message}\n` +
      `(${v.verifiedBefore} entries before it verified; entries after it were not checked)\n`,
  );
  return 1;
}
