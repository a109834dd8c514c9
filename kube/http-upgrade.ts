// The raw HTTP/1.1 a server writes on a socket it was handed by an 'upgrade' event (Node's http server
// does not answer upgrade requests itself): the 101 that switches protocols, or a refusal with a JSON
// body, after which the connection is closed.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** Switches the connection to `protocol`. */
export function acceptUpgrade(socket: Duplex, protocol: string): void {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${protocol}\r\nConnection: Upgrade\r\n\r\n`);
}

/** Answers the upgrade request with `code` and a JSON body, and closes the connection. */
export function refuseUpgrade(socket: Duplex, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  socket.end(`HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
}

/** Whether a request asks to upgrade to `protocol` (Connection: upgrade and the Upgrade token). */
export function asksUpgradeTo(headers: { connection?: string | undefined; upgrade?: string | undefined }, protocol: string): boolean {
  const connection = (headers.connection ?? '').toLowerCase().split(',').map((s) => s.trim());
  return connection.includes('upgrade') && (headers.upgrade ?? '').split(',').map((s) => s.trim()).includes(protocol);
}
