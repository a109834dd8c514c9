// Read and hash one regular file found by a walk, making sure it is the file the walk saw: opened beneath
// the walked root's directory descriptor (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS, native/files.ts), so neither the file nor any directory on the way to it may be
// a link and the kernel keeps the lookup inside the root; without following a final link and without
// blocking on a FIFO; the descriptor's dev/ino equal to the lstat's; size and ctime unchanged after
// reading. A parent directory swapped for a link between the walk's lstat and the open fails the open
// (ELOOP), where a path-based open would have followed it.
// Synchronous on purpose: the walk runs in a worker thread (see walk-tree.ts).
import { createHash } from 'node:crypto';
import { constants, fstatSync, readSync, type BigIntStats } from 'node:fs';
import { closeFd, openBeneath } from '../../native/index.js';
import { errnoCode } from './store-errors.js';

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const NOT_THE_SAME_FILE = new Set(['ELOOP', 'ENOENT', 'ENXIO', 'ENOTDIR', 'EXDEV']);

export type HashResult = { ok: true; sha256: string; size: number } | { ok: false; reason: string };

/** `rootFd` is the walked root's directory, `relPath` the file's path in it; `buffer` is scratch space reused across calls (one per walk). */
export function hashFileSync(rootFd: number, relPath: string, seen: BigIntStats, buffer: Buffer): HashResult {
  let fd: number;
  try {
    fd = openBeneath(rootFd, relPath, OPEN_FLAGS);
  } catch (e) {
    const code = errnoCode(e);
    if (code !== undefined && NOT_THE_SAME_FILE.has(code)) return { ok: false, reason: `could not open it again beneath the root (${code})` };
    throw e;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (st.dev !== seen.dev || st.ino !== seen.ino || !st.isFile()) return { ok: false, reason: 'replaced between lstat and open' };
    const { sha256, size } = hashOpenFileOfSize(fd, buffer, Number(seen.size));
    const after = fstatSync(fd, { bigint: true });
    if (BigInt(size) !== seen.size || after.size !== seen.size || after.ctimeNs !== seen.ctimeNs) {
      return { ok: false, reason: 'content changed while it was read' };
    }
    return { ok: true, sha256, size };
  } finally {
    closeFd(fd); // opened by the addon: fs.closeSync would warn in the walk's worker thread
  }
}

/** A SHA-256 and byte count fed one read at a time. */
class RunningHash {
  private readonly hash = createHash('sha256');
  size = 0;

  /** Reads the next chunk of `fd` (at most `max` bytes) into the hash; how many were read, 0 at end of file. */
  read(fd: number, buffer: Buffer, max = buffer.length): number {
    const n = readSync(fd, buffer, 0, max, null);
    this.hash.update(buffer.subarray(0, n));
    this.size += n;
    return n;
  }

  /** Reads the next chunk of `fd` into the hash; false at end of file. */
  step(fd: number, buffer: Buffer): boolean {
    return this.read(fd, buffer) > 0;
  }

  result(): { sha256: string; size: number } {
    return { sha256: this.hash.digest('hex'), size: this.size };
  }
}

/** SHA-256 (hex) and size of everything left to read from an open descriptor; `buffer` is scratch space. */
export function hashOpenFile(fd: number, buffer: Buffer): { sha256: string; size: number } {
  const h = new RunningHash();
  while (h.step(fd, buffer));
  return h.result();
}

/**
 * hashOpenFile for a file whose lstat gave `expected` bytes, without the read that finds the end: a read
 * asked for one byte more than is left that returns exactly what is left is taken as the end. The
 * caller's checks make that safe: it hashes `expected` bytes only when the size and ctime after reading
 * are the lstat's, so a file longer than its size says has grown (another size) or been written (another
 * ctime), and a byte past the expected end comes back in that read and makes the sizes differ. One
 * system call fewer per file of a walk.
 */
export function hashOpenFileOfSize(fd: number, buffer: Buffer, expected: number): { sha256: string; size: number } {
  const h = new RunningHash();
  for (;;) {
    const ask = Math.min(buffer.length, expected - h.size + 1);
    const n = h.read(fd, buffer, ask);
    if (n === 0) break;
    if (n < ask && h.size === expected) break;
    if (h.size > expected) break; // longer than its lstat: refused by the caller, and never read a byte at a time
  }
  return h.result();
}

/** hashOpenFile for a loop that must not stall the event loop: `breathe` runs after every read. */
export async function hashOpenFileYielding(fd: number, buffer: Buffer, breathe: () => Promise<void>): Promise<{ sha256: string; size: number }> {
  const h = new RunningHash();
  while (h.step(fd, buffer)) await breathe();
  return h.result();
}
