// Reads a ledger file line by line from an open descriptor, in fixed-size chunks, so that a long ledger
// is never held in memory whole. Lines are yielded without their newline; a last line without one is
// yielded as it is (the ledger refuses such a torn tail before it reads lines).
import { fstatSync, readSync } from 'node:fs';

const CHUNK = 1 << 20;

export function* readLines(fd: number): Generator<string, void, undefined> {
  const size = fstatSync(fd).size;
  const buf = Buffer.alloc(CHUNK);
  let carry: Buffer[] = [];
  for (let pos = 0; pos < size; ) {
    const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
    if (n === 0) break;
    pos += n;
    let start = 0;
    // 0x0a never occurs inside a multi-byte UTF-8 sequence, so splitting bytes on it splits characters never.
    for (let nl = buf.indexOf(0x0a, start); nl >= 0 && nl < n; nl = buf.indexOf(0x0a, start)) {
      carry.push(buf.subarray(start, nl));
      yield Buffer.concat(carry).toString('utf8');
      carry = [];
      start = nl + 1;
    }
    if (start < n) carry.push(Buffer.from(buf.subarray(start, n))); // copied: buf is reused for the next chunk
  }
  if (carry.length > 0) yield Buffer.concat(carry).toString('utf8');
}
