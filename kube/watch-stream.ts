// Reads a watch response (newline-delimited JSON WatchEvents) as an async iterable.
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

export async function* readWatchEvents<T>(stream: Readable): AsyncGenerator<WatchEvent<T>> {
  const decoder = new StringDecoder('utf8');
  let buf = '';
  for await (const chunk of stream) {
    buf += typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer);
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield JSON.parse(line) as WatchEvent<T>;
    }
  }
  const rest = (buf + decoder.end()).trim();
  if (rest) yield JSON.parse(rest) as WatchEvent<T>;
}
