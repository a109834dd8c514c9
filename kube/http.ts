// Minimal apiserver client over node:http(s) using a cluster configuration's (KubeAccess) TLS material
// and credentials: JSON requests with typed ApiError, and raw streams for watches. One keep-alive agent
// per configuration.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { KubeAccess } from './kube-access.js';
import { ApiError } from './api-error.js';

export type Query = Record<string, string | number | boolean | undefined>;

export interface KubeRequest {
  method?: string;
  path: string;
  query?: Query;
  body?: unknown;
  /** Defaults to application/json when a body is given. */
  contentType?: string;
  signal?: AbortSignal;
  /** Socket inactivity timeout; default 30s. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export class KubeHttpClient {
  private agent: http.Agent | undefined;
  private agentKey = '';

  constructor(private readonly kc: KubeAccess) {}

  get server(): string {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return cluster.server;
  }

  /** Sends a request and parses the JSON response; non-2xx becomes ApiError. */
  async request<T>(req: KubeRequest): Promise<T> {
    const res = await this.send(req);
    const text = await readAll(res, req.signal);
    const status = res.statusCode ?? 0;
    const parsed = parseJson(text);
    if (status < 200 || status >= 300) {
      throw ApiError.fromStatus(status, parsed, `${req.method ?? 'GET'} ${req.path}: HTTP ${status} ${text.slice(0, 200)}`);
    }
    return parsed as T;
  }

  /** Opens a streaming response (watch). The caller consumes it; abort via req.signal. */
  async stream(req: KubeRequest): Promise<http.IncomingMessage> {
    const res = await this.send(req);
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      const text = await readAll(res, req.signal);
      throw ApiError.fromStatus(status, parseJson(text), `${req.method ?? 'GET'} ${req.path}: HTTP ${status}`);
    }
    return res;
  }

  /**
   * Sends an upgrade request for `protocol` (a POST unless req.method says otherwise) on a connection of
   * its own; resolves with the switched connection, or rejects with the ApiError of the answer.
   */
  async upgrade(req: KubeRequest, protocol: string): Promise<{ socket: Duplex; head: Buffer }> {
    const { requestOpts, payload, isHttps, tls } = await this.requestOptions({ method: 'POST', ...req });
    // Not from the keep-alive pool: the switched connection is this exec's alone.
    const opts: https.RequestOptions = { ...requestOpts, ...tls, agent: false, headers: { ...requestOpts.headers, Connection: 'Upgrade', Upgrade: protocol } };
    return new Promise((resolve, reject) => {
      const r = (isHttps ? https : http).request(opts);
      r.setTimeout(req.timeoutMs ?? DEFAULT_TIMEOUT_MS, () => r.destroy(new Error(`${opts.method} ${req.path}: no answer for ${req.timeoutMs ?? DEFAULT_TIMEOUT_MS}ms`)));
      r.on('upgrade', (_res, socket, head) => {
        r.setTimeout(0);
        socket.setTimeout(0);
        resolve({ socket, head });
      });
      r.on('response', (res) => {
        readAll(res, req.signal).then(
          (text) => reject(ApiError.fromStatus(res.statusCode ?? 0, parseJson(text), `${opts.method} ${req.path}: HTTP ${res.statusCode ?? 0} ${text.slice(0, 200)}`)),
          reject,
        );
      });
      r.on('error', reject);
      r.end(payload);
    });
  }

  private async send(req: KubeRequest): Promise<http.IncomingMessage> {
    const { requestOpts, payload, isHttps } = await this.requestOptions(req);
    return new Promise((resolve, reject) => {
      const r = (isHttps ? https : http).request(requestOpts, resolve);
      r.setTimeout(req.timeoutMs ?? DEFAULT_TIMEOUT_MS, () => {
        r.destroy(new Error(`${requestOpts.method} ${req.path}: no data for ${req.timeoutMs ?? DEFAULT_TIMEOUT_MS}ms`));
      });
      r.on('error', reject);
      r.end(payload);
    });
  }

  private async requestOptions(req: KubeRequest): Promise<{ requestOpts: https.RequestOptions; payload: Buffer | undefined; isHttps: boolean; tls: https.RequestOptions }> {
    req.signal?.throwIfAborted();
    const url = new URL(this.server);
    const basePath = url.pathname.replace(/\/+$/, '');
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) query.set(k, String(v));
    const qs = query.toString();

    const opts: https.RequestOptions = { headers: {} };
    await this.kc.applyToHTTPSOptions(opts);
    const headers: http.OutgoingHttpHeaders = { ...(opts.headers as http.OutgoingHttpHeaders | undefined), Accept: 'application/json' };
    if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    let payload: Buffer | undefined;
    if (req.body !== undefined) {
      payload = Buffer.from(typeof req.body === 'string' ? req.body : JSON.stringify(req.body));
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const isHttps = url.protocol === 'https:';
    const requestOpts: https.RequestOptions = {
      method: req.method ?? 'GET',
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (isHttps ? 443 : 80),
      path: `${basePath}${req.path}${qs ? `?${qs}` : ''}`,
      headers,
      agent: this.agentFor(isHttps, opts),
      signal: req.signal,
    };
    const tls: https.RequestOptions = { ca: opts.ca, cert: opts.cert, key: opts.key, rejectUnauthorized: opts.rejectUnauthorized, servername: opts.servername };
    return { requestOpts, payload, isHttps, tls };
  }

  /** Reuses one keep-alive agent until the TLS material changes (e.g. rotated client certificate). */
  private agentFor(isHttps: boolean, o: https.RequestOptions): http.Agent {
    const key = [isHttps, o.ca, o.cert, o.key, o.rejectUnauthorized, o.servername].map(fingerprint).join('\0');
    if (!this.agent || key !== this.agentKey) {
      this.agent?.destroy();
      this.agent = isHttps
        ? new https.Agent({
            keepAlive: true,
            ca: o.ca,
            cert: o.cert,
            key: o.key,
            rejectUnauthorized: o.rejectUnauthorized,
            servername: o.servername,
          })
        : new http.Agent({ keepAlive: true });
      this.agentKey = key;
    }
    return this.agent;
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

function fingerprint(v: unknown): string {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (Array.isArray(v)) return v.map(fingerprint).join(',');
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  return String(v);
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function readAll(res: http.IncomingMessage, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.on('aborted', () => reject(signal?.reason instanceof Error ? signal.reason : new Error('response aborted')));
  });
}

const clients = new WeakMap<KubeAccess, KubeHttpClient>();

/** One shared client (and connection pool) per KubeAccess object. */
export function httpClientFor(kc: KubeAccess): KubeHttpClient {
  let c = clients.get(kc);
  if (!c) {
    c = new KubeHttpClient(kc);
    clients.set(kc, c);
  }
  return c;
}
