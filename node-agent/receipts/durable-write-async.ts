// The ledger's grouped appends write and fsync on libuv's thread pool instead of the event loop, so
// that appends asked for while one group is on its way to the disk can gather into the next group.
import { fsync, write } from 'node:fs';

/** Writes all of `buf` at the descriptor's offset (O_APPEND: the end), retrying after a short write. */
export function writeAllAsync(fd: number, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const from = (off: number): void => {
      if (off >= buf.length) return resolve();
      write(fd, buf, off, buf.length - off, null, (err, n) => (err ? reject(err) : from(off + n)));
    };
    from(0);
  });
}

export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
}
