// The aggregated API view.worldline.dev/v1alpha1: a World's output log and its candidate's diff, read
// through the API server as subresources of worlds:
//   GET /apis/view.worldline.dev/v1alpha1/namespaces/NS/worlds/NAME/log[?follow=true]
//   GET /apis/view.worldline.dev/v1alpha1/namespaces/NS/worlds/NAME/diff[?format=patch|stat|name-only]
// Every request is authenticated by the API server (front proxy, front-proxy.ts) and authorized here by
// two access reviews: the subresource itself (get worlds/log or worlds/diff in view.worldline.dev) and
// get on the World in worldline.dev — a user who may not read a World reads nothing of it. The exec
// subresource is an upgrade, served by exec-proxy.ts. The bytes
// stay on the node; this server asks the node-agent for them (node-link.ts) and streams them through.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { TLSSocket } from 'node:tls';
import { listenOn } from '../../kube/http-server.js';
import Fastify, { type FastifyReply } from 'fastify';
import { isNotFound } from '../../kube/api-error.js';
import type { World } from '../../crds/index.js';
import { refs } from '../api-refs.js';
import { GROUP, VIEW_GROUP, VIEW_VERSION } from '../../crds/api-group.js';
import { objectPath } from '../../kube/api-paths.js';
import { firstDenied } from './access-review.js';
import { authenticateFrontProxy, type UserInfo } from './front-proxy.js';
import { askNodeAgent, LinkUnavailable, nodeViewAddress, readRefusal } from './node-link.js';
import { execUpgradeHandler, type ExecProxyOptions } from './exec-proxy.js';

const GROUP_VERSION = `${VIEW_GROUP}/${VIEW_VERSION}`;
const SUBRESOURCES = ['log', 'diff'] as const;
type Subresource = (typeof SUBRESOURCES)[number];
const DIFF_FORMATS = ['patch', 'stat', 'name-only'];

/** The exec proxy's options (the request-header rules, the node link, the API client…) and where to serve. */
export interface ViewApiOptions extends ExecProxyOptions {
  host: string;
  port: number;
  /** The serving certificate and key (the APIService's caBundle vouches for them). */
  serving: { cert: Buffer; key: Buffer };
}

/** A Kubernetes Status object, which kubectl prints as the error. */
function status(reply: FastifyReply, code: number, reason: string, message: string): FastifyReply {
  return reply.code(code).type('application/json').send({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

const groupDiscovery = {
  name: VIEW_GROUP,
  versions: [{ groupVersion: GROUP_VERSION, version: VIEW_VERSION }],
  preferredVersion: { groupVersion: GROUP_VERSION, version: VIEW_VERSION },
};

const resourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: GROUP_VERSION,
  resources: [
    ...SUBRESOURCES.map((s) => ({ name: `worlds/${s}`, singularName: '', namespaced: true, kind: s === 'log' ? 'WorldLog' : 'WorldDiff', verbs: ['get'] })),
    // An upgrade (exec-proxy.ts): POST with Connection: Upgrade, authorized as create on worlds/exec.
    { name: 'worlds/exec', singularName: '', namespaced: true, kind: 'WorldExec', verbs: ['create'] },
  ],
};

export async function startViewApi(o: ViewApiOptions): Promise<{ port: number; close(): Promise<void> }> {
  const log = o.logger.child({ server: 'view-api' });
  const app = Fastify({
    logger: false,
    // `ca` is the request-header CA: a client certificate is "authorized" only when it chains to it. A
    // client without one still connects (health checks), and is refused as anonymous.
    https: { cert: o.serving.cert, key: o.serving.key, ca: o.rules.clientCa, requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' },
  });

  app.addHook('onRequest', async (req, reply) => {
    const who = authenticateFrontProxy(o.rules, req.raw.socket as TLSSocket, req.raw.headersDistinct);
    if ('refused' in who) return status(reply, 401, 'Unauthorized', `worldline view API: ${who.refused}; ask through the Kubernetes API server`);
    (req as unknown as { user: typeof who.user }).user = who.user;
    return undefined;
  });

  app.get('/apis', (_req, reply) => reply.send({ kind: 'APIGroupList', apiVersion: 'v1', groups: [groupDiscovery] }));
  app.get(`/apis/${VIEW_GROUP}`, (_req, reply) => reply.send({ kind: 'APIGroup', apiVersion: 'v1', ...groupDiscovery }));
  app.get(`/apis/${GROUP_VERSION}`, (_req, reply) => reply.send(resourceList));

  app.get<{ Params: { ns: string; name: string; sub: string }; Querystring: Record<string, string | undefined> }>(
    `/apis/${GROUP_VERSION}/namespaces/:ns/worlds/:name/:sub`,
    async (req, reply) => {
      const { ns, name } = req.params;
      const sub = req.params.sub as Subresource;
      if (!SUBRESOURCES.includes(sub)) return status(reply, 404, 'NotFound', `worlds have no subresource "${req.params.sub}" in ${GROUP_VERSION} (${SUBRESOURCES.join(', ')})`);
      const user = (req as unknown as { user: UserInfo }).user;
      // Both must allow: the subresource (RBAC on view.worldline.dev) and reading the World itself.
      const denied = await firstDenied(o.http, user, [
        { group: VIEW_GROUP, resource: 'worlds', subresource: sub, verb: 'get', namespace: ns, name },
        { group: GROUP, resource: 'worlds', verb: 'get', namespace: ns, name },
      ]);
      if (denied) {
        log.info('refused a view request', { user: user.username, world: `${ns}/${name}`, sub, missing: denied.what });
        return status(reply, 403, 'Forbidden', `worlds.${VIEW_GROUP} "${name}/${sub}" is forbidden: User "${user.username}" cannot ${denied.what} for World ${ns}/${name}${denied.reason ? ` (${denied.reason})` : ''}`);
      }
      const query = new URLSearchParams();
      if (sub === 'diff') {
        const format = req.query.format ?? 'patch';
        if (!DIFF_FORMATS.includes(format)) return status(reply, 400, 'BadRequest', `format must be one of ${DIFF_FORMATS.join(', ')}`);
        query.set('format', format);
      }
      const follow = sub === 'log' && req.query.follow === 'true';
      if (follow) query.set('follow', 'true');
      let world: World;
      try {
        world = await o.http.request<World>({ path: objectPath(refs.World, name, ns) });
      } catch (err) {
        if (isNotFound(err)) return status(reply, 404, 'NotFound', `worlds.worldline.dev "${name}" not found in namespace ${ns}`);
        throw err;
      }
      const node = world.status?.nodeName;
      if (!node) return status(reply, 409, 'Conflict', `World ${ns}/${name} is not bound to a node yet (phase ${world.status?.phase ?? 'Pending'})`);
      query.set('uid', world.metadata.uid ?? '');
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      try {
        const address = await nodeViewAddress(o.http, o.namespace, node, o.now());
        const res = await askNodeAgent(o.link, address, `/v1/namespaces/${encodeURIComponent(ns)}/worlds/${encodeURIComponent(name)}/${sub}?${query.toString()}`, { signal: abort.signal, streaming: follow });
        if ((res.statusCode ?? 500) >= 400) {
          const body = await readRefusal(res);
          return status(reply, res.statusCode ?? 502, body.reason ?? 'InternalError', `node ${node}: ${body.message ?? 'the node-agent refused'}`);
        }
        reply.hijack();
        reply.raw.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', ...(res.headers['x-worldline-truncated'] ? { 'X-Worldline-Truncated': String(res.headers['x-worldline-truncated']) } : {}) });
        await pipeline(res, reply.raw).catch((err: Error) => {
          if (!abort.signal.aborted) log.warn('a view stream ended early', { world: `${ns}/${name}`, sub, error: err.message });
        });
        return reply;
      } catch (err) {
        if (err instanceof LinkUnavailable) return status(reply, 503, 'ServiceUnavailable', `${err.reason}: ${err.message}`);
        log.warn('could not reach the node-agent', { world: `${ns}/${name}`, node, error: (err as Error).message });
        return status(reply, 502, 'InternalError', `NODE_AGENT_UNREACHABLE: node ${node}: ${(err as Error).message}`);
      }
    },
  );

  // exec arrives as an upgrade, which Node hands to this event rather than to the router.
  const onExec = execUpgradeHandler(o);
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void onExec(req, socket, head));

  const port = await listenOn(app, o.host, o.port);
  log.info('view API listening', { host: o.host, port, group: GROUP_VERSION });
  return { port, close: async () => void (await app.close()) };
}
