// Synchronous write helpers for the ledger and key files: a write that retries until every byte is
// written, and an fsync of a directory so that a newly created name survives a crash.
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
