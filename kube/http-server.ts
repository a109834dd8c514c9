// The health and metrics endpoint: GET /healthz, /readyz (503 with a reason when not ready), /metrics.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { nullLogger, type Logger } from './logger.js';

export interface HttpServerOptions {
  /** Default 0.0.0.0 (probes and scrapes come from outside the pod). */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  registry: Registry;
  ready: () => boolean;
  /** Why the process is not ready (shown in the 503 body); default "not ready". */
  readyReason?: () => string;
  live?: () => boolean;
  logger?: Logger;
}

export async function startHttpServer(opts: HttpServerOptions): Promise<{ port: number; close(): Promise<void> }> {
  const log = (opts.logger ?? nullLogger).child({ server: 'http' });
  const app = Fastify({ logger: false });

  app.get('/healthz', async (_req, reply) => {
    const live = opts.live ? opts.live() : true;
    return reply.code(live ? 200 : 503).type('text/plain').send(live ? 'ok\n' : 'not live\n');
  });
  app.get('/readyz', async (_req, reply) => {
    if (opts.ready()) return reply.code(200).type('text/plain').send('ok\n');
    const reason = opts.readyReason?.() ?? 'not ready';
    return reply.code(503).type('text/plain').send(`${reason}\n`);
  });
  app.get('/metrics', async (_req, reply) => {
    const body = await opts.registry.metrics();
    return reply.code(200).header('Content-Type', opts.registry.contentType).send(body);
  });

  const port = await listenOn(app, opts.host ?? '0.0.0.0', opts.port);
  log.info('http server listening', { host: opts.host ?? '0.0.0.0', port });
  return {
    port,
    close: async () => {
      await app.close();
    },
  };
}

/** Starts `app` listening and returns the port it got (the one asked for, or the kernel's pick for 0). */
export async function listenOn(app: FastifyInstance, host: string, port: number): Promise<number> {
  await app.listen({ host, port });
  const addr = app.server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}
