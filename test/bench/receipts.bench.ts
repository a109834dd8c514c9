// Benchmark: the receipt ledger.
//
// Append rate: M receipts through ReceiptLedger.append as the node-agent opens it (openCollapseLedger on a
// node store: each receipt built, signed with Node's OpenSSL-backed crypto.sign, written and fsynced, then
// inserted as a row of the store's `receipts` table), and M through a ledger without the store (file only).
// The ledger signs with OpenSSL since issue 11's group commit: @noble/ed25519 signs ~2,000/s here, which
// capped any ledger below 2,500 receipts/s; @noble now only cross-checks a probe signature at open.
//
// Grouped append rate: M receipts through ReceiptLedger.appendAsync on a second node store's ledger, with
// 8 and with 32 appends in flight (that many writers, each appending again as soon as its receipt is
// acknowledged): the ledger commits what is queued as one group (one write, one fsync, one row
// transaction). Rate = receipts over the chunks' wall time; latency per receipt = from the call to its
// promise resolving; mean group = receipts per ledger fsync (groupStats).
//
// Verify rate: the node-agent's ledger is extended to N receipts (same key, same chain) and verified with
// verifyLedgerParallel — what `worldline receipts verify` runs: form, hash chain and every signature with
// Node's OpenSSL-backed crypto.verify, each line's own checks on up to 4 threads — and with verifyLedger
// (the same on one thread), in rounds alternating with Node crypto verifying the same N
// signatures alone (the part of verification that is the signature check). The extension is built with the ledger's own line functions
// (buildReceiptBody, receiptId, formatLedgerLine), signed with Node crypto as the ledger itself does, and
// written with one fsync: appending 100k receipts one fsync at a time would measure the disk, not
// verification. Before extending, the builder must reproduce the appended lines byte for byte, so the
// verified ledger is what the ledger writes.
//
// Next to them, in the same run: raw Ed25519 rates (@noble/ed25519 sign and verify, Node crypto sign and
// verify) on the same message shape, and a bare write + fsync of a line of the ledger's line size.
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { closeSync, constants, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadPublicKey, verifyLedger, verifyLedgerParallel } from '../../cli/receipts-verify.js';
import { formatLedgerLine, signatureMessage } from '../../core/receipts/ledger-line.js';
import { buildReceiptBody, receiptId, type ReceiptContent } from '../../core/receipts/receipt.js';
import { writeAll } from '../../node-agent/receipts/durable-write.js';
import { ed } from '../../node-agent/receipts/ed25519.js';
import { ReceiptLedger } from '../../node-agent/receipts/ledger.js';
import { openCollapseLedger } from '../../node-agent/receipts/open-ledger.js';
import { KEY_FILE, PUBLIC_PEM_FILE } from '../../node-agent/receipts/signing-key.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { median, percentile } from './stats.js';

export interface ReceiptsBenchOptions {
  dir: string;
  /** Receipts in the verified ledger. */
  receipts: number;
  /** Receipts appended one by one, per ledger configuration (at most `receipts`). */
  appends: number;
  /** Operations per round for each raw signature rate. */
  sigOps: number;
  /** Rounds of raw rates (interleaved) and of ledger verifications; medians are reported. */
  rounds: number;
}

export interface AppendRate {
  appends: number;
  perS: number;
  medianUs: number;
  p99Us: number;
}

export interface GroupedAppendRate extends AppendRate {
  /** Appends in flight (writers). */
  inFlight: number;
  /** Receipts per group (= per ledger fsync), on average. */
  meanGroup: number;
}

export interface ReceiptsBenchResult {
  receipts: number;
  lineBytes: number;
  /** openCollapseLedger on a node store: file + row. */
  append: AppendRate;
  /** ReceiptLedger.open without the store: file only. */
  appendFileOnly: AppendRate;
  /** appendAsync on a node store's ledger with 8 and 32 appends in flight. */
  grouped: GroupedAppendRate[];
  /** Bare write + fsync of a line of the same size, ops/s. */
  fsyncPerS: number;
  /** `worldline receipts verify` as it runs: verifyLedgerParallel (the lines' own checks on up to 4 threads). */
  verifyPerS: number;
  verifySeconds: number;
  /** The same on one thread (verifyLedger). */
  verifyOneThreadPerS: number;
  verifyOneThreadSeconds: number;
  /** Node crypto verify of the ledger's own N signatures alone (rounds interleaved with verifyLedger). */
  sameSignaturesPerS: number;
  raw: { nobleSignPerS: number; nobleVerifyPerS: number; nodeSignPerS: number; nodeVerifyPerS: number };
}

const hex64 = (i: number): string => i.toString(16).padStart(64, '0');
const uuid = (prefix: string, i: number): string => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`;

/** Receipt i (from 1): a committed Candidate collapse, shaped like the node-agent's. */
function content(i: number): ReceiptContent {
  return {
    transaction: { id: uuid('00000000', i), state: 'COMMITTED' },
    world: { namespace: 'bench', name: `world-${i}`, uid: uuid('11111111', i) },
    mode: 'Candidate',
    decision: { authorized: true, reasons: [] },
    evidence: { requirementHash: `sha256:${hex64(i + 1)}`, subject: `sha256:${hex64(i + 2)}`, verifierIdentity: `sha256:${hex64(i + 3)}`, executedVerifierIdentity: `sha256:${hex64(i + 3)}` },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: i + 1, beforeDigest: `sha256:${hex64(i + 4)}`, afterDigest: `sha256:${hex64(i + 5)}` }],
    issuedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  };
}

const APPEND_CHUNKS = 5;
const FSYNC_PROBES_PER_CHUNK = 500;

/** ops/s of `op` over `n` calls. */
function rate(n: number, op: (i: number) => void): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) op(i);
  return n / ((performance.now() - t0) / 1000);
}

interface Keys {
  privateKey: KeyObject;
  publicKey: KeyObject;
  secret: Uint8Array;
  pub: Uint8Array;
  keyId: string;
}

function keysOf(keyDir: string): Keys {
  const privateKey = createPrivateKey(readFileSync(join(keyDir, KEY_FILE), 'utf8'));
  const pem = readFileSync(join(keyDir, PUBLIC_PEM_FILE), 'utf8');
  const publicKey = createPublicKey(pem);
  return {
    privateKey,
    publicKey,
    secret: new Uint8Array(Buffer.from(privateKey.export({ format: 'jwk' }).d ?? '', 'base64url')),
    pub: new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url')),
    keyId: loadPublicKey(pem).keyId,
  };
}

/** Per-operation times of one measured series, in chunks; rate = operations over their summed time. */
class Series {
  private readonly us: number[] = [];
  private totalMs = 0;

  run(n: number, op: () => void): void {
    for (let i = 0; i < n; i++) {
      const a = performance.now();
      op();
      const ms = performance.now() - a;
      this.us.push(ms * 1000);
      this.totalMs += ms;
    }
  }

  result(): AppendRate {
    return { appends: this.us.length, perS: this.us.length / (this.totalMs / 1000), medianUs: median(this.us), p99Us: percentile(this.us, 99) };
  }
}

/** Grouped appends: `inFlight` writers, each appending again once its last receipt resolved; chunks summed. */
class GroupedSeries {
  private readonly us: number[] = [];
  private totalMs = 0;
  private groups = 0;

  constructor(readonly inFlight: number) {}

  async run(ledger: ReceiptLedger, n: number, next: () => ReceiptContent): Promise<void> {
    const groupsBefore = ledger.groupStats().groups;
    let left = n;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: Math.min(this.inFlight, n) }, async () => {
      while (left > 0) {
        left--;
        const a = performance.now();
        await ledger.appendAsync(next());
        this.us.push((performance.now() - a) * 1000);
      }
    }));
    this.totalMs += performance.now() - t0;
    this.groups += ledger.groupStats().groups - groupsBefore;
  }

  result(): GroupedAppendRate {
    const n = this.us.length;
    return { appends: n, perS: n / (this.totalMs / 1000), medianUs: median(this.us), p99Us: percentile(this.us, 99), inFlight: this.inFlight, meanGroup: n / this.groups };
  }
}

/** Ledger lines `from`..`to` (1-based, inclusive) after `previous`, as ReceiptLedger.append would write them. */
function buildLines(keys: Keys, from: number, to: number, previous: string | null): { text: string; head: string | null } {
  const parts: string[] = [];
  let head = previous;
  for (let seq = from; seq <= to; seq++) {
    const body = buildReceiptBody(content(seq), seq, head);
    const id = receiptId(body);
    const signature = nodeSign(null, signatureMessage(id), keys.privateKey).toString('hex');
    parts.push(formatLedgerLine({ receipt: body, id, signature, keyId: keys.keyId }));
    head = id;
  }
  return { text: parts.join(''), head };
}

/** Extends the ledger at `path` (holding receipts 1..have, last id `head`) to `want` receipts, with one fsync. */
function extendLedger(path: string, keys: Keys, have: number, want: number, head: string | null): void {
  const written = readFileSync(path, 'utf8');
  const probe = Math.min(have, 50);
  const rebuilt = buildLines(keys, 1, probe, null).text;
  if (!written.startsWith(rebuilt)) throw new Error('the bench cannot reproduce the ledger\'s own lines; its extension would not be what ReceiptLedger writes');
  if (want <= have) return;
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND);
  try {
    writeAll(fd, buildLines(keys, have + 1, want, head).text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function rawRates(keys: Keys, sigOps: number, rounds: number): ReceiptsBenchResult['raw'] {
  const messages = Array.from({ length: sigOps }, (_, i) => signatureMessage(`sha256:${hex64(i)}`));
  const sigs = messages.map((m) => ed.sign(m, keys.secret));
  const r = { nobleSign: [] as number[], nobleVerify: [] as number[], nodeSign: [] as number[], nodeVerify: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    r.nobleSign.push(rate(sigOps, (i) => ed.sign(messages[i]!, keys.secret)));
    r.nobleVerify.push(rate(sigOps, (i) => {
      if (!ed.verify(sigs[i]!, messages[i]!, keys.pub)) throw new Error('@noble/ed25519 verify failed');
    }));
    r.nodeSign.push(rate(sigOps, (i) => nodeSign(null, messages[i]!, keys.privateKey)));
    r.nodeVerify.push(rate(sigOps, (i) => {
      if (!nodeVerify(null, messages[i]!, keys.publicKey, sigs[i]!)) throw new Error('Node crypto verify failed');
    }));
  }
  return { nobleSignPerS: median(r.nobleSign), nobleVerifyPerS: median(r.nobleVerify), nodeSignPerS: median(r.nodeSign), nodeVerifyPerS: median(r.nodeVerify) };
}

export async function benchReceipts(o: ReceiptsBenchOptions): Promise<ReceiptsBenchResult> {
  const appends = Math.min(o.appends, o.receipts);
  const dir = mkdtempSync(join(o.dir, 'wl-bench-receipts-'));
  try {
    // Appends, in chunks that alternate between the node-agent's ledger (on a node store), a file-only
    // ledger, grouped appends on a second node store's ledger (8, then 32 in flight) and a bare write +
    // fsync of a line of the same size, so that all of them see the same disk.
    const { store } = await openStore({ dir: join(dir, 'store') });
    const { store: groupedStore } = await openStore({ dir: join(dir, 'store-grouped') });
    const groupedSeries = [new GroupedSeries(8), new GroupedSeries(32)];
    let groupedLedger: ReceiptLedger | undefined;
    const fileOnlyDir = join(dir, 'file-only');
    mkdirSync(fileOnlyDir, { mode: 0o700 });
    const probePath = join(dir, 'fsync-probe');
    const agent = new Series();
    const fileOnly = new Series();
    const fsync = new Series();
    let opened: ReturnType<typeof openCollapseLedger> | undefined;
    let plain: ReceiptLedger | undefined;
    let probe: number | undefined;
    let head: string | null;
    let keys: Keys;
    let lineBytes: number;
    try {
      opened = openCollapseLedger(store);
      groupedLedger = openCollapseLedger(groupedStore).ledger;
      plain = ReceiptLedger.open({ path: join(fileOnlyDir, 'ledger.jsonl'), keyDir: join(fileOnlyDir, 'keys') });
      keys = keysOf(join(store.dir, 'keys'));
      lineBytes = Buffer.byteLength(buildLines(keys, 1, 2, null).text.split('\n')[1]!) + 1; // a line with a previous id
      const line = Buffer.alloc(lineBytes, 0x61);
      line[lineBytes - 1] = 0x0a;
      probe = openSync(probePath, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
      const fd = probe;
      const chunk = Math.ceil(appends / APPEND_CHUNKS);
      let a = 0;
      let f = 0;
      let g = 0;
      for (let done = 0; done < appends; done += chunk) {
        const n = Math.min(chunk, appends - done);
        const agentLedger = opened.ledger;
        const fileLedger = plain;
        agent.run(n, () => agentLedger.append(content(++a)));
        fileOnly.run(n, () => fileLedger.append(content(++f)));
        for (const series of groupedSeries) await series.run(groupedLedger, n, () => content(++g));
        fsync.run(Math.min(n, FSYNC_PROBES_PER_CHUNK), () => {
          writeAll(fd, line);
          fsyncSync(fd);
        });
      }
      head = opened.ledger.last()?.id ?? null;
    } finally {
      opened?.ledger.close();
      groupedLedger?.close();
      groupedStore.close();
      plain?.close();
      if (probe !== undefined) closeSync(probe);
      store.close();
    }
    if (opened === undefined) throw new Error('unreachable: the ledger did not open');

    // Verification of N receipts, the verify command's own path (read the key file and the ledger,
    // verifyLedger), rounds interleaved with Node crypto verifying the same N signatures alone.
    extendLedger(opened.path, keys, appends, o.receipts, head);
    const pairs = readFileSync(opened.path, 'utf8').split('\n').filter((l) => l !== '').map((l) => {
      const line = JSON.parse(l) as { id: string; signature: string };
      return { message: signatureMessage(line.id), signature: Buffer.from(line.signature, 'hex') };
    });
    const verifySeconds: number[] = [];
    const oneThreadSeconds: number[] = [];
    const sameSigsPerS: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const a = performance.now();
      const key = loadPublicKey(readFileSync(opened.publicKeyPath, 'utf8'));
      const v = await verifyLedgerParallel(readFileSync(opened.path), key);
      verifySeconds.push((performance.now() - a) / 1000);
      if (!v.ok || v.count !== o.receipts) throw new Error(`the ledger does not verify: ${JSON.stringify(v)}`);
      const b = performance.now();
      const one = verifyLedger(readFileSync(opened.path), loadPublicKey(readFileSync(opened.publicKeyPath, 'utf8')));
      oneThreadSeconds.push((performance.now() - b) / 1000);
      if (!one.ok || one.count !== o.receipts) throw new Error(`the ledger does not verify on one thread: ${JSON.stringify(one)}`);
      sameSigsPerS.push(rate(pairs.length, (i) => {
        if (!nodeVerify(null, pairs[i]!.message, keys.publicKey, pairs[i]!.signature)) throw new Error(`signature ${i + 1} does not verify`);
      }));
    }
    const verifyS = median(verifySeconds);
    const oneThreadS = median(oneThreadSeconds);

    return {
      receipts: o.receipts,
      lineBytes,
      append: agent.result(),
      appendFileOnly: fileOnly.result(),
      grouped: groupedSeries.map((x) => x.result()),
      fsyncPerS: fsync.result().perS,
      verifyPerS: o.receipts / verifyS,
      verifySeconds: verifyS,
      verifyOneThreadPerS: o.receipts / oneThreadS,
      verifyOneThreadSeconds: oneThreadS,
      sameSignaturesPerS: median(sameSigsPerS),
      raw: rawRates(keys, o.sigOps, o.rounds),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
