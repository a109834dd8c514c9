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
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { DropArgument, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { nullLogger, type Logger } from '../../kube/logger.js';
import { parseAllowlist, type Allowlist } from './allowlist.js';
import { createProxyContext, type ProxyContext } from './proxy-context.js';
import { handleRequest } from './proxy-forward.js';
import { plainResponse, positive, type AllowedConnection, type NetworkRefusal, type RefusalReason } from './proxy-protocol.js';
import { handleConnect } from './proxy-tunnel.js';

export type { AllowedConnection, NetworkRefusal, RefusalReason } from './proxy-protocol.js';

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

/** Connection bookkeeping and the refusals the server itself raises: connection limit, parse errors, Upgrade. */
function wireServerEvents(server: Server, ctx: ProxyContext, isClosed: () => boolean): void {
  const { log, counts, clients, refuse, endWith } = ctx;
  server.on('connection', (s: Socket) => {
    counts.accepted++;
    clients.add(s);
    s.on('close', () => clients.delete(s));
    s.on('error', (err) => log.debug('client socket error', { err }));
    if (isClosed()) s.destroy();
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
  const ctx = createProxyContext(list, { connectTimeoutMs, idleTimeoutMs, headersTimeoutMs, maxConnections, maxHeaderSize }, opts.logger ?? nullLogger, opts.onRefusal, opts.onAllowed);
  const { log, counts, clients, upstreams } = ctx;
  let closed = false;

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

  wireServerEvents(server, ctx, () => closed);
  server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => handleConnect(ctx, req, socket, head));
  server.on('request', (req, res) => handleRequest(ctx, req, res));

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
