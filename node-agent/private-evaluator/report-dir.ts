// The examiner's report directory: made fresh for each private-evaluator run, owner-only and owned by the
// examiner's host id, holding a binding marker the node-agent writes (run, check, candidate identity,
// verifier identity; root's, read-only) — bound into the examiner alone at /run/worldline-report. After
// the run the node-agent collects one fixed-name file from it, `report`, and keeps its bytes and digest,
// or says by name why the report cannot be trusted: missing, not a regular file (a symlink, a FIFO, a
// directory), linked more than once, not the examiner's, larger than the bound, changed while read, or a
// directory or marker that is not what was made. A report that is not collected is UNTRUSTED; it never
// decides a verdict.
import {
  chmodSync, chownSync, closeSync, constants as fsc, fchmodSync, fchownSync, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readSync, writeSync,
  type BigIntStats,
} from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../core/canonical-json.js';
import { DIGEST_PREFIX, sha256Hex } from '../../core/digest.js';
import * as native from '../../native/index.js';

/** What a report is bound to; the marker holds exactly this, as canonical JSON. */
export interface ReportBinding {
  run: string;
  check: string;
  /** The candidate's identity (its subject digest). */
  candidate: string;
  /** The verifier identity the examiner ran with. */
  verifier: string;
}

export const REPORT_FILE = 'report';
export const BINDING_FILE = 'binding.json';
/** The default bound on a report's size. */
export const MAX_REPORT_BYTES = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;

export type ReportReason =
  | 'REPORT_MISSING'
  | 'REPORT_NOT_REGULAR'
  | 'REPORT_MULTIPLY_LINKED'
  | 'REPORT_OWNER_INVALID'
  | 'REPORT_TOO_LARGE'
  | 'REPORT_CHANGED_DURING_READ'
  | 'REPORT_BINDING_MISMATCH';

export type ReportCollection =
  | { state: 'collected'; bytes: Buffer; size: number; digest: string; binding: ReportBinding }
  | { state: 'untrusted'; reason: ReportReason; message: string };

export interface CollectOptions {
  maxBytes?: number;
  /** Called after each chunk read (tests use it to change the file mid-read). */
  onChunk?: () => void;
}

const untrusted = (reason: ReportReason, message: string): ReportCollection => ({ state: 'untrusted', reason, message });
const markerText = (b: ReportBinding): string => `${canonicalJson(b)}\n`;

export class ReportDir {
  private constructor(
    readonly dir: string,
    readonly binding: ReportBinding,
    readonly examinerHostId: number,
  ) {}

  /** Makes the directory (it must not exist: one per run), its marker, then hands it to the examiner. */
  static create(dir: string, binding: ReportBinding, examinerHostId: number): ReportDir {
    mkdirSync(dir, { mode: 0o700 });
    const fd = openSync(join(dir, BINDING_FILE), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o444);
    try {
      writeSync(fd, markerText(binding));
      fchownSync(fd, 0, 0);
      fchmodSync(fd, 0o444);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chownSync(dir, examinerHostId, examinerHostId);
    chmodSync(dir, 0o700);
    native.fsyncPath(dir);
    return new ReportDir(dir, binding, examinerHostId);
  }

  /** Collects the report (see the file comment). Never throws for anything the examiner could have done. */
  collect(opts: CollectOptions = {}): ReportCollection {
    const maxBytes = opts.maxBytes ?? MAX_REPORT_BYTES;
    let dirFd: number;
    try {
      dirFd = openSync(this.dir, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
    } catch (err) {
      return untrusted('REPORT_BINDING_MISMATCH', `the report directory cannot be opened as made: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    try {
      const d = fstatSync(dirFd);
      if (!d.isDirectory() || d.uid !== this.examinerHostId || (d.mode & 0o7777) !== 0o700) {
        return untrusted('REPORT_BINDING_MISMATCH', `the report directory is not as made (owner ${d.uid}, mode ${(d.mode & 0o7777).toString(8)})`);
      }
      const marker = this.markerProblem(dirFd);
      if (marker !== null) return untrusted('REPORT_BINDING_MISMATCH', marker);
      return this.readReport(dirFd, maxBytes, opts.onChunk);
    } finally {
      closeSync(dirFd);
    }
  }

  private markerProblem(dirFd: number): string | null {
    let fd: number;
    try {
      fd = native.openBeneath(dirFd, BINDING_FILE, fsc.O_RDONLY | fsc.O_NONBLOCK);
    } catch (err) {
      return `the binding marker cannot be opened: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.uid !== 0 || st.nlink !== 1) return 'the binding marker is not the node-agent\'s single-linked file';
      const want = Buffer.from(markerText(this.binding));
      const got = Buffer.alloc(want.length + 1);
      const n = readSync(fd, got, 0, got.length, 0);
      if (n !== want.length || !got.subarray(0, n).equals(want)) return 'the binding marker does not hold this run\'s binding';
      return null;
    } finally {
      native.closeFd(fd);
    }
  }

  private readReport(dirFd: number, maxBytes: number, onChunk?: () => void): ReportCollection {
    let fd: number;
    try {
      fd = native.openBeneath(dirFd, REPORT_FILE, fsc.O_RDONLY | fsc.O_NONBLOCK | fsc.O_NOCTTY);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return untrusted('REPORT_MISSING', `the examiner left no ${REPORT_FILE}`);
      if (code === 'ELOOP') return untrusted('REPORT_NOT_REGULAR', `${REPORT_FILE} is a symbolic link`);
      return untrusted('REPORT_NOT_REGULAR', `${REPORT_FILE} cannot be opened: ${code ?? String(err)}`);
    }
    try {
      const before = fstatSync(fd, { bigint: true });
      if (!before.isFile()) return untrusted('REPORT_NOT_REGULAR', `${REPORT_FILE} is not a regular file`);
      if (before.nlink !== 1n) return untrusted('REPORT_MULTIPLY_LINKED', `${REPORT_FILE} has ${before.nlink} links`);
      if (before.uid !== BigInt(this.examinerHostId)) return untrusted('REPORT_OWNER_INVALID', `${REPORT_FILE} belongs to host uid ${before.uid}, not the examiner's ${this.examinerHostId}`);
      if (before.size > BigInt(maxBytes)) return untrusted('REPORT_TOO_LARGE', `${REPORT_FILE} holds ${before.size} bytes, more than ${maxBytes}`);
      const size = Number(before.size);
      const bytes = Buffer.alloc(size);
      let off = 0;
      while (off < size) {
        const n = readSync(fd, bytes, off, Math.min(CHUNK, size - off), off);
        if (n === 0) break; // it shrank
        off += n;
        onChunk?.();
      }
      const grew = readSync(fd, Buffer.alloc(1), 0, 1, size) !== 0;
      const after = fstatSync(fd, { bigint: true });
      const name = lstatSync(join(this.dir, REPORT_FILE), { bigint: true, throwIfNoEntry: false });
      if (off !== size || grew || changed(before, after) || name === undefined || name.ino !== before.ino || name.dev !== before.dev) {
        return untrusted('REPORT_CHANGED_DURING_READ', `${REPORT_FILE} changed while it was read`);
      }
      const digest = DIGEST_PREFIX + sha256Hex(bytes);
      return { state: 'collected', bytes, size, digest, binding: this.binding };
    } finally {
      native.closeFd(fd);
    }
  }
}

function changed(a: BigIntStats, b: BigIntStats): boolean {
  return a.size !== b.size || a.mtimeNs !== b.mtimeNs || a.ctimeNs !== b.ctimeNs || a.ino !== b.ino || a.nlink !== b.nlink || a.uid !== b.uid;
}
