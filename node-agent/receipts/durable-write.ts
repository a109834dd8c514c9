// Synchronous write helpers for the ledger and key files: a write that retries until every byte is
// written, a new file written and synced in one step, and an fsync of a directory so that a newly
// created name survives a crash.
import { closeSync, constants, fsyncSync, openSync, writeSync } from 'node:fs';

export function writeAll(fd: number, text: string | Buffer): void {
  const buf = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` (open `flags` | O_WRONLY | O_CREAT | O_NOFOLLOW, `mode`), writes all of `text`, fsyncs and closes it. */
export function writeSyncedFile(path: string, text: string | Buffer, flags: number, mode: number): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | flags, mode);
  try {
    writeAll(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
