// Read and hash one regular file found by a walk, making sure it is the file the walk saw: opened
// without following a final link and without blocking on a FIFO, the descriptor's dev/ino equal to the
// lstat's, the kernel's own name for the descriptor equal to the expected path (which catches a parent
// directory swapped for a link), and size and ctime unchanged after reading.
// Synchronous on purpose: the walk runs in a worker thread (see walk-tree.ts).
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, readlinkSync, type BigIntStats } from 'node:fs';
import { errnoCode } from './store-errors.js';

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

export type HashResult = { ok: true; sha256: string; size: number } | { ok: false; reason: string };

/** `buffer` is scratch space reused across calls (one per walk). */
export function hashFileSync(absPath: string, seen: BigIntStats, buffer: Buffer): HashResult {
  let fd: number;
  try {
    fd = openSync(absPath, OPEN_FLAGS);
  } catch (e) {
    const code = errnoCode(e);
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO' || code === 'ENOTDIR') return { ok: false, reason: `could not open it again (${code})` };
    throw e;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (st.dev !== seen.dev || st.ino !== seen.ino || !st.isFile()) return { ok: false, reason: 'replaced between lstat and open' };
    const named = readlinkSync(`/proc/self/fd/${fd}`);
    if (named !== absPath) return { ok: false, reason: `opened as ${named}` };
    const { sha256, size } = hashOpenFile(fd, buffer);
    const after = fstatSync(fd, { bigint: true });
    if (BigInt(size) !== seen.size || after.size !== seen.size || after.ctimeNs !== seen.ctimeNs) {
      return { ok: false, reason: 'content changed while it was read' };
    }
    return { ok: true, sha256, size };
  } finally {
    closeSync(fd);
  }
}

/** SHA-256 (hex) and size of everything left to read from an open descriptor; `buffer` is scratch space. */
export function hashOpenFile(fd: number, buffer: Buffer): { sha256: string; size: number } {
  const hash = createHash('sha256');
  let size = 0;
  for (;;) {
    const n = readSync(fd, buffer, 0, buffer.length, null);
    if (n === 0) break;
    hash.update(buffer.subarray(0, n));
    size += n;
  }
  return { sha256: hash.digest('hex'), size };
}
