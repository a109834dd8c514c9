// `worldline receipts verify-status --collapse FILE --public-key KEY [--ledger FILE]`: check the receipt a
// Collapse shows in its status (`kubectl get collapse NAME -o json`) without access to the node:
//   - the status names a receipt id, signature and key id, and the key id is the given key's;
//   - the Ed25519 signature over the id verifies with the given key (e.g. the PEM of ConfigMap
//     worldline-receipts-<node>), with Node's OpenSSL-backed crypto;
//   - with --ledger (the node's ledger or its export), the whole ledger verifies (verifyLedger), the id is
//     in it at the status's sequence with the status's previous id, and the receipt body says what the
//     status says: the transaction id and state, the World, the decision and each Root's generations and
//     digest.
// The status is written by the node-agent through the API server; a signature that verifies shows the
// node's key signed that id, and only the ledger shows what the id stands for. Imports only core/ and the
// ledger verifier, never node-agent/.
import { verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describeError } from '../core/errors.js';
import { isDigest } from '../core/digest.js';
import { parseLedgerLine, signatureMessage } from '../core/receipts/ledger-line.js';
import { loadPublicKey, verifyLedger, type Output } from './receipts-verify.js';

export type StatusProblem = 'STATUS_INVALID' | 'KEY_MISMATCH' | 'SIGNATURE_INVALID' | 'LEDGER_INVALID' | 'NOT_IN_LEDGER' | 'STATUS_MISMATCH';

export type StatusVerdict = { ok: true; id: string; sequence: number; keyId: string; ledgerLine?: number } | { ok: false; problem: StatusProblem; message: string };

export const VERIFY_STATUS_USAGE = `usage: worldline receipts verify-status --collapse FILE --public-key KEY [--ledger FILE]

Verifies the receipt a Collapse shows in status.receipt: its Ed25519 signature over the receipt id, with
Node's OpenSSL-backed crypto, and, given the ledger, that the ledger verifies and holds that receipt with
the same sequence, previous id, transaction, World, decision and per-Root result the status shows.
  --collapse FILE     the Collapse as JSON (kubectl get collapse NAME -o json > FILE; - for stdin)
  --public-key KEY    the node's public key: a PEM file (SPKI, e.g. the public-key.pem of ConfigMap
                      worldline-receipts-<node>) or a file holding 64 hex characters
  --ledger FILE       the node's ledger (or its --receipts-export copy), to check what the id stands for
Exit status: 0 the receipt verifies; 1 it does not (the problem is named); 2 usage or read error.
`;

interface StatusReceipt {
  id: string;
  sequence: number;
  previous?: string;
  signature: string;
  keyId: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function statusReceipt(collapse: unknown): StatusReceipt | string {
  if (!isObj(collapse) || collapse.kind !== 'Collapse') return 'not a Collapse object (kind is not "Collapse")';
  const r = isObj(collapse.status) ? collapse.status.receipt : undefined;
  if (!isObj(r)) return 'the Collapse has no status.receipt (it has not reached Committed or Denied)';
  const { id, sequence, previous, signature, keyId } = r;
  if (typeof id !== 'string' || !isDigest(id)) return 'status.receipt.id is not sha256:<64 hex>';
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 1) return 'status.receipt.sequence is not a positive integer';
  if (previous != null && (typeof previous !== 'string' || !isDigest(previous))) return 'status.receipt.previous is not sha256:<64 hex>';
  if (typeof signature !== 'string' || !/^[0-9a-f]{128}$/.test(signature)) return 'status.receipt.signature is not 64 bytes of lowercase hex';
  if (typeof keyId !== 'string') return 'status.receipt.keyId is missing';
  return { id, sequence, signature, keyId, ...(typeof previous === 'string' ? { previous } : {}) };
}

/** Differences between a receipt body and the Collapse whose status names it, as "field: status … receipt …". */
export function receiptDifferences(collapse: Obj, body: Obj): string[] {
  const out: string[] = [];
  const same = (field: string, status: unknown, receipt: unknown): void => {
    if (JSON.stringify(status) !== JSON.stringify(receipt)) out.push(`${field}: status ${JSON.stringify(status)}, receipt ${JSON.stringify(receipt)}`);
  };
  const status = isObj(collapse.status) ? collapse.status : {};
  const meta = isObj(collapse.metadata) ? collapse.metadata : {};
  const spec = isObj(collapse.spec) ? collapse.spec : {};
  const tx = isObj(status.transaction) ? status.transaction : {};
  const btx = isObj(body.transaction) ? body.transaction : {};
  same('transaction.id', tx.id, btx.id);
  same('transaction.state', tx.state, btx.state);
  const world = isObj(body.world) ? body.world : {};
  same('world', { namespace: meta.namespace, name: spec.worldRef }, { namespace: world.namespace, name: world.name });
  same('mode', spec.mode ?? 'Candidate', body.mode);
  const decision = isObj(status.decision) ? status.decision : {};
  const bdecision = isObj(body.decision) ? body.decision : {};
  same('decision', { authorized: decision.authorized, reasons: decision.reasons }, { authorized: bdecision.authorized, reasons: bdecision.reasons });
  const results = Array.isArray(status.result) ? status.result.filter(isObj) : [];
  const roots = Array.isArray(body.roots) ? body.roots.filter(isObj) : [];
  for (const r of results) {
    const b = roots.find((x) => x.root === r.root);
    if (!b) {
      out.push(`result ${JSON.stringify(r.root)}: in the status, not in the receipt`);
      continue;
    }
    same(`result ${String(r.root)}`, { fromGeneration: r.fromGeneration, toGeneration: r.toGeneration, digest: r.digest }, { fromGeneration: b.fromGeneration, toGeneration: b.toGeneration, digest: b.afterDigest });
  }
  if (tx.state === 'COMMITTED') {
    for (const b of roots) if (!results.some((r) => r.root === b.root)) out.push(`result ${JSON.stringify(b.root)}: in the receipt, not in the status`);
  }
  return out;
}

/** Verify a Collapse's status receipt against a public key and, when given, the ledger's bytes. */
export function verifyStatusReceipt(collapse: unknown, publicKey: { key: KeyObject; keyId: string }, ledger?: Buffer): StatusVerdict {
  const r = statusReceipt(collapse);
  if (typeof r === 'string') return { ok: false, problem: 'STATUS_INVALID', message: r };
  if (r.keyId !== publicKey.keyId) return { ok: false, problem: 'KEY_MISMATCH', message: `the status names key ${r.keyId}, not the given key ${publicKey.keyId}` };
  if (!verify(null, signatureMessage(r.id), publicKey.key, Buffer.from(r.signature, 'hex'))) {
    return { ok: false, problem: 'SIGNATURE_INVALID', message: `the signature in the status does not verify over ${r.id} with ${publicKey.keyId}` };
  }
  if (ledger === undefined) return { ok: true, id: r.id, sequence: r.sequence, keyId: r.keyId };

  const whole = verifyLedger(ledger, publicKey);
  if (!whole.ok) return { ok: false, problem: 'LEDGER_INVALID', message: `the ledger does not verify: line ${whole.line}: ${whole.problem}: ${whole.message}` };
  let at = -1;
  let body: Obj = {};
  const lines = ledger.toString('utf8').split('\n');
  for (let i = 0; i < lines.length && at < 0; i++) {
    if (!lines[i]!.includes(r.id)) continue;
    const p = parseLedgerLine(lines[i]!);
    if (p.ok && p.line.id === r.id && isObj(p.line.receipt)) {
      at = i;
      body = p.line.receipt;
    }
  }
  if (at < 0) return { ok: false, problem: 'NOT_IN_LEDGER', message: `no receipt ${r.id} in the ledger (${whole.count} receipts)` };
  const diffs: string[] = [];
  if (body.sequence !== r.sequence) diffs.push(`sequence: status ${r.sequence}, receipt ${String(body.sequence)}`);
  if ((body.previous ?? undefined) !== r.previous) diffs.push(`previous: status ${r.previous ?? 'none'}, receipt ${JSON.stringify(body.previous ?? 'none')}`);
  diffs.push(...receiptDifferences(collapse as Obj, body));
  if (diffs.length > 0) return { ok: false, problem: 'STATUS_MISMATCH', message: `the receipt at ledger line ${at + 1} says otherwise: ${diffs.join('; ')}` };
  return { ok: true, id: r.id, sequence: r.sequence, keyId: r.keyId, ledgerLine: at + 1 };
}

export function runReceiptsVerifyStatus(args: readonly string[], io: Output, stdin: () => string = () => readFileSync(0, 'utf8')): number {
  const values: Record<'--collapse' | '--public-key' | '--ledger', string | undefined> = { '--collapse': undefined, '--public-key': undefined, '--ledger': undefined };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--help' || a === '-h') {
      io.out(VERIFY_STATUS_USAGE);
      return 0;
    }
    const value = args[i + 1];
    if (a in values && value !== undefined) {
      values[a as keyof typeof values] = value;
      i++;
      continue;
    }
    io.err(`worldline receipts verify-status: unexpected argument ${JSON.stringify(a)}\n${VERIFY_STATUS_USAGE}`);
    return 2;
  }
  const collapsePath = values['--collapse'];
  const keyPath = values['--public-key'];
  const ledgerPath = values['--ledger'];
  if (collapsePath === undefined || keyPath === undefined) {
    io.err(`worldline receipts verify-status: --collapse and --public-key are both required\n${VERIFY_STATUS_USAGE}`);
    return 2;
  }
  let collapse: unknown;
  let publicKey: { key: KeyObject; keyId: string };
  let ledger: Buffer | undefined;
  try {
    collapse = JSON.parse(collapsePath === '-' ? stdin() : readFileSync(collapsePath, 'utf8'));
  } catch (e) {
    io.err(`worldline receipts verify-status: cannot read ${collapsePath} as JSON: ${describeError(e)}\n`);
    return 2;
  }
  try {
    publicKey = loadPublicKey(readFileSync(keyPath, 'utf8'));
  } catch (e) {
    io.err(`worldline receipts verify-status: cannot use ${keyPath} as a public key: ${describeError(e)}\n`);
    return 2;
  }
  if (ledgerPath !== undefined) {
    try {
      ledger = readFileSync(ledgerPath);
    } catch (e) {
      io.err(`worldline receipts verify-status: cannot read ${ledgerPath}: ${describeError(e)}\n`);
      return 2;
    }
  }
  const meta = isObj(collapse) && isObj(collapse.metadata) ? collapse.metadata : {};
  const name = `${typeof meta.namespace === 'string' ? meta.namespace : '?'}/${typeof meta.name === 'string' ? meta.name : '?'}`;
  const v = verifyStatusReceipt(collapse, publicKey, ledger);
  if (!v.ok) {
    io.err(`FAIL collapse ${name}: ${v.problem}: ${v.message}\n`);
    return 1;
  }
  const where = v.ledgerLine === undefined ? ' (the ledger was not given: what the id stands for is not checked)' : `; in the ledger at line ${v.ledgerLine}, and it says what the status says`;
  io.out(`OK collapse ${name}: receipt ${v.id} (sequence ${v.sequence}) signed by ${v.keyId}${where}\n`);
  return 0;
}
