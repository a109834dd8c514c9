// The controller's end of the node link: finds where a node's agent serves Worlds (the address its live
// heartbeat Lease advertises) and asks it over TLS, presenting the controller's link certificate and
// accepting only a server certificate of the link CA that names a node-agent. The agent's answer is
// streamed back as it comes (a followed log has no end until its run does).
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { PeerCertificate } from 'node:tls';
import { isNotFound } from '../../kube/api-error.js';
import { objectPath } from '../../kube/api-paths.js';
import type { KubeHttpClient } from '../../kube/http.js';
import { leasesRef } from '../../kube/resource-ref.js';
import { heartbeatLeaseName, VIEW_ADDRESS_ANNOTATION } from '../../crds/labels.js';
import { splitHostPort, type HostPort } from '../../kube/host-port.js';
import { commonName, LINK_SERVER_NAME, type TlsMaterial } from '../../kube/tls-dir.js';
import { leaseLive, type LeaseObj } from '../caches.js';

/** Why a node-agent cannot be asked, named. */
export class LinkUnavailable extends Error {
  constructor(
    readonly reason: 'NODE_AGENT_UNAVAILABLE' | 'VIEW_NOT_SERVED',
    message: string,
  ) {
    super(message);
  }
}

/** The node-agent's view address for `nodeName`, from its heartbeat Lease (which must be live). */
export async function nodeViewAddress(http: KubeHttpClient, namespace: string, nodeName: string, now: Date): Promise<HostPort> {
  let lease: LeaseObj;
  try {
    lease = await http.request<LeaseObj>({ path: objectPath(leasesRef, heartbeatLeaseName(nodeName), namespace) });
  } catch (err) {
    if (isNotFound(err)) throw new LinkUnavailable('NODE_AGENT_UNAVAILABLE', `no node-agent serves node ${nodeName} (no heartbeat Lease)`);
    throw err;
  }
  if (!leaseLive(lease, now)) throw new LinkUnavailable('NODE_AGENT_UNAVAILABLE', `the node-agent of node ${nodeName} has not renewed its heartbeat`);
  const address = lease.metadata?.annotations?.[VIEW_ADDRESS_ANNOTATION];
  const hp = address === undefined ? undefined : splitHostPort(address);
  const port = Number(hp?.port);
  if (!hp || !(port >= 1 && port <= 65535)) throw new LinkUnavailable('VIEW_NOT_SERVED', `the node-agent of node ${nodeName} serves no view (it was started without --link-tls-dir)`);
  return { host: hp.host, port };
}

/** TLS options of a request to a node-agent: the controller's link certificate, the agent known by its certificate's name. */
function linkOptions(tls: TlsMaterial): https.RequestOptions {
  return {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    minVersion: 'TLSv1.3',
    // The agent is known by its certificate's name under the link CA, not by an address that changes with its pod.
    checkServerIdentity: (_host: string, cert: PeerCertificate) =>
      commonName(cert) === LINK_SERVER_NAME ? undefined : new Error(`the node-agent's certificate names "${commonName(cert) ?? ''}", not ${LINK_SERVER_NAME}`),
  };
}

/** What a node-agent answered an upgrade request: the switched connection, or its refusal. */
export type UpgradeAnswer = { socket: Duplex; head: Buffer } | { refused: IncomingMessage };

/** POSTs an upgrade request for `protocol` to a node-agent's view server, with `headers`. */
export function upgradeNodeAgent(tls: TlsMaterial, address: HostPort, path: string, protocol: string, headers: Record<string, string>): Promise<UpgradeAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request({ ...linkOptions(tls), host: address.host, port: address.port, path, method: 'POST', headers: { ...headers, Connection: 'Upgrade', Upgrade: protocol } });
    const head = setTimeout(() => req.destroy(new Error('the node-agent did not answer within 30 s')), 30_000);
    req.on('upgrade', (_res, socket, rest) => {
      clearTimeout(head);
      resolve({ socket, head: rest });
    });
    req.on('response', (res) => {
      clearTimeout(head);
      resolve({ refused: res });
    });
    req.on('error', (err) => {
      clearTimeout(head);
      reject(err);
    });
    req.end();
  });
}

/** GETs `path` from a node-agent's view server; resolves with the response head (the body streams). */
export function askNodeAgent(tls: TlsMaterial, address: HostPort, path: string, o: { signal: AbortSignal; streaming: boolean }): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = https.request({ ...linkOptions(tls), host: address.host, port: address.port, path, method: 'GET', signal: o.signal });
    // A followed log may be quiet for as long as its run is: only the answer's head has a deadline.
    const head = setTimeout(() => req.destroy(new Error('the node-agent did not answer within 30 s')), 30_000);
    req.on('response', (res) => {
      clearTimeout(head);
      if (!o.streaming) res.setTimeout(30_000, () => res.destroy(new Error('the node-agent stopped answering for 30 s')));
      resolve(res);
    });
    req.on('error', (err) => {
      clearTimeout(head);
      reject(err);
    });
    req.end();
  });
}

/** A node-agent's refusal: its JSON body ({reason, message}) read to at most 64 KiB, or its text as the message. */
export async function readRefusal(res: IncomingMessage, limit = 64 * 1024): Promise<{ reason?: string; message?: string }> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of res) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    parts.push(b);
    n += b.length;
    if (n >= limit) break;
  }
  const text = Buffer.concat(parts).toString('utf8').slice(0, limit);
  try {
    return JSON.parse(text) as { reason?: string; message?: string };
  } catch {
    return { message: text };
  }
}
