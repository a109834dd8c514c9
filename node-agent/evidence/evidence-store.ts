// The evidence store: a content-addressed store of immutable objects (signed envelopes, statements) in the
// node store, <store>/evidence/sha256/<hex>. Objects are verified on write (an object already present
// under a name must hash to it, or the write refuses) and on every read. Reads happen inside a
// resolution session: one cumulative budget of objects and bytes for all the reads of one evidence graph,
// checked before each I/O (an object's size is known from fstat before its bytes are read), so a graph
// cannot make its verifier read without bound; any failure ends the session for good, and a session
// that failed answers nothing more.
import { closeSync, constants, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../core/digest.js';
import { fsyncPath } from '../../native/index.js';

export type EvidenceErrorCode = 'EVIDENCE_DIGEST_INVALID' | 'EVIDENCE_MISSING' | 'EVIDENCE_CORRUPT' | 'EVIDENCE_BUDGET_EXCEEDED' | 'EVIDENCE_SESSION_ENDED';

export class EvidenceError extends Error {
  constructor(
    readonly code: EvidenceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'EvidenceError';
  }
}

export interface ResolutionBudget {
  maxObjects: number;
  maxBytes: number;
}

const DIGEST = /^sha256:([0-9a-f]{64})$/;

function hexOf(digest: string): string {
  const m = DIGEST.exec(digest);
  if (!m?.[1]) throw new EvidenceError('EVIDENCE_DIGEST_INVALID', `"${digest}" is not sha256:<64 hex>`);
  return m[1];
}

/** Reads exactly `size` bytes of `fd` (a file that grew or shrank under the reader is corrupt). */
function readExactly(fd: number, size: number, digest: string): Buffer {
  const buf = Buffer.alloc(size);
  let off = 0;
  while (off < size) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) throw new EvidenceError('EVIDENCE_CORRUPT', `${digest}: shorter than its recorded size`);
    off += n;
  }
  if (readSync(fd, Buffer.alloc(1), 0, 1, size) !== 0) throw new EvidenceError('EVIDENCE_CORRUPT', `${digest}: longer than its recorded size`);
  return buf;
}

export class EvidenceStore {
  readonly dir: string;

  constructor(storeDir: string) {
    this.dir = join(storeDir, 'evidence', 'sha256');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  private path(hex: string): string {
    return join(this.dir, hex);
  }

  /** Stores `bytes` (durably: file and directory fsynced) and returns its digest; an existing object must hash to its name. */
  put(bytes: Uint8Array): string {
    return this.putAll([bytes])[0] as string;
  }

  /**
   * Stores each of `objects` as put does, and returns their digests in order: each file is written and
   * fsynced and linked in place, and the directory is fsynced once for all of them. Nothing returns
   * before every object is durable.
   */
  putAll(objects: readonly Uint8Array[]): string[] {
    const digests = objects.map((bytes) => this.link(bytes));
    if (objects.length > 0) fsyncPath(this.dir);
    return digests;
  }

  /** Writes and fsyncs one object under a temporary name and links it in place (the directory is the caller's to fsync). */
  private link(bytes: Uint8Array): string {
    const hex = sha256Hex(bytes);
    const digest = `sha256:${hex}`;
    const final = this.path(hex);
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o400);
    try {
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      // link, not rename: it never replaces an object already there.
      linkSync(tmp, final);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Present already: it must be these bytes (an object is never rewritten); one of another size is
      // not read past this size, and is as corrupt as one of other bytes.
      try {
        this.session({ maxObjects: 1, maxBytes: bytes.length }).read(digest);
      } catch (e) {
        if (e instanceof EvidenceError && e.code === 'EVIDENCE_BUDGET_EXCEEDED') throw new EvidenceError('EVIDENCE_CORRUPT', `${digest}: the stored object is not ${bytes.length} bytes`);
        throw e;
      }
    } finally {
      unlinkSync(tmp);
    }
    return digest;
  }

  /** A resolution session over this store with one cumulative budget. */
  session(budget: ResolutionBudget): ResolutionSession {
    return new ResolutionSession((hex) => this.path(hex), budget);
  }
}

export class ResolutionSession {
  private objects = 0;
  private bytes = 0;
  private endedBy: EvidenceError | undefined;

  constructor(
    private readonly pathOf: (hex: string) => string,
    private readonly budget: ResolutionBudget,
  ) {}

  /** Why the session ended, if it did. */
  get ended(): EvidenceError | undefined {
    return this.endedBy;
  }

  get used(): { objects: number; bytes: number } {
    return { objects: this.objects, bytes: this.bytes };
  }

  /** The object's bytes, verified against its digest, within the session's budget. */
  read(digest: string): Buffer {
    if (this.endedBy) throw new EvidenceError('EVIDENCE_SESSION_ENDED', `the resolution session ended: ${this.endedBy.message}`);
    try {
      const hex = hexOf(digest);
      if (this.objects + 1 > this.budget.maxObjects) throw new EvidenceError('EVIDENCE_BUDGET_EXCEEDED', `reading ${digest} would exceed the session's ${this.budget.maxObjects} objects`);
      let fd: number;
      try {
        fd = openSync(this.pathOf(hex), constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') throw new EvidenceError('EVIDENCE_MISSING', `${digest} is not in the evidence store`);
        if (code === 'ELOOP') throw new EvidenceError('EVIDENCE_CORRUPT', `${digest} is a symbolic link`);
        throw err;
      }
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) throw new EvidenceError('EVIDENCE_CORRUPT', `${digest} is not a regular file`);
        this.objects++;
        if (this.bytes + st.size > this.budget.maxBytes) throw new EvidenceError('EVIDENCE_BUDGET_EXCEEDED', `reading ${digest} (${st.size} bytes) would exceed the session's ${this.budget.maxBytes} bytes`);
        this.bytes += st.size;
        const data = readExactly(fd, st.size, digest);
        if (sha256Hex(data) !== hex) throw new EvidenceError('EVIDENCE_CORRUPT', `${digest}: its bytes hash to sha256:${sha256Hex(data)}`);
        return data;
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      this.endedBy = err instanceof EvidenceError ? err : new EvidenceError('EVIDENCE_CORRUPT', (err as Error).message);
      throw this.endedBy;
    }
  }
}
