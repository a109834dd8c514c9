// A direct HTTPS client for the test API server (admin client certificate, keep-alive), so tens of
// thousands of creates, updates, deletes and lists go straight to kube-apiserver without a kubectl process
// each. Creates and updates ask for strict field validation, so an unknown field is refused, not dropped.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import type { ControlPlane } from '../../scripts/controlplane/harness.js';
import { NAMESPACED, PLURAL, type FuzzKind } from './crd-schema.js';
import { NAMESPACE } from './valid-objects.js';

export interface ApiResponse {
  status: number;
  body: Record<string, any>;
}

export class ApiClient {
  private readonly agent: Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(cp: ControlPlane, maxSockets = 16) {
    const u = new URL(cp.server);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new Agent({ keepAlive: true, maxSockets, ca: readFileSync(cp.tls.caFile), cert: readFileSync(cp.tls.adminCertFile), key: readFileSync(cp.tls.adminKeyFile) });
  }

  collection(kind: FuzzKind): string {
    return `/apis/worldline.dev/v1alpha1/${NAMESPACED[kind] ? `namespaces/${NAMESPACE}/` : ''}${PLURAL[kind]}`;
  }

  call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<ApiResponse> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request({ host: this.host, port: this.port, method, path, agent: this.agent, headers: { accept: 'application/json', ...(data ? { 'content-type': contentType, 'content-length': data.length } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: text === '' ? {} : (JSON.parse(text) as Record<string, any>) });
          } catch {
            resolve({ status: res.statusCode ?? 0, body: { message: text } });
          }
        });
        res.on('error', reject);
      });
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer within 60 s`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  create(kind: FuzzKind, obj: unknown): Promise<ApiResponse> {
    return this.call('POST', `${this.collection(kind)}?fieldValidation=Strict`, obj);
  }

  update(kind: FuzzKind, name: string, obj: unknown): Promise<ApiResponse> {
    return this.call('PUT', `${this.collection(kind)}/${encodeURIComponent(name)}?fieldValidation=Strict`, obj);
  }

  delete(kind: FuzzKind, name: string): Promise<ApiResponse> {
    return this.call('DELETE', `${this.collection(kind)}/${encodeURIComponent(name)}`);
  }

  get(kind: FuzzKind, name: string): Promise<ApiResponse> {
    return this.call('GET', `${this.collection(kind)}/${encodeURIComponent(name)}`);
  }

  /** Every object of the kind in the fuzz namespace (or cluster-wide), paging through the list. */
  async list(kind: FuzzKind): Promise<Record<string, any>[]> {
    const out: Record<string, any>[] = [];
    let cont = '';
    do {
      const r = await this.call('GET', `${this.collection(kind)}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      if (r.status !== 200) throw new Error(`list ${kind}: HTTP ${r.status}: ${String(r.body['message'])}`);
      out.push(...(r.body['items'] as Record<string, any>[]));
      cont = (r.body['metadata']?.['continue'] as string | undefined) ?? '';
    } while (cont);
    return out;
  }

  close(): void {
    this.agent.destroy();
  }
}
