// The node's append-only receipt ledger: one signed receipt per line (format in
// core/receipts/ledger-line.ts), each append fsynced, and mirrored line for line to an optional export
// file (fsynced too) that should live where the signing key's holder cannot write.
//
// One writer per ledger: the node-agent holds the store lock while it appends. On open, the last line
// is checked (id, key, signature) and becomes the chain head. A last line without its newline is an
// append a crash interrupted (kill -9 can stop a group's write between pages): with `db`, whose rows
// witness every acknowledged receipt, those bytes are cut off and counted (tornTailCut), unless the table
// has a row past the whole lines (then a receipt was acknowledged and the file was cut afterwards:
// RECEIPTS_DIVERGED, the file left untouched). Without `db` nothing witnesses what was acknowledged, so
// such a tail is refused (LEDGER_TORN_TAIL), not repaired. The export must be a byte prefix of the ledger: a
// shorter export is caught up, any other difference is refused — that difference is what the export
// exists to reveal.
//
// With `db` (the node store's database), each receipt is also a row of its `receipts` table
// (receipt-rows.ts). Order of an append, and what a crash at each point leaves:
//   1. the line is written to the ledger file and fsynced: this is the commitment — from here on the
//      receipt exists, whatever follows fails;
//   2. the row is inserted (autocommit, or within the caller's open transaction, if any);
//   3. the line is written to the export mirror and fsynced.
// A crash after 1 leaves a line without a row (or, after 2, without its mirror copy). On open, the rows
// are compared with the file, line for line: lines without rows (the tail a crash left) are backfilled
// from the file (checked: signature, key, chain), so the repair depends on the file alone; a row that
// differs from its line, or a row past the file's end, is refused (RECEIPTS_DIVERGED). Then the mirror
// is caught up. Opening with `db` therefore reads the whole ledger once. A failure at 2 or 3 after 1
// succeeded is reported (RECEIPTS_ROW_FAILED, LEDGER_EXPORT_FAILED) and leaves the ledger unusable until
// reopened, which repairs it.
//
// Group commit (appendAsync): appends asked for while a group is being written, or in the same turn of
// the event loop, wait in a queue; the next group takes them all (up to MAX_GROUP), builds and signs each
// in order (each chained to the one before it), writes their lines with one write and one fsync, inserts
// their rows in one SQLite transaction, writes and fsyncs the mirror once, and only then settles their
// promises. So one fsync of the ledger is paid per group, not per receipt, and no promise resolves before
// its line is on disk. The steps and what a failure at each leaves are the ones above, for the whole
// group: a failed write or fsync rejects every append of the group (LEDGER_BROKEN) and breaks the ledger
// (a short write's bytes are cut off again first: none of them was acknowledged); a failed row insert or
// mirror write rejects them all with RECEIPTS_ROW_FAILED or LEDGER_EXPORT_FAILED, their receipts being in
// the ledger, and breaks it until reopened. The synchronous append() stays for callers that write one
// receipt at a time; it refuses (LEDGER_BUSY) while any grouped append is queued or in flight, since it
// would chain onto a head the group is about to move.
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { digestOf } from '../../core/digest.js';
import { formatLedgerLine, parseLedgerLine, signatureMessage } from '../../core/receipts/ledger-line.js';
import { buildReceiptBody, parseReceiptBody, receiptId, type ReceiptBody, type ReceiptContent } from '../../core/receipts/receipt.js';
import { ChainVerifier } from '../../core/receipts/chain.js';
import type { Database } from 'better-sqlite3';
import { fsyncDir, writeAll } from './durable-write.js';
import { fsyncAsync, writeAllAsync } from './durable-write-async.js';
import { ed } from './ed25519.js';
import { ReceiptLedgerError, type ReceiptLedgerCode } from './errors.js';
import { readLines } from './read-lines.js';
import { deriveRow, ReceiptRows } from './receipt-rows.js';
import { checkSigners } from './signer-check.js';
import { loadOrCreateSigningKey, type SigningKey } from './signing-key.js';

export interface SignedReceipt {
  readonly body: ReceiptBody;
  readonly id: string;
  /** Ed25519 signature over signatureMessage(id), lowercase hex. */
  readonly signature: string;
  readonly keyId: string;
}

export interface LedgerOptions {
  /** The ledger file (created 0640 if absent). */
  readonly path: string;
  /** Directory of the signing key (created 0700, key generated, if absent). */
  readonly keyDir: string;
  /** Optional mirror of the ledger, appended and fsynced with it. */
  readonly exportPath?: string;
  /** The node store's database (schema 8 or later): each receipt is also a row of its `receipts` table. */
  readonly db?: Database;
  /** The time recorded as a row's appended_at (default: the system clock). */
  readonly now?: () => Date;
}

/** How grouped appends have been committed since open: groups written (one fsync each), receipts in them, the largest group. */
export interface GroupCommitStats {
  groups: number;
  receipts: number;
  largest: number;
}

const OPEN_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW;
const CHUNK = 1 << 20;
/** At most this many receipts in one group, so one group's write and its promises stay bounded. */
export const MAX_GROUP = 256;

interface PendingAppend {
  readonly content: ReceiptContent;
  readonly resolve: (r: SignedReceipt) => void;
  readonly reject: (e: unknown) => void;
}

export class ReceiptLedger {
  private head: SignedReceipt | null;
  private broken: string | null = null;
  private closed = false;
  private fdsClosed = false;
  /** Bytes of the file that are whole lines this ledger has fsynced (or found on open): what readAll reads. */
  private size: number;
  private readonly queue: PendingAppend[] = [];
  /** A group is being built, written or settled; the next waits in `queue`. */
  private flushing = false;
  private flushScheduled = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly stats: GroupCommitStats = { groups: 0, receipts: 0, largest: 0 };

  private constructor(
    readonly path: string,
    private readonly fd: number,
    private readonly exportFd: number | null,
    private readonly rows: ReceiptRows | null,
    private readonly key: SigningKey,
    head: SignedReceipt | null,
    /** Bytes of an unfinished last line cut off at open (0 when the ledger ended with a whole line). */
    readonly tornTailCut: number,
  ) {
    this.head = head;
    this.size = fstatSync(fd).size;
  }

  static open(options: LedgerOptions): ReceiptLedger {
    const key = loadOrCreateSigningKey(options.keyDir);
    checkSigners(key);
    const fd = openLedgerFile(options.path);
    let exportFd: number | null = null;
    try {
      const size = fstatSync(fd).size;
      const rows = options.db !== undefined ? new ReceiptRows(options.db, options.now ?? (() => new Date())) : null;
      // With rows to witness what was acknowledged, only whole lines count; the rest is cut below.
      const end = rows !== null ? wholeLinesEnd(fd, size) : size;
      const head = readHead(fd, options.path, key, end);
      let tornTailCut = 0;
      if (end < size && rows !== null) {
        const last = rows.lastSequence();
        if (last > (head?.body.sequence ?? 0)) {
          // A row for a receipt the whole lines do not hold: the cut would lose an acknowledged receipt.
          // Refused with the file untouched, for whoever inspects it.
          throw new ReceiptLedgerError('RECEIPTS_DIVERGED', `${options.path} ends with an unfinished line after sequence ${head?.body.sequence ?? 0}, but the store's receipts table has a row for sequence ${last}: the ledger was cut, not torn by a crash; restore it`);
        }
        ftruncateSync(fd, end);
        fsyncSync(fd);
        tornTailCut = size - end;
      }
      if (rows !== null) {
        rows.sync(options.path, readLines(fd), (text, where) => void checkLine(text, options.path, where, key));
      }
      if (options.exportPath !== undefined) {
        exportFd = openLedgerFile(options.exportPath);
        catchUpExport(fd, exportFd, options.exportPath);
      }
      return new ReceiptLedger(options.path, fd, exportFd, rows, key, head, tornTailCut);
    } catch (e) {
      closeSync(fd);
      if (exportFd !== null) closeSync(exportFd);
      throw e;
    }
  }

  get keyId(): string {
    return this.key.keyId;
  }

  get publicKeyPem(): string {
    return this.key.publicKeyPem;
  }

  get publicKeyHex(): string {
    return this.key.publicKeyHex;
  }

  /**
   * Sign and durably append one receipt now; its sequence and previous id follow the current last line.
   * LEDGER_BUSY while grouped appends are queued or in flight (see the header).
   */
  append(content: ReceiptContent): SignedReceipt {
    this.usable();
    if (this.flushing || this.queue.length > 0) {
      throw new ReceiptLedgerError('LEDGER_BUSY', `${this.path} has ${this.queue.length} grouped append(s) queued${this.flushing ? ' and a group in flight' : ''}; a synchronous append would race them`);
    }
    const { signed, text } = this.build(content, this.head);
    const line = Buffer.from(text, 'utf8');
    try {
      writeAll(this.fd, line);
      fsyncSync(this.fd);
    } catch (e) {
      this.broken = `append to ${this.path} failed: ${(e as Error).message}`;
      throw new ReceiptLedgerError('LEDGER_BROKEN', this.broken);
    }
    this.head = signed; // it is in the ledger now, whatever happens to the row or the mirror
    this.size += line.length;
    const missed: { code: ReceiptLedgerCode; message: string }[] = [];
    if (this.rows !== null) {
      try {
        this.rows.insert(text.slice(0, -1));
      } catch (e) {
        missed.push({ code: 'RECEIPTS_ROW_FAILED', message: `the receipts table missed receipt ${signed.body.sequence}: ${(e as Error).message}; reopen to backfill it` });
      }
    }
    if (this.exportFd !== null) {
      try {
        writeAll(this.exportFd, line);
        fsyncSync(this.exportFd);
      } catch (e) {
        missed.push({ code: 'LEDGER_EXPORT_FAILED', message: `the export mirror missed receipt ${signed.body.sequence}: ${(e as Error).message}; reopen to catch it up` });
      }
    }
    if (missed.length > 0) {
      this.broken = missed.map((m) => m.message).join('; ');
      throw new ReceiptLedgerError(missed[0]!.code, this.broken);
    }
    return signed;
  }

  /**
   * Sign and durably append one receipt as part of the next group (see the header). Resolves once its
   * line is written and fsynced and its row and mirror copy are written; rejects, with every other append
   * of its group, if any of that fails. Receipts are chained in the order appendAsync was called.
   */
  appendAsync(content: ReceiptContent): Promise<SignedReceipt> {
    const refused = this.unusable();
    if (refused !== null) return Promise.reject(refused);
    return new Promise((resolve, reject) => {
      this.queue.push({ content, resolve, reject });
      if (!this.flushing && !this.flushScheduled) {
        // Wait for the rest of this turn of the event loop: appends asked for in it join this group.
        this.flushScheduled = true;
        setImmediate(() => {
          this.flushScheduled = false;
          void this.flush();
        });
      }
    });
  }

  /** Resolves when no grouped append is queued or in flight. */
  idle(): Promise<void> {
    if (!this.flushing && !this.flushScheduled && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** How grouped appends were committed since open (a copy). */
  groupStats(): GroupCommitStats {
    return { ...this.stats };
  }

  /**
   * The receipt of transaction `transactionId` in final state `state`, if the ledger has one: the head, else
   * the store's row for it (every line has one after open()'s backfill), else (a ledger without a store) a
   * scan of the file. Checked (id, key, signature) before it is returned. This is how a caller that crashed
   * or failed after an append, before recording its receipt, finds it again instead of appending twice —
   * with grouped appends it need not be the last line.
   */
  receiptOf(transactionId: string, state: string): SignedReceipt | null {
    this.usable();
    const head = this.head;
    if (head && head.body.transaction.id === transactionId && head.body.transaction.state === state) return head;
    let line: string | undefined;
    if (this.rows !== null) {
      line = this.rows.lineOf(transactionId, state);
    } else {
      const needle = JSON.stringify(transactionId);
      for (const l of readWhole(this.fd, this.size).split('\n')) {
        if (!l.includes(needle)) continue; // most lines: no parse
        const row = deriveRow(l, this.path);
        if (row.transactionId === transactionId && row.state === state) line = l;
      }
    }
    return line === undefined ? null : checkLine(line, this.path, `the receipt of transaction ${transactionId}`, this.key).signed;
  }

  last(): SignedReceipt | null {
    return this.head;
  }

  /** Every receipt, in order, after checking the chain and each signature against this ledger's key. */
  readAll(): SignedReceipt[] {
    this.usable();
    return parseAll(readWhole(this.fd, this.size), this.path, this.key);
  }

  /**
   * No more appends: queued grouped appends reject with LEDGER_CLOSED. A group already being written is
   * finished first (its receipts may be on disk already; its promises settle), then the files are closed.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.flushing) this.closeFiles();
  }

  private closeFiles(): void {
    if (this.fdsClosed) return;
    this.fdsClosed = true;
    closeSync(this.fd);
    if (this.exportFd !== null) closeSync(this.exportFd);
  }

  /** The receipt that follows `previous` (null: the first), signed, and its ledger line. */
  private build(content: ReceiptContent, previous: SignedReceipt | null): { signed: SignedReceipt; text: string } {
    const body = buildReceiptBody(content, (previous?.body.sequence ?? 0) + 1, previous?.id ?? null);
    const id = receiptId(body);
    const signature = Buffer.from(this.key.sign(signatureMessage(id))).toString('hex');
    return { signed: { body, id, signature, keyId: this.key.keyId }, text: formatLedgerLine({ receipt: body, id, signature, keyId: this.key.keyId }) };
  }

  /** Commits groups until the queue is empty; one at a time. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) await this.commitGroup(this.queue.splice(0, MAX_GROUP));
    } finally {
      this.flushing = false;
      if (this.closed) this.closeFiles();
      for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** One group: build and sign in order, one write + fsync, rows in one transaction, mirror once, then settle. */
  private async commitGroup(group: PendingAppend[]): Promise<void> {
    const refused = this.unusable();
    if (refused !== null) {
      for (const p of group) p.reject(refused);
      return;
    }
    // A content the receipt schema refuses fails alone, before anything is written; the rest chain on.
    const built: { p: PendingAppend; signed: SignedReceipt; text: string }[] = [];
    let head = this.head;
    for (const p of group) {
      try {
        const b = this.build(p.content, head);
        built.push({ p, ...b });
        head = b.signed;
      } catch (e) {
        p.reject(e);
      }
    }
    if (built.length === 0) return;
    const fail = (code: ReceiptLedgerCode, message: string): void => {
      this.broken = message;
      const err = new ReceiptLedgerError(code, message);
      for (const b of built) b.p.reject(err);
    };
    const bytes = Buffer.from(built.map((b) => b.text).join(''), 'utf8');
    try {
      await writeAllAsync(this.fd, bytes);
    } catch (e) {
      // Nothing of this group was acknowledged: cut a short write's bytes off again, so that a reopen
      // does not find a torn line (if even that fails, the reopen refuses the torn tail).
      let cut = '';
      try {
        ftruncateSync(this.fd, this.size);
      } catch (t) {
        cut = `; cutting the partial write off failed too (${(t as Error).message})`;
      }
      return fail('LEDGER_BROKEN', `append of ${built.length} receipt(s) to ${this.path} failed: ${(e as Error).message}${cut}`);
    }
    try {
      await fsyncAsync(this.fd);
    } catch (e) {
      return fail('LEDGER_BROKEN', `fsync of ${built.length} appended receipt(s) in ${this.path} failed: ${(e as Error).message}`);
    }
    this.head = head; // the group is in the ledger now, whatever happens to the rows or the mirror
    this.size += bytes.length;
    this.stats.groups++;
    this.stats.receipts += built.length;
    this.stats.largest = Math.max(this.stats.largest, built.length);
    const first = built[0]!.signed.body.sequence;
    const last = head!.body.sequence;
    const missed: { code: ReceiptLedgerCode; message: string }[] = [];
    if (this.rows !== null) {
      try {
        this.rows.insertGroup(built.map((b) => b.text.slice(0, -1)));
      } catch (e) {
        missed.push({ code: 'RECEIPTS_ROW_FAILED', message: `the receipts table missed receipts ${first}..${last}: ${(e as Error).message}; reopen to backfill them` });
      }
    }
    if (this.exportFd !== null) {
      try {
        await writeAllAsync(this.exportFd, bytes);
        await fsyncAsync(this.exportFd);
      } catch (e) {
        missed.push({ code: 'LEDGER_EXPORT_FAILED', message: `the export mirror missed receipts ${first}..${last}: ${(e as Error).message}; reopen to catch it up` });
      }
    }
    if (missed.length > 0) return fail(missed[0]!.code, missed.map((m) => m.message).join('; '));
    for (const b of built) b.p.resolve(b.signed);
  }

  private usable(): void {
    const refused = this.unusable();
    if (refused !== null) throw refused;
  }

  private unusable(): ReceiptLedgerError | null {
    if (this.closed) return new ReceiptLedgerError('LEDGER_CLOSED', `${this.path} is closed`);
    if (this.broken !== null) return new ReceiptLedgerError('LEDGER_BROKEN', this.broken);
    return null;
  }
}

function openLedgerFile(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS, 0o640);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw new ReceiptLedgerError('LEDGER_NOT_REGULAR_FILE', `${path} is a symbolic link`);
    throw e;
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new ReceiptLedgerError('LEDGER_NOT_REGULAR_FILE', `${path} is not a regular file`);
  }
  fsyncDir(dirname(path)); // the name itself must survive a crash once anything is appended
  return fd;
}

/** Where the ledger's whole lines end: just after the last newline below `size` (0 when there is none). */
function wholeLinesEnd(fd: number, size: number): number {
  const buf = Buffer.alloc(Math.min(CHUNK, size));
  for (let end = size; end > 0; ) {
    const from = Math.max(0, end - buf.length);
    readSync(fd, buf, 0, end - from, from);
    const nl = buf.subarray(0, end - from).lastIndexOf(0x0a);
    if (nl >= 0) return from + nl + 1;
    end = from;
  }
  return 0;
}

/** Read and check the last line of the first `size` bytes; null for an empty ledger. */
function readHead(fd: number, path: string, key: SigningKey, size: number): SignedReceipt | null {
  if (size === 0) return null;
  const lastByte = Buffer.alloc(1);
  readSync(fd, lastByte, 0, 1, size - 1);
  if (lastByte[0] !== 0x0a) throw new ReceiptLedgerError('LEDGER_TORN_TAIL', `${path} does not end with a complete line (an append was interrupted); inspect and truncate it by hand`);
  // The last line is [lineStart, size - 1); walk back from its newline to the one before it.
  const parts: Buffer[] = [];
  let pos = size - 1;
  while (pos > 0) {
    const from = Math.max(0, pos - CHUNK);
    const buf = Buffer.alloc(pos - from);
    readSync(fd, buf, 0, buf.length, from);
    const nl = buf.lastIndexOf(0x0a);
    parts.unshift(nl >= 0 ? buf.subarray(nl + 1) : buf);
    if (nl >= 0) break;
    pos = from;
  }
  const text = Buffer.concat(parts).toString('utf8');
  return checkLine(text, path, 'last line', key).signed;
}

function checkLine(text: string, path: string, where: string, key: SigningKey): { signed: SignedReceipt; raw: unknown } {
  const parsed = parseLedgerLine(text);
  if (!parsed.ok) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${path} ${where}: ${parsed.message}`);
  const { line } = parsed;
  const body = parseReceiptBody(line.receipt);
  if (!body.ok) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${path} ${where}: ${body.message}`);
  if (line.id !== digestOf(line.receipt)) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${path} ${where}: id is not the hash of the receipt`);
  if (line.keyId !== key.keyId) {
    throw new ReceiptLedgerError('LEDGER_KEY_MISMATCH', `${path} ${where} was signed by ${line.keyId}, but the signing key is ${key.keyId}`);
  }
  if (!ed.verify(Buffer.from(line.signature, 'hex'), signatureMessage(line.id), key.publicKey)) {
    throw new ReceiptLedgerError('LEDGER_CORRUPT', `${path} ${where}: the signature does not verify`);
  }
  return { signed: { body: body.body, id: line.id, signature: line.signature, keyId: line.keyId }, raw: line.receipt };
}

function parseAll(text: string, path: string, key: SigningKey): SignedReceipt[] {
  if (text.length > 0 && !text.endsWith('\n')) throw new ReceiptLedgerError('LEDGER_TORN_TAIL', `${path} does not end with a complete line`);
  const lines = text.length === 0 ? [] : text.slice(0, -1).split('\n');
  const chain = new ChainVerifier();
  return lines.map((l, i) => {
    const { signed, raw } = checkLine(l, path, `line ${i + 1}`, key);
    const fault = chain.next({ body: raw, id: signed.id });
    if (fault) throw new ReceiptLedgerError('LEDGER_CORRUPT', `${path} line ${i + 1}: ${fault.problem}: ${fault.message}`);
    return signed;
  });
}

/** The first `size` bytes of the file. */
function readWhole(fd: number, size: number): string {
  const buf = Buffer.alloc(size);
  let off = 0;
  while (off < size) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) break;
    off += n;
  }
  return buf.subarray(0, off).toString('utf8');
}

/** The export must equal a prefix of the ledger; append what it lacks, refuse anything else. */
function catchUpExport(fd: number, exportFd: number, exportPath: string): void {
  const main = fstatSync(fd);
  const mirror = fstatSync(exportFd);
  if (main.dev === mirror.dev && main.ino === mirror.ino) throw new ReceiptLedgerError('LEDGER_EXPORT_DIVERGED', `${exportPath} is the ledger itself`);
  if (mirror.size > main.size) throw new ReceiptLedgerError('LEDGER_EXPORT_DIVERGED', `${exportPath} holds more than the ledger (${mirror.size} > ${main.size} bytes)`);
  const a = Buffer.alloc(CHUNK);
  const b = Buffer.alloc(CHUNK);
  for (let off = 0; off < mirror.size; off += CHUNK) {
    const n = Math.min(CHUNK, mirror.size - off);
    readSync(fd, a, 0, n, off);
    readSync(exportFd, b, 0, n, off);
    if (a.compare(b, 0, n, 0, n) !== 0) throw new ReceiptLedgerError('LEDGER_EXPORT_DIVERGED', `${exportPath} differs from the ledger within its first ${off + n} bytes`);
  }
  if (mirror.size === main.size) return;
  for (let off = mirror.size; off < main.size; off += CHUNK) {
    const n = Math.min(CHUNK, main.size - off);
    readSync(fd, a, 0, n, off);
    writeAll(exportFd, a.subarray(0, n));
  }
  fsyncSync(exportFd);
}

/** The fields a Collapse's `status.receipt` carries. */
export function receiptStatus(r: SignedReceipt): { id: string; sequence: number; previous: string | null; signature: string; keyId: string } {
  return { id: r.id, sequence: r.body.sequence, previous: r.body.previous, signature: r.signature, keyId: r.keyId };
}
