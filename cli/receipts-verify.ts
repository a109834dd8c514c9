// `worldline receipts verify --ledger FILE --public-key KEY`: check a signed receipt ledger line by line
// — its form, the hash chain, and every Ed25519 signature — and name the first bad entry.
//
// Signatures are checked with Node's OpenSSL-backed crypto.verify, not with the library that signed
// them, so a bug in the signer's implementation is not repeated by its verifier. This file imports only
// core/receipts and core/errors (and node:), never node-agent/.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { describeError } from '../core/errors.js';
import { keyIdOf, parseLedgerLine } from '../core/receipts/ledger-line.js';
import { parseLedgerHead, type LedgerHead } from '../core/receipts/ledger-head.js';
import { readTrustPolicyFile } from '../kube/trust-policy-file.js';
import { checkLines, linkLines, type ChunkResult, type LineProblem, type LinkVerdict } from './receipts-lines.js';
import { signerCheck, signerProblem, type LedgerSigners } from './receipts-signers.js';

export type { LedgerSigners } from './receipts-signers.js';

export type VerifyProblem = LineProblem;

const signersName = (s: LedgerSigners): string => ('policy' in s ? `the keys the trust policy pins for node ${s.node}` : s.keyId);

/** How a ledger that verifies on its own disagrees with the head the cluster recorded for its node. */
export type HeadProblem = 'HEAD_INVALID' | 'HEAD_KEY_MISMATCH' | 'HEAD_SIGNATURE_INVALID' | 'HEAD_MISSING' | 'HEAD_MISMATCH';

export type LedgerVerdict =
  | { ok: true; count: number; head: string | null; keyId: string }
  | { ok: false; line: number; sequence: number | null; problem: VerifyProblem; message: string; verifiedBefore: number };

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

export const VERIFY_USAGE = `usage: worldline receipts verify --ledger FILE (--public-key KEY | --trust-policy FILE --node NODE) [--heads FILE]

Verifies a signed receipt ledger: every line's form, the hash chain (ids, sequence, previous links)
and every Ed25519 signature, with Node's OpenSSL-backed crypto.
  --ledger FILE       the ledger (JSON lines) to verify
  --public-key KEY    the signer's public key: a PEM file (SPKI) or a file holding 64 hex characters
  --trust-policy FILE the trust policy (the chart's trustPolicy as JSON): every receipt must be signed by a
                      key it pins for --node at the receipt's time (rotation), not revoked (KEY_UNTRUSTED)
  --heads FILE        the cluster's record of ledger heads: the ConfigMap worldline-ledger-heads as
                      \`kubectl get -o json\` prints it (with --node), or one head's JSON; the ledger must
                      hold that receipt at that sequence, so history rewritten or cut since is refused
  --node NODE         whose head to take from the ConfigMap, and whose pinned keys count
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

/** Verify ledger bytes against a public key, or the keys a trust policy pins, on this thread. Names the first bad line. */
export function verifyLedger(data: Buffer, signers: LedgerSigners): LedgerVerdict {
  const complete = data.lastIndexOf(0x0a) + 1;
  const chunk = checkLines(data.subarray(0, complete).toString('utf8'), signerCheck(signers));
  return verdictOf(linkLines([chunk], complete < data.length), signers);
}

/** Below this size a ledger is verified on one thread (starting threads costs more than it saves). */
const PARALLEL_MIN_BYTES = 4 << 20;

/**
 * The same verification with each line's own checks (form, body, id, signature) spread over `threads`
 * worker threads reading one shared copy of the bytes, and the links between lines judged here, in order:
 * the verdict is the one-thread verdict, first bad line included.
 */
export async function verifyLedgerParallel(data: Buffer, signers: LedgerSigners, o: { threads?: number; minBytes?: number } = {}): Promise<LedgerVerdict> {
  const threads = o.threads ?? Math.min(4, availableParallelism());
  if (threads < 2 || data.length < (o.minBytes ?? PARALLEL_MIN_BYTES)) return verifyLedger(data, signers);
  const bytes = new SharedArrayBuffer(data.length);
  Buffer.from(bytes).set(data);
  const complete = data.lastIndexOf(0x0a) + 1;
  // Chunk boundaries just after a newline, near equal sizes.
  const bounds = [0];
  for (let k = 1; k < threads; k++) {
    const nl = data.indexOf(0x0a, Math.max(bounds[k - 1]!, Math.floor((complete * k) / threads)));
    if (nl < 0 || nl + 1 >= complete) break;
    bounds.push(nl + 1);
  }
  bounds.push(complete);
  const worker = new URL('./receipts-verify-worker.js', import.meta.url);
  const chunks = await Promise.all(
    bounds.slice(0, -1).map(
      (start, k) =>
        new Promise<ChunkResult>((resolve, reject) => {
          const w = new Worker(worker, { workerData: { bytes, start, end: bounds[k + 1], signers } });
          w.once('message', (m: ChunkResult) => resolve(m));
          w.once('error', reject);
          w.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`a verifying thread exited with code ${code}`))));
        }),
    ),
  );
  return verdictOf(linkLines(chunks, complete < data.length), signers);
}

function verdictOf(v: LinkVerdict, signers: LedgerSigners): LedgerVerdict {
  return v.ok ? { ok: true, count: v.count, head: v.head, keyId: signersName(signers) } : v;
}

/**
 * Whether a ledger that verified (`verdict`) still holds the head the cluster recorded: the head is signed
 * by the given key, the ledger reaches its sequence, and the receipt there is the recorded one.
 */
export function checkHead(data: Buffer, signers: LedgerSigners, headText: string): { ok: true; head: LedgerHead } | { ok: false; problem: HeadProblem; message: string } {
  const parsed = parseLedgerHead(headText);
  if (!parsed.ok) return { ok: false, problem: 'HEAD_INVALID', message: parsed.message };
  const head = parsed.head;
  const signed = signerProblem(signers, { id: head.receipt, keyId: head.keyId, signature: head.signature, issuedAt: head.recordedAt });
  if (signed) {
    const problem: HeadProblem = signed.problem === 'SIGNATURE_INVALID' ? 'HEAD_SIGNATURE_INVALID' : 'HEAD_KEY_MISMATCH';
    return { ok: false, problem, message: `the recorded head of ${head.node}: ${signed.message}` };
  }
  // Sequences start at 1 and a verified ledger has no gap: the head's receipt is on line `sequence`.
  const lines = data.toString('utf8').split('\n');
  const text = head.sequence <= lines.length - 1 ? lines[head.sequence - 1] : undefined;
  if (text === undefined) return { ok: false, problem: 'HEAD_MISSING', message: `the ledger has ${lines.length - 1} receipts; the cluster recorded receipt ${head.sequence} of ${head.node} (${head.recordedAt}): it was cut short or rolled back` };
  const line = parseLedgerLine(text);
  if (!line.ok || line.line.id !== head.receipt) {
    return { ok: false, problem: 'HEAD_MISMATCH', message: `receipt ${head.sequence} is ${line.ok ? line.line.id : 'unreadable'}; the cluster recorded ${head.receipt} there (${head.recordedAt}): the history up to it was rewritten` };
  }
  return { ok: true, head };
}

/** The head JSON of `node` from a ConfigMap as kubectl prints it, or the file itself when it is one head. */
export function headTextOf(fileText: string, node: string | undefined): string {
  let value: unknown;
  try {
    value = JSON.parse(fileText);
  } catch {
    return fileText; // parseLedgerHead names the problem
  }
  const v = value as { kind?: unknown; data?: Record<string, unknown> };
  if (v.kind !== 'ConfigMap') return fileText;
  if (node === undefined) throw new Error('--heads is a ConfigMap: --node says whose head to check');
  const head = v.data?.[node];
  if (typeof head !== 'string') throw new Error(`the ConfigMap records no head for node ${node}`);
  return head;
}

export async function runReceiptsVerify(args: readonly string[], io: Output): Promise<number> {
  let ledger: string | undefined;
  let keyPath: string | undefined;
  let trustPath: string | undefined;
  let headsPath: string | undefined;
  let node: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') {
      io.out(VERIFY_USAGE);
      return 0;
    }
    const value = args[i + 1];
    if ((a === '--ledger' || a === '--public-key' || a === '--trust-policy' || a === '--heads' || a === '--node') && value !== undefined) {
      if (a === '--ledger') ledger = value;
      else if (a === '--public-key') keyPath = value;
      else if (a === '--trust-policy') trustPath = value;
      else if (a === '--heads') headsPath = value;
      else node = value;
      i++;
      continue;
    }
    io.err(`worldline receipts verify: unexpected argument ${JSON.stringify(a)}\n${VERIFY_USAGE}`);
    return 2;
  }
  if (ledger === undefined || (keyPath === undefined) === (trustPath === undefined)) {
    io.err(`worldline receipts verify: --ledger and one of --public-key or --trust-policy are required\n${VERIFY_USAGE}`);
    return 2;
  }
  if (trustPath !== undefined && node === undefined) {
    io.err(`worldline receipts verify: --trust-policy needs --node (whose pinned keys count)\n${VERIFY_USAGE}`);
    return 2;
  }
  let signers: LedgerSigners;
  let data: Buffer;
  try {
    signers = trustPath !== undefined ? { policy: readTrustPolicyFile(trustPath), node: node ?? '', now: new Date() } : loadPublicKey(readFileSync(keyPath ?? '', 'utf8'));
  } catch (e) {
    io.err(`worldline receipts verify: cannot use ${trustPath ?? keyPath ?? ''}: ${describeError(e)}\n`);
    return 2;
  }
  try {
    data = readFileSync(ledger);
  } catch (e) {
    io.err(`worldline receipts verify: cannot read ${ledger}: ${describeError(e)}\n`);
    return 2;
  }
  let headText: string | undefined;
  if (headsPath !== undefined) {
    try {
      headText = headTextOf(readFileSync(headsPath, 'utf8'), node);
    } catch (e) {
      io.err(`worldline receipts verify: cannot read a head from ${headsPath}: ${describeError(e)}\n`);
      return 2;
    }
  }
  const started = process.hrtime.bigint();
  const v = await verifyLedgerParallel(data, signers);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (v.ok && headText !== undefined) {
    const h = checkHead(data, signers, headText);
    if (!h.ok) {
      io.err(`FAIL ${ledger}: ${h.problem}: ${h.message}\n(the ledger itself verifies: ${v.count} receipts, head ${v.head ?? 'none'})\n`);
      return 1;
    }
    io.out(`OK ${ledger}: ${v.count} receipts verified against ${v.keyId}; it holds the head the cluster recorded for ${h.head.node}: receipt ${h.head.sequence} ${h.head.receipt} (${h.head.recordedAt})\n`);
    return 0;
  }
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
