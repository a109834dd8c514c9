// The Allowlist proxy's protocol pieces: what a refusal and an allowed connection report, hop-by-hop
// header removal, authority parsing and the plain responses the proxy answers with.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** Stable reasons of a refusal. */
export type RefusalReason =
  /** The destination is not an allowlist entry. */
  | 'NOT_ALLOWED'
  /** Not a parseable proxy request (bad request line, bad authority, origin-form request, oversized headers). */
  | 'MALFORMED'
  /** A well-formed request this proxy does not serve (a non-http absolute URI, an HTTP Upgrade). */
  | 'UNSUPPORTED'
  /** maxConnections client connections were already open; the new one was closed unanswered. */
  | 'CONNECTION_LIMIT';

export interface NetworkRefusal {
  /** Requested host as the world wrote it (lowercased, at most 253 characters), '' when unknown. */
  host: string;
  /** Requested port, 0 when unknown. */
  port: number;
  /** RFC 3339 time of the refusal. */
  time: string;
  reason: RefusalReason;
}

export interface AllowedConnection {
  host: string;
  port: number;
  time: string;
  kind: 'CONNECT' | 'HTTP';
}

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade',
]);
const MAX_HOST_REPORT = 253;
export const LINGER_MS = 1000;

export function positive(name: string, value: number | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
  return value;
}

/** Headers without hop-by-hop ones, including every name the Connection header lists. */
export function stripHopByHop(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = new Set<string>();
  for (const h of [headers['connection'], headers['proxy-connection']]) {
    const value = Array.isArray(h) ? h.join(',') : h;
    if (typeof value === 'string') for (const t of value.split(',')) listed.add(t.trim().toLowerCase());
  }
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Splits "host:port" / "[v6]:port" syntactically; null when it is not that shape. */
export function splitAuthority(authority: string): { host: string; port: number } | null {
  let host: string;
  let portText: string;
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close < 0 || authority[close + 1] !== ':') return null;
    host = authority.slice(1, close);
    portText = authority.slice(close + 2);
  } else {
    const colon = authority.lastIndexOf(':');
    if (colon <= 0) return null;
    host = authority.slice(0, colon);
    portText = authority.slice(colon + 1);
    if (host.includes(':')) return null;
  }
  if (host.length === 0 || !/^[0-9]{1,5}$/.test(portText)) return null;
  const port = Number(portText);
  if (port < 1 || port > 65535) return null;
  return { host, port };
}

export function reportHost(host: string): string {
  return host.toLowerCase().replace(/[^\x21-\x7e]/g, '?').slice(0, MAX_HOST_REPORT);
}

export function plainResponse(status: number, statusText: string, body: string): string {
  const text = `${body}\n`;
  return `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
}
