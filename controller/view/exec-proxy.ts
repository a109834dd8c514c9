// `kubectl worldline exec` through the aggregated API: the API server authenticates the user and proxies
// the upgrade request
//   POST /apis/view.worldline.dev/v1alpha1/namespaces/NS/worlds/NAME/exec?command=…&tty=…&stdin=…
//   Connection: Upgrade, Upgrade: worldline-exec.v1
// here; this server authorizes it by two access reviews — create on worlds/exec in view.worldline.dev
// (a permission apart from reading the World: what an exec runs becomes part of the candidate) and get on
// the World — then opens the same upgrade to the World's node-agent over the node link, naming the user,
// and joins the two connections. The frames (core/exec/exec-frames.ts) pass through untouched.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { EXEC_PROTOCOL } from '../../core/exec/exec-frames.js';
import { GROUP, VIEW_GROUP, VIEW_VERSION } from '../../crds/api-group.js';
import type { World } from '../../crds/index.js';
import { isNotFound } from '../../kube/api-error.js';
import { objectPath } from '../../kube/api-paths.js';
import type { KubeHttpClient } from '../../kube/http.js';
import { acceptUpgrade, asksUpgradeTo, refuseUpgrade } from '../../kube/http-upgrade.js';
import type { Logger } from '../../kube/logger.js';
import type { TlsMaterial } from '../../kube/tls-dir.js';
import { refs } from '../api-refs.js';
import { firstDenied } from './access-review.js';
import { authenticateFrontProxy, type RequestHeaderRules } from './front-proxy.js';
import { LinkUnavailable, nodeViewAddress, readRefusal, upgradeNodeAgent } from './node-link.js';

/** At most this many arguments in one exec's command. */
export const EXEC_MAX_ARGS = 256;

export interface ExecProxyOptions {
  /** The request-header rules (front-proxy.ts); their CA checks client certificates. */
  rules: RequestHeaderRules;
  /** The node link's TLS material (ca.crt, the controller's client certificate and key). */
  link: TlsMaterial;
  http: KubeHttpClient;
  /** The worldline namespace (where node-agents' heartbeat Leases are). */
  namespace: string;
  now: () => Date;
  logger: Logger;
}

const EXEC_PATH = new RegExp(`^/apis/${VIEW_GROUP.replace(/\./g, '\\.')}/${VIEW_VERSION}/namespaces/([^/]+)/worlds/([^/]+)/exec$`);

/** A Kubernetes Status answer on a raw connection (kubectl and our CLI print its message). */
function refuse(socket: Duplex, code: number, reason: string, message: string): void {
  refuseUpgrade(socket, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** The 'upgrade' listener of the view API's server. */
export function execUpgradeHandler(o: ExecProxyOptions): (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void> {
  const log = o.logger.child({ server: 'view-api', sub: 'exec' });
  return async (req, socket, head) => {
    socket.on('error', () => undefined);
    const who = authenticateFrontProxy(o.rules, socket as TLSSocket, req.headersDistinct);
    if ('refused' in who) return refuse(socket, 401, 'Unauthorized', `worldline view API: ${who.refused}; ask through the Kubernetes API server`);
    const url = new URL(req.url ?? '/', 'https://view');
    const m = EXEC_PATH.exec(url.pathname);
    if (!m) return refuse(socket, 404, 'NotFound', `no upgrade is served at ${url.pathname}`);
    if (req.method !== 'POST') return refuse(socket, 405, 'MethodNotAllowed', 'exec is a POST');
    if (!asksUpgradeTo(req.headers, EXEC_PROTOCOL)) return refuse(socket, 400, 'BadRequest', `exec needs Connection: Upgrade and Upgrade: ${EXEC_PROTOCOL}`);
    const [ns, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const command = url.searchParams.getAll('command');
    if (command.length === 0 || command[0] === '') return refuse(socket, 400, 'BadRequest', 'name the command to run: ?command=PROGRAM&command=ARG…');
    if (command.length > EXEC_MAX_ARGS) return refuse(socket, 400, 'BadRequest', `a command has at most ${EXEC_MAX_ARGS} arguments`);
    const user = who.user;
    const denied = await firstDenied(o.http, user, [
      { group: VIEW_GROUP, resource: 'worlds', subresource: 'exec', verb: 'create', namespace: ns, name },
      { group: GROUP, resource: 'worlds', verb: 'get', namespace: ns, name },
    ]);
    if (denied) {
      log.info('refused an exec', { user: user.username, world: `${ns}/${name}`, missing: denied.what });
      return refuse(socket, 403, 'Forbidden', `worlds.${VIEW_GROUP} "${name}/exec" is forbidden: User "${user.username}" cannot ${denied.what} for World ${ns}/${name}${denied.reason ? ` (${denied.reason})` : ''}`);
    }
    let world: World;
    try {
      world = await o.http.request<World>({ path: objectPath(refs.World, name, ns) });
    } catch (err) {
      if (isNotFound(err)) return refuse(socket, 404, 'NotFound', `worlds.worldline.dev "${name}" not found in namespace ${ns}`);
      return refuse(socket, 502, 'InternalError', (err as Error).message);
    }
    const node = world.status?.nodeName;
    if (!node) return refuse(socket, 409, 'Conflict', `World ${ns}/${name} is not bound to a node yet (phase ${world.status?.phase ?? 'Pending'})`);
    const query = new URLSearchParams({ uid: world.metadata.uid ?? '' });
    for (const a of command) query.append('command', a);
    query.set('tty', String(url.searchParams.get('tty') === 'true'));
    query.set('stdin', String(url.searchParams.get('stdin') === 'true'));
    let answer;
    try {
      const address = await nodeViewAddress(o.http, o.namespace, node, o.now());
      answer = await upgradeNodeAgent(o.link, address, `/v1/namespaces/${encodeURIComponent(ns)}/worlds/${encodeURIComponent(name)}/exec?${query.toString()}`, EXEC_PROTOCOL, { 'X-Worldline-User': user.username });
    } catch (err) {
      if (err instanceof LinkUnavailable) return refuse(socket, 503, 'ServiceUnavailable', `${err.reason}: ${err.message}`);
      log.warn('could not reach the node-agent', { world: `${ns}/${name}`, node, error: (err as Error).message });
      return refuse(socket, 502, 'InternalError', `NODE_AGENT_UNREACHABLE: node ${node}: ${(err as Error).message}`);
    }
    if ('refused' in answer) {
      const body = await readRefusal(answer.refused);
      const code = answer.refused.statusCode ?? 502;
      // The node-agent's reason leads the message (the Status reason field holds it too), as kubectl prints only the message.
      return refuse(socket, code, body.reason ?? 'InternalError', `${body.reason ?? 'REFUSED'}: node ${node}: ${body.message ?? 'the node-agent refused'}`);
    }
    const agent = answer.socket;
    if (socket.destroyed) {
      // The user left while the node-agent started the exec: closing its connection ends the command.
      agent.destroy();
      return;
    }
    log.info('an exec started', { user: user.username, world: `${ns}/${name}`, node });
    acceptUpgrade(socket, EXEC_PROTOCOL);
    if (answer.head.length > 0) socket.write(answer.head);
    if (head.length > 0) agent.write(head);
    agent.on('error', () => socket.destroy());
    socket.on('error', () => agent.destroy());
    socket.pipe(agent);
    agent.pipe(socket);
    socket.on('close', () => agent.destroy());
    agent.on('close', () => socket.end());
  };
}
