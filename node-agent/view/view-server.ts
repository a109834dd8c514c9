// The node-agent's view server: a World's output log and its candidate's diff, served over TLS to the
// controller alone. Both ends hold certificates of the node link's own CA; a client is served only when
// its certificate chains to that CA and names the controller (a node-agent's own certificate, from the
// same CA, names the node-agent and is refused). Users never reach this port: they ask the API server,
// which authenticates them, and the controller's aggregated API authorizes each request before it asks
// here (docs/architecture.md, "Reading a World").
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Readable, type Duplex } from 'node:stream';
import { EXEC_PROTOCOL } from '../../core/exec/exec-frames.js';
import { acceptUpgrade, asksUpgradeTo, refuseUpgrade } from '../../kube/http-upgrade.js';
import { ExecRefused, type WorldExecs } from './world-exec.js';
import { listenOn } from '../../kube/http-server.js';
import Fastify, { type FastifyReply } from 'fastify';
import { Refusal } from '../../core/errors.js';
import type { World } from '../../crds/index.js';
import type { Informer } from '../../kube/informer.js';
import type { Logger } from '../../kube/logger.js';
import { commonName, LINK_CLIENT_NAME, type TlsMaterial } from '../../kube/tls-dir.js';
import { candidateDiff } from '../content/world-diff.js';
import type { DiffFormat } from '../content/candidate-diff.js';
import { worldPaths } from '../sandbox/run-paths.js';
import type { Store } from '../store/open-store.js';
import { logExists, readWorldLog } from './world-log.js';

export interface ViewServerOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  worlds: Informer<World>;
  store: Pick<Store, 'layout' | 'db'>;
  /** Runs `kubectl worldline exec` sessions. */
  execs: WorldExecs;
  logger: Logger;
}

/** Phases in which a World's run may still write to its log. */
const RUNNING_PHASES = new Set(['Pending', 'Admitted', 'Running']);
const FORMATS: readonly DiffFormat[] = ['patch', 'stat', 'name-only'];

function refuse(reply: FastifyReply, code: number, reason: string, message: string): FastifyReply {
  return reply.code(code).type('application/json').send({ reason, message });
}

export async function startViewServer(o: ViewServerOptions): Promise<{ port: number; close(): Promise<void> }> {
  const log = o.logger.child({ server: 'view' });
  const app = Fastify({
    logger: false,
    https: { key: o.tls.key, cert: o.tls.cert, ca: o.tls.ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' },
  });

  /** Why this connection may not be served (LINK_CLIENT_REFUSED, NODE_AGENT_STARTING), or undefined. */
  const refusal = (socket: TLSSocket): { code: number; reason: string; message: string } | undefined => {
    const name = commonName(socket.getPeerCertificate());
    if (!socket.authorized || name !== LINK_CLIENT_NAME) {
      log.warn('refused a view client', { client: name ?? '(none)', authorized: socket.authorized });
      return { code: 403, reason: 'LINK_CLIENT_REFUSED', message: `only ${LINK_CLIENT_NAME} may read this node's Worlds or start execs on it` };
    }
    // Until this agent's World cache is filled, "not on this node" would be a guess: say it is starting.
    if (!o.worlds.hasSynced()) return { code: 503, reason: 'NODE_AGENT_STARTING', message: 'the node-agent has not read its Worlds yet; try again' };
    return undefined;
  };

  app.addHook('onRequest', async (req, reply) => {
    const r = refusal(req.raw.socket as TLSSocket);
    return r ? refuse(reply, r.code, r.reason, r.message) : undefined;
  });

  /** The World the controller named, if it is bound to this node and still the same object (uid). */
  const worldOf = (ns: string, name: string, uid: string | undefined): World | undefined => {
    const w = o.worlds.get(`${ns}/${name}`);
    return w && (uid === undefined || w.metadata.uid === uid) ? w : undefined;
  };

  app.get<{ Params: { ns: string; name: string }; Querystring: { uid?: string; format?: string } }>('/v1/namespaces/:ns/worlds/:name/diff', async (req, reply) => {
    const w = worldOf(req.params.ns, req.params.name, req.query.uid);
    if (!w) return refuse(reply, 404, 'WORLD_NOT_ON_NODE', `World ${req.params.ns}/${req.params.name} is not bound to this node`);
    const format = (req.query.format ?? 'patch') as DiffFormat;
    if (!FORMATS.includes(format)) return refuse(reply, 400, 'FORMAT_INVALID', `format must be one of ${FORMATS.join(', ')}`);
    const digest = w.status?.candidate?.digest;
    if (!digest) return refuse(reply, 409, 'NOT_CAPTURED', `World ${req.params.ns}/${req.params.name} has no captured candidate yet (phase ${w.status?.phase ?? 'unknown'})`);
    try {
      const diff = candidateDiff(o.store, digest, format);
      return reply.code(200).type('text/plain; charset=utf-8').header('X-Worldline-Truncated', String(diff.truncated)).send(diff.text);
    } catch (err) {
      if (err instanceof Refusal) return refuse(reply, err.code === 'CANDIDATE_MISSING' ? 410 : 422, err.code, err.message);
      log.error('diff failed', { world: `${req.params.ns}/${req.params.name}`, error: (err as Error).message });
      return refuse(reply, 500, 'DIFF_FAILED', (err as Error).message);
    }
  });

  app.get<{ Params: { ns: string; name: string }; Querystring: { uid?: string; follow?: string } }>('/v1/namespaces/:ns/worlds/:name/log', async (req, reply) => {
    const key = `${req.params.ns}/${req.params.name}`;
    const w = worldOf(req.params.ns, req.params.name, req.query.uid);
    const uid = w?.metadata.uid;
    if (!w || !uid) return refuse(reply, 404, 'WORLD_NOT_ON_NODE', `World ${key} is not bound to this node`);
    const follow = req.query.follow === 'true';
    const running = (): boolean => {
      const now = o.worlds.get(key);
      return now?.metadata.uid === uid && RUNNING_PHASES.has(now.status?.phase ?? 'Pending');
    };
    const path = worldPaths(o.store.layout.worlds, uid).output;
    if (!logExists(path) && !(follow && running())) return refuse(reply, 404, 'LOG_MISSING', `World ${key} has no output log on this node (phase ${w.status?.phase ?? 'unknown'})`);
    const abort = new AbortController();
    // The response's close (not the request's, which closes once its empty body is read) means the reader left.
    reply.raw.on('close', () => abort.abort());
    return reply.code(200).type('text/plain; charset=utf-8').send(Readable.from(readWorldLog(path, { follow, running, signal: abort.signal })));
  });

  // exec arrives as an upgrade request, which Node hands to this event, not to the router:
  //   POST /v1/namespaces/NS/worlds/NAME/exec?uid=…&command=…&command=…&tty=…&stdin=…
  //   Connection: Upgrade, Upgrade: worldline-exec.v1, X-Worldline-User: the authenticated user
  const EXEC_PATH = /^\/v1\/namespaces\/([^/]+)\/worlds\/([^/]+)\/exec$/;
  const onUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    socket.on('error', () => undefined);
    const refused = refusal(socket as TLSSocket);
    if (refused) return refuseUpgrade(socket, refused.code, { reason: refused.reason, message: refused.message });
    const url = new URL(req.url ?? '/', 'https://node-agent');
    const m = EXEC_PATH.exec(url.pathname);
    if (!m || req.method !== 'POST') return refuseUpgrade(socket, 404, { reason: 'UPGRADE_NOT_SERVED', message: `no upgrade is served at ${req.method ?? ''} ${url.pathname}` });
    if (!asksUpgradeTo(req.headers, EXEC_PROTOCOL)) return refuseUpgrade(socket, 400, { reason: 'PROTOCOL_INVALID', message: `exec needs Upgrade: ${EXEC_PROTOCOL}` });
    const [ns, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const w = worldOf(ns, name, url.searchParams.get('uid') ?? undefined);
    if (!w) return refuseUpgrade(socket, 404, { reason: 'WORLD_NOT_ON_NODE', message: `World ${ns}/${name} is not bound to this node` });
    const argv = url.searchParams.getAll('command');
    const user = req.headers['x-worldline-user'];
    if (argv.length === 0 || argv[0] === '') return refuseUpgrade(socket, 400, { reason: 'COMMAND_INVALID', message: 'name a command to run' });
    if (typeof user !== 'string' || user === '') return refuseUpgrade(socket, 400, { reason: 'USER_MISSING', message: 'an exec names the user it runs for' });
    try {
      const session = await o.execs.open(w, { argv, tty: url.searchParams.get('tty') === 'true', stdin: url.searchParams.get('stdin') === 'true', user });
      acceptUpgrade(socket, EXEC_PROTOCOL);
      if (head.length > 0) socket.unshift(head);
      session.attach(socket);
    } catch (err) {
      if (err instanceof ExecRefused) return refuseUpgrade(socket, err.httpStatus, { reason: err.code, message: err.message });
      log.error('exec failed', { world: `${ns}/${name}`, error: (err as Error).message });
      return refuseUpgrade(socket, 500, { reason: 'EXEC_FAILED', message: (err as Error).message });
    }
  };
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void onUpgrade(req, socket, head));

  const port = await listenOn(app, o.host, o.port);
  log.info('view server listening', { host: o.host, port });
  return { port, close: async () => void (await app.close()) };
}
