// The plain-HTTP half of the Allowlist proxy: an absolute-URI request for an allowed http:// destination is
// forwarded with node:http, hop-by-hop headers removed both ways; anything else is refused by name.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isAllowed } from './allowlist.js';
import type { ProxyContext } from './proxy-context.js';
import { stripHopByHop, type RefusalReason } from './proxy-protocol.js';

export function handleRequest(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): void {
  const refuseHttp = (host: string, port: number, reason: RefusalReason, status: number, body: string): void => {
    ctx.refuse(host, port, reason, `${req.method ?? '?'} request`);
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
  if (!isAllowed(ctx.list, host, port)) {
    refuseHttp(host, port, 'NOT_ALLOWED', 403, `${url.host} is not in this world's network allowlist`);
    return;
  }
  ctx.allowed(host, port, 'HTTP');
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
  const connectTimer = setTimeout(() => upstreamReq.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), ctx.limits.connectTimeoutMs);
  connectTimer.unref();
  upstreamReq.on('socket', (s: Socket) => {
    ctx.trackUpstream(s);
    s.setTimeout(ctx.limits.idleTimeoutMs, () => upstreamReq.destroy(Object.assign(new Error('idle timeout'), { code: 'ETIMEDOUT' })));
    s.once('connect', () => clearTimeout(connectTimer));
  });
  upstreamReq.on('error', (err: Error & { code?: string }) => {
    clearTimeout(connectTimer);
    ctx.counts.upstreamFailures++;
    ctx.log.info('upstream request failed', { host, port, err });
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
}
