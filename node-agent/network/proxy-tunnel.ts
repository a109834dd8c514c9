// The CONNECT half of the Allowlist proxy: a request for an allowed host:port is answered 200 and then
// relayed both ways, untouched; anything else is refused (400 malformed, 403 not allowed, 502/504 when the
// destination cannot be reached).
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isAllowed } from './allowlist.js';
import type { ProxyContext } from './proxy-context.js';
import { plainResponse, splitAuthority } from './proxy-protocol.js';

export function handleConnect(ctx: ProxyContext, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const client = socket as Socket;
  client.on('error', (err) => ctx.log.debug('tunnel client error', { err }));
  const target = splitAuthority(req.url ?? '');
  if (target === null) {
    ctx.refuse('', 0, 'MALFORMED', `CONNECT target ${JSON.stringify((req.url ?? '').slice(0, 100))} is not host:port`);
    ctx.endWith(client, plainResponse(400, 'Bad Request', 'worldline proxy: CONNECT needs host:port'));
    return;
  }
  if (!isAllowed(ctx.list, target.host, target.port)) {
    ctx.refuse(target.host, target.port, 'NOT_ALLOWED', 'CONNECT');
    ctx.endWith(client, plainResponse(403, 'Forbidden', `worldline proxy: ${target.host}:${target.port} is not in this world's network allowlist`));
    return;
  }
  ctx.allowed(target.host.toLowerCase(), target.port, 'CONNECT');
  const upstream = netConnect({ host: target.host.replace(/^\[|\]$/g, '').toLowerCase(), port: target.port });
  ctx.trackUpstream(upstream);
  let established = false;
  const connectTimer = setTimeout(() => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), ctx.limits.connectTimeoutMs);
  connectTimer.unref();
  upstream.on('error', (err: Error & { code?: string }) => {
    clearTimeout(connectTimer);
    if (!established) {
      ctx.counts.upstreamFailures++;
      ctx.log.info('upstream connect failed', { host: target.host, port: target.port, err });
      const timeout = err.code === 'ETIMEDOUT';
      ctx.endWith(client, plainResponse(timeout ? 504 : 502, timeout ? 'Gateway Timeout' : 'Bad Gateway', `worldline proxy: cannot reach ${target.host}:${target.port}`));
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
    upstream.setTimeout(ctx.limits.idleTimeoutMs, () => upstream.destroy());
    client.setTimeout(ctx.limits.idleTimeoutMs, () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('close', () => client.destroy());
  client.on('close', () => upstream.destroy());
}
