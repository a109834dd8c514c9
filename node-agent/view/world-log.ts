// A World's output log as a stream: what the run printed so far, and with `follow` what it prints next,
// until the run is over and every byte it wrote has been read. The log lives in the node store (written
// by the World's supervisor through a descriptor the World never holds); it is opened without following
// a link and read in bounded chunks, so a reader costs one descriptor and 64 KiB.
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LogStreamOptions {
  follow: boolean;
  /** True while the World may still write (its run has not ended). */
  running: () => boolean;
  signal: AbortSignal;
  /** How long to wait at the end of the log before looking again (default 200 ms). */
  pollMs?: number;
}

const CHUNK = 64 * 1024;

function openLog(path: string): number | undefined {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** True when the log exists now (a World that never started has none). */
export function logExists(path: string): boolean {
  const fd = openLog(path);
  if (fd === undefined) return false;
  closeSync(fd);
  return true;
}

/** The log's bytes from the start; with `follow`, waits for more until the run ends or the reader leaves. */
export async function* readWorldLog(path: string, o: LogStreamOptions): AsyncGenerator<Buffer> {
  const pollMs = o.pollMs ?? 200;
  let fd = openLog(path);
  // Following a World that has not started yet: its log appears when the run does.
  while (fd === undefined && o.follow && o.running() && !o.signal.aborted) {
    await sleep(pollMs, undefined, { signal: o.signal }).catch(() => undefined);
    fd = openLog(path);
  }
  if (fd === undefined) return;
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      if (o.signal.aborted) return;
      // Whether the run was over is read before the read that finds the end: a last write made just
      // before the run ended is then still read.
      const wasRunning = o.follow && o.running();
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n > 0) {
        yield Buffer.from(buf.subarray(0, n));
        continue;
      }
      if (!wasRunning) return;
      await sleep(pollMs, undefined, { signal: o.signal }).catch(() => undefined);
    }
  } finally {
    closeSync(fd);
  }
}
