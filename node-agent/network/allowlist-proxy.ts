// The Allowlist policy's only exit: an HTTP proxy that the node-agent serves on a listening socket created
// inside the world's network namespace (native listenInNetns), while every upstream connection it makes is
// opened from the agent's own network namespace. A world under Allowlist has nothing but loopback, so this
// socket is the one place its traffic can leave through.
//
// It speaks two forms of proxy request:
//   - `CONNECT host:port` (authority form): answered 200, then bytes are relayed both ways, untouched;
//   - an absolute-URI plain-HTTP request (`GET http://host:port/path`): forwarded with node:http, the
//     hop-by-hop headers removed in both directions.
// The destination must equal an allowlist entry exactly (see allowlist.ts: no wildcards). Every other
// destination gets 403 and the connection is closed; input that is not a proxy request gets 400 (431 for
// oversized headers). Each of those is reported to onRefusal with a stable reason.
//
// What it does not do: it does not inspect, filter or log the content of traffic it allows (a tunnel is
// opaque bytes; an allowed destination can receive anything the world sends), it does not pin the
// addresses an allowed name resolves to, and it cannot stop a process inside the world from ignoring the
// proxy variables — such a process simply has no route out of its empty network namespace.
//
// Bounded: header size (maxHeaderSize), concurrent client connections (maxConnections; excess connections
// are dropped by the server and reported as CONNECTION_LIMIT), header/idle/connect timeouts. No input may
// crash it: every socket has an error handler and parse errors end in a 400.
import { closeSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { connect as netConnect, type DropArgument, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { nullLogger, type Logger } from '../../kube/logger.js';
import { isAllowed, parseAllowlist, type Allowlist } from './allowlist.js';

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

export interface AllowlistProxyOptions {
  /** A listening TCP socket fd (e.g. from listenInNetns). The proxy owns it from this call on, also when it throws. */
  listenFd: number;
  /** host:port entries; parsed with parseAllowlist (an invalid entry throws AllowlistEntryError). */
  allow: readonly string[];
  onRefusal: (r: NetworkRefusal) => void;
  onAllowed?: (a: AllowedConnection) => void;
  logger?: Logger;
  /** Upstream connect timeout (default 10 s): 504 when it passes. */
  connectTimeoutMs?: number;
  /** Idle timeout of client connections and tunnels, no bytes either way (default 5 min). */
  idleTimeoutMs?: number;
  /** Time allowed for a complete request head (default 15 s). */
  headersTimeoutMs?: number;
  /** Concurrent client connections (default 256). */
  maxConnections?: number;
  /** Maximum request head size in bytes (default 16 KiB). */
  maxHeaderSize?: number;
}

export interface AllowlistProxyStats {
  /** Open client connections. */
  active: number;
  /** Open upstream connections. */
  upstreamActive: number;
  accepted: number;
  allowed: number;
  refused: number;
  refusedByReason: Record<RefusalReason, number>;
  upstreamFailures: number;
  /** Bytes written to / read from upstream connections that have closed (forwarded heads included). */
  bytesOut: number;
  bytesIn: number;
}

export interface AllowlistProxy {
  /** Resolves once the server is listening on the fd; rejects if the fd cannot be served. */
  readonly listening: Promise<void>;
  /** The canonical allowlist in force. */
  readonly allow: readonly string[];
  /** Destroys every client and upstream connection and closes the listening fd. Idempotent. */
  close(): Promise<void>;
  stats(): AllowlistProxyStats;
}

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade',
]);
const MAX_HOST_REPORT = 253;
const LINGER_MS = 1000;

function positive(name: string, value: number | undefined, dflt: number): number {
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

function reportHost(host: string): string {
  return host.toLowerCase().replace(/[^\x21-\x7e]/g, '?').slice(0, MAX_HOST_REPORT);
}

function plainResponse(status: number, statusText: string, body: string): string {
  const text = `${body}\n`;
  return `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
}

/** Starts the proxy on opts.listenFd. See the file comment for what it serves and refuses. */
export function startAllowlistProxy(opts: AllowlistProxyOptions): AllowlistProxy {
  const listenFd = opts.listenFd;
  let list: Allowlist;
  let connectTimeoutMs: number, idleTimeoutMs: number, headersTimeoutMs: number, maxConnections: number, maxHeaderSize: number;
  try {
    if (!Number.isInteger(listenFd) || listenFd < 0) throw new RangeError(`listenFd must be a file descriptor, got ${String(listenFd)}`);
    if (typeof opts.onRefusal !== 'function') throw new TypeError('onRefusal must be a function');
    list = parseAllowlist(opts.allow);
    connectTimeoutMs = positive('connectTimeoutMs', opts.connectTimeoutMs, 10_000);
    idleTimeoutMs = positive('idleTimeoutMs', opts.idleTimeoutMs, 300_000);
    headersTimeoutMs = positive('headersTimeoutMs', opts.headersTimeoutMs, 15_000);
    maxConnections = positive('maxConnections', opts.maxConnections, 256);
    maxHeaderSize = positive('maxHeaderSize', opts.maxHeaderSize, 16 * 1024);
  } catch (err) {
    if (Number.isInteger(listenFd) && listenFd >= 0) {
      try {
        closeSync(listenFd);
      } catch {
        // not open: nothing to release
      }
    }
    throw err;
  }
  const log = opts.logger ?? nullLogger;
  const clients = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const counts = {
    accepted: 0, allowed: 0, refused: 0, upstreamFailures: 0, bytesOut: 0, bytesIn: 0,
    refusedByReason: { NOT_ALLOWED: 0, MALFORMED: 0, UNSUPPORTED: 0, CONNECTION_LIMIT: 0 } as Record<RefusalReason, number>,
  };
  let closed = false;

  const refuse = (host: string, port: number, reason: RefusalReason, detail: string): void => {
    counts.refused++;
    counts.refusedByReason[reason]++;
    const r: NetworkRefusal = { host: reportHost(host), port, time: new Date().toISOString(), reason };
    log.info('network refusal', { ...r, detail });
    try {
      opts.onRefusal(r);
    } catch (err) {
      log.error('onRefusal threw', { err });
    }
  };
  const allowed = (host: string, port: number, kind: AllowedConnection['kind']): void => {
    counts.allowed++;
    try {
      opts.onAllowed?.({ host, port, time: new Date().toISOString(), kind });
    } catch (err) {
      log.error('onAllowed threw', { err });
    }
  };
  const trackUpstream = (s: Socket): void => {
    upstreams.add(s);
    s.on('close', () => {
      upstreams.delete(s);
      counts.bytesIn += s.bytesRead;
      counts.bytesOut += s.bytesWritten;
    });
  };
  /** Writes a complete response, half-closes, and destroys the socket shortly after in any case. */
  const endWith = (socket: Duplex, response: string): void => {
    if (socket.destroyed) return;
    if (socket.writable) socket.end(response);
    socket.resume(); // drain whatever the client still sends, so close does not turn into a reset
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };

  const server = createServer({
    maxHeaderSize,
    requireHostHeader: false,
    keepAliveTimeout: 5_000,
    headersTimeout: headersTimeoutMs,
    requestTimeout: 0,
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs),
  });
  server.maxConnections = maxConnections;
  server.timeout = idleTimeoutMs;

  server.on('connection', (s: Socket) => {
    counts.accepted++;
    clients.add(s);
    s.on('close', () => clients.delete(s));
    s.on('error', (err) => log.debug('client socket error', { err }));
    if (closed) s.destroy();
  });
  server.on('drop', (d?: DropArgument) => refuse('', 0, 'CONNECTION_LIMIT', `from ${d?.remoteAddress ?? '?'}:${d?.remotePort ?? '?'}`));

  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      endWith(socket, plainResponse(408, 'Request Timeout', 'request head not received in time'));
      return;
    }
    const overflow = err.code === 'HPE_HEADER_OVERFLOW';
    refuse('', 0, 'MALFORMED', `${err.code ?? 'parse error'}: ${err.message}`);
    endWith(socket, overflow
      ? plainResponse(431, 'Request Header Fields Too Large', 'worldline proxy: request head too large')
      : plainResponse(400, 'Bad Request', 'worldline proxy: malformed request'));
  });

  server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const client = socket as Socket;
    client.on('error', (err) => log.debug('tunnel client error', { err }));
    const target = splitAuthority(req.url ?? '');
    if (target === null) {
      refuse('', 0, 'MALFORMED', `CONNECT target ${JSON.stringify((req.url ?? '').slice(0, 100))} is not host:port`);
      endWith(client, plainResponse(400, 'Bad Request', 'worldline proxy: CONNECT needs host:port'));
      return;
    }
    if (!isAllowed(list, target.host, target.port)) {
      refuse(target.host, target.port, 'NOT_ALLOWED', 'CONNECT');
      endWith(client, plainResponse(403, 'Forbidden', `worldline proxy: ${target.host}:${target.port} is not in this world's network allowlist`));
      return;
    }
    allowed(target.host.toLowerCase(), target.port, 'CONNECT');
    const upstream = netConnect({ host: target.host.replace(/^\[|\]$/g, '').toLowerCase(), port: target.port });
    trackUpstream(upstream);
    let established = false;
    const connectTimer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), connectTimeoutMs);
    connectTimer.unref();
    upstream.on('error', (err: Error & { code?: string }) => {
      clearTimeout(connectTimer);
      if (!established) {
        counts.upstreamFailures++;
        log.info('upstream connect failed', { host: target.host, port: target.port, err });
        const timeout = err.code === 'ETIMEDOUT';
        endWith(client, plainResponse(timeout ? 504 : 502, timeout ? 'Gateway Timeout' : 'Bad Gateway', `worldline proxy: cannot reach ${target.host}:${target.port}`));
      } else {
        client.destroy();
      }
    });
    upstream.on('connect', () => {
      clearTimeout(connectTimer);
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      established = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.setTimeout(idleTimeoutMs, () => upstream.destroy());
      client.setTimeout(idleTimeoutMs, () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    let host = '';
    let port = 0;
    try {
      const u = new URL(req.url ?? '');
      host = u.hostname;
      port = u.port === '' ? 80 : Number(u.port);
    } catch {
      // reported without a destination
    }
    refuse(host, port, 'UNSUPPORTED', 'HTTP Upgrade');
    endWith(socket, plainResponse(501, 'Not Implemented', 'worldline proxy: Upgrade is not supported; use CONNECT'));
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const refuseHttp = (host: string, port: number, reason: RefusalReason, status: number, body: string): void => {
      refuse(host, port, reason, `${req.method ?? '?'} request`);
      res.shouldKeepAlive = false;
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end(`worldline proxy: ${body}\n`);
      req.resume();
    };
    const raw = req.url ?? '';
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
      refuseHttp('', 0, 'MALFORMED', 400, 'expected an absolute URI (this is a proxy)');
      return;
    }
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      refuseHttp('', 0, 'MALFORMED', 400, 'unparseable URI');
      return;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    if (url.protocol !== 'http:') {
      refuseHttp(host, port, 'UNSUPPORTED', 400, `scheme ${url.protocol} is not forwarded; use CONNECT`);
      return;
    }
    if (!isAllowed(list, host, port)) {
      refuseHttp(host, port, 'NOT_ALLOWED', 403, `${url.host} is not in this world's network allowlist`);
      return;
    }
    allowed(host, port, 'HTTP');
    const headers = stripHopByHop(req.headers);
    headers['host'] = url.host;
    const upstreamReq = httpRequest({
      host,
      port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      agent: false,
      setHost: false,
    });
    const connectTimer = setTimeout(() => upstreamReq.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), connectTimeoutMs);
    connectTimer.unref();
    upstreamReq.on('socket', (s: Socket) => {
      trackUpstream(s);
      s.setTimeout(idleTimeoutMs, () => upstreamReq.destroy(Object.assign(new Error('idle timeout'), { code: 'ETIMEDOUT' })));
      s.once('connect', () => clearTimeout(connectTimer));
    });
    upstreamReq.on('error', (err: Error & { code?: string }) => {
      clearTimeout(connectTimer);
      counts.upstreamFailures++;
      log.info('upstream request failed', { host, port, err });
      if (!res.headersSent) {
        res.shouldKeepAlive = false;
        const timeout = err.code === 'ETIMEDOUT';
        res.writeHead(timeout ? 504 : 502, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
        res.end(`worldline proxy: cannot reach ${url.host}\n`);
      } else {
        res.destroy();
      }
    });
    upstreamReq.on('response', (up: IncomingMessage) => {
      clearTimeout(connectTimer);
      res.writeHead(up.statusCode ?? 502, up.statusMessage, stripHopByHop(up.headers));
      up.on('error', () => res.destroy());
      up.pipe(res);
    });
    req.on('error', () => upstreamReq.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
  });

  let listeningNow = false;
  const listening = new Promise<void>((resolve, reject) => {
    const onError = (err: Error & { syscall?: string }): void => {
      if (listeningNow) {
        log.error('proxy server error', { err });
        return;
      }
      // Node closes the handle itself only when it got as far as listen(); before that the fd is still ours.
      if (err.syscall !== 'listen') {
        try {
          closeSync(listenFd);
        } catch {
          // already closed
        }
      }
      closed = true;
      reject(err);
    };
    server.on('error', onError);
    server.once('listening', () => {
      listeningNow = true;
      resolve();
    });
  });
  listening.catch(() => undefined);
  server.listen({ fd: listenFd });

  let closing: Promise<void> | null = null;
  return {
    listening,
    allow: list.entries,
    stats: () => ({
      active: clients.size,
      upstreamActive: upstreams.size,
      accepted: counts.accepted,
      allowed: counts.allowed,
      refused: counts.refused,
      refusedByReason: { ...counts.refusedByReason },
      upstreamFailures: counts.upstreamFailures,
      bytesOut: counts.bytesOut,
      bytesIn: counts.bytesIn,
    }),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        closed = true;
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        for (const s of clients) s.destroy();
        for (const s of upstreams) s.destroy();
      });
      return closing;
    },
  };
}
