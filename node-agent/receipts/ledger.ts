// The node's append-only receipt ledger: one signed receipt per line (format in
// core/receipts/ledger-line.ts), each append fsynced, and mirrored line for line to an optional export
// file (fsynced too) that should live where the signing key's holder cannot write.
//
// One writer per ledger: the node-agent holds the store lock while it appends. On open, the last line
// is checked (id, key, signature) and becomes the chain head; a torn last line (a crash mid-append, so
// never acknowledged) is refused, not repaired. The export must be a byte prefix of the ledger: a
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
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { digestOf } from '../../core/digest.js';
import { formatLedgerLine, parseLedgerLine, signatureMessage } from '../../core/receipts/ledger-line.js';
import { buildReceiptBody, parseReceiptBody, receiptId, type ReceiptBody, type ReceiptContent } from '../../core/receipts/receipt.js';
import { ChainVerifier } from '../../core/receipts/chain.js';
import type { Database } from 'better-sqlite3';
import { fsyncDir, writeAll } from './durable-write.js';
import { ed } from './ed25519.js';
import { ReceiptLedgerError, type ReceiptLedgerCode } from './errors.js';
import { readLines } from './read-lines.js';
import { ReceiptRows } from './receipt-rows.js';
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

const OPEN_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW;
const CHUNK = 1 << 20;

export class ReceiptLedger {
  private head: SignedReceipt | null;
  private broken: string | null = null;
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly fd: number,
    private readonly exportFd: number | null,
    private readonly rows: ReceiptRows | null,
    private readonly key: SigningKey,
    head: SignedReceipt | null,
  ) {
    this.head = head;
  }

  static open(options: LedgerOptions): ReceiptLedger {
    const key = loadOrCreateSigningKey(options.keyDir);
    const fd = openLedgerFile(options.path);
    let exportFd: number | null = null;
    try {
      const head = readHead(fd, options.path, key);
      let rows: ReceiptRows | null = null;
      if (options.db !== undefined) {
        rows = new ReceiptRows(options.db, options.now ?? (() => new Date()));
        rows.sync(options.path, readLines(fd), (text, where) => void checkLine(text, options.path, where, key));
      }
      if (options.exportPath !== undefined) {
        exportFd = openLedgerFile(options.exportPath);
        catchUpExport(fd, exportFd, options.exportPath);
      }
      return new ReceiptLedger(options.path, fd, exportFd, rows, key, head);
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

  /** Sign and durably append one receipt; its sequence and previous id follow the current last line. */
  append(content: ReceiptContent): SignedReceipt {
    this.usable();
    const body = buildReceiptBody(content, (this.head?.body.sequence ?? 0) + 1, this.head?.id ?? null);
    const id = receiptId(body);
    const signature = Buffer.from(this.key.sign(signatureMessage(id))).toString('hex');
    const signed: SignedReceipt = { body, id, signature, keyId: this.key.keyId };
    const text = formatLedgerLine({ receipt: body, id, signature, keyId: this.key.keyId });
    const line = Buffer.from(text, 'utf8');
    try {
      writeAll(this.fd, line);
      fsyncSync(this.fd);
    } catch (e) {
      this.broken = `append to ${this.path} failed: ${(e as Error).message}`;
      throw new ReceiptLedgerError('LEDGER_BROKEN', this.broken);
    }
    this.head = signed; // it is in the ledger now, whatever happens to the row or the mirror
    const missed: { code: ReceiptLedgerCode; message: string }[] = [];
    if (this.rows !== null) {
      try {
        this.rows.insert(text.slice(0, -1));
      } catch (e) {
        missed.push({ code: 'RECEIPTS_ROW_FAILED', message: `the receipts table missed receipt ${body.sequence}: ${(e as Error).message}; reopen to backfill it` });
      }
    }
    if (this.exportFd !== null) {
      try {
        writeAll(this.exportFd, line);
        fsyncSync(this.exportFd);
      } catch (e) {
        missed.push({ code: 'LEDGER_EXPORT_FAILED', message: `the export mirror missed receipt ${body.sequence}: ${(e as Error).message}; reopen to catch it up` });
      }
    }
    if (missed.length > 0) {
      this.broken = missed.map((m) => m.message).join('; ');
      throw new ReceiptLedgerError(missed[0]!.code, this.broken);
    }
    return signed;
  }

  last(): SignedReceipt | null {
    return this.head;
  }

  /** Every receipt, in order, after checking the chain and each signature against this ledger's key. */
  readAll(): SignedReceipt[] {
    this.usable();
    return parseAll(readWhole(this.fd), this.path, this.key);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
    if (this.exportFd !== null) closeSync(this.exportFd);
  }

  private usable(): void {
    if (this.closed) throw new ReceiptLedgerError('LEDGER_CLOSED', `${this.path} is closed`);
    if (this.broken !== null) throw new ReceiptLedgerError('LEDGER_BROKEN', this.broken);
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

/** Read and check the last line; null for an empty ledger. */
function readHead(fd: number, path: string, key: SigningKey): SignedReceipt | null {
  const size = fstatSync(fd).size;
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

function readWhole(fd: number): string {
  const size = fstatSync(fd).size;
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
