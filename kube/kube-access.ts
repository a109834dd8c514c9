// The part of a KubeConfig that kube/http.ts uses (the server, and TLS material and credentials for a
// request), and a light loader for it that does not import @kubernetes/client-node (whose import alone
// holds ~70 MiB resident). The loader reads kubeconfig files with client-node's own small entry parsers
// and handles client certificates, bearer tokens (inline, token-file, the pod's rotating service account
// token) and basic auth, as KubeConfig.applyToHTTPSOptions does; anything else (exec or auth-provider
// plugins, impersonation, proxies, several merged files) falls back to the full KubeConfig.
import fs from 'node:fs';
import type https from 'node:https';
import path from 'node:path';
import { newClusters, newContexts, newUsers, type Cluster, type User } from '@kubernetes/client-node/dist/config_types.js';
import { parse as parseYaml } from 'yaml';
import { kubeConfigSource, noCurrentCluster, readable, unreadableKubeconfig, type LoadKubeConfigOptions } from './kubeconfig-source.js';

/** What kube/http.ts needs of a cluster configuration; a client-node KubeConfig is one. */
export interface KubeAccess {
  getCurrentCluster(): { readonly server: string } | null;
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

/** Files (certificates, keys, tokens) are read again at most this often, so rotated ones are picked up. */
const REREAD_MS = 60_000;

const SA_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';
const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

class CachedFile {
  private value: Buffer | undefined;
  private readAt = 0;
  constructor(private readonly file: string) {}
  get(): Buffer {
    const now = Date.now();
    if (!this.value || now - this.readAt > REREAD_MS) {
      this.value = fs.readFileSync(this.file);
      this.readAt = now;
    }
    return this.value;
  }
}

/** A file's contents (re-read as above) or inline base64 data, as client-node's bufferFromFileOrString. */
function material(file: string | undefined, data: string | undefined): (() => Buffer) | undefined {
  if (file) {
    const f = new CachedFile(file);
    return () => f.get();
  }
  if (data) {
    const b = Buffer.from(data, 'base64');
    return () => b;
  }
  return undefined;
}

interface AccessParts {
  server: string;
  skipTLSVerify: boolean;
  tlsServerName?: string | undefined;
  ca?: (() => Buffer) | undefined;
  cert?: (() => Buffer) | undefined;
  key?: (() => Buffer) | undefined;
  token?: (() => string) | undefined;
  basic?: string | undefined;
}

class LightKubeAccess implements KubeAccess {
  constructor(private readonly p: AccessParts) {}

  getCurrentCluster(): { readonly server: string } {
    return { server: this.p.server };
  }

  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const p = this.p;
    if (p.skipTLSVerify) opts.rejectUnauthorized = false;
    if (p.tlsServerName) opts.servername = p.tlsServerName;
    if (p.ca) opts.ca = p.ca();
    if (p.cert) opts.cert = p.cert();
    if (p.key) opts.key = p.key();
    if (p.basic) opts.auth = p.basic;
    const token = p.token?.();
    if (token) opts.headers = { ...opts.headers, Authorization: `Bearer ${token}` };
    return Promise.resolve();
  }
}

/** The light access for one kubeconfig file, or undefined when it needs the full KubeConfig. */
function fromFile(file: string, source: string): KubeAccess | undefined {
  if (!readable(file)) throw unreadableKubeconfig(file, source);
  const doc = parseYaml(fs.readFileSync(file, 'utf8')) as Record<string, unknown> | null;
  const clusters: Cluster[] = newClusters(doc?.clusters);
  const contexts = newContexts(doc?.contexts);
  const users: User[] = newUsers(doc?.users);
  const context = contexts.find((c) => c.name === doc?.['current-context']);
  const cluster = context ? clusters.find((c) => c.name === context.cluster) : undefined;
  if (!cluster) throw noCurrentCluster(file, source);
  const user = users.find((u) => u.name === context?.user);
  if (cluster.proxyUrl) return undefined;
  if (user && (user.exec || user.authProvider || user.impersonateUser)) return undefined;
  const dir = path.dirname(file);
  const abs = (f: string | undefined): string | undefined => (f ? path.resolve(dir, f) : undefined);
  // Like KubeConfig.applyHTTPSOptions, TLS settings apply only when the context names a user.
  if (!user) return new LightKubeAccess({ server: cluster.server, skipTLSVerify: false });
  const token = user.token;
  return new LightKubeAccess({
    server: cluster.server,
    skipTLSVerify: cluster.skipTLSVerify,
    tlsServerName: cluster.tlsServerName,
    ca: material(abs(cluster.caFile), cluster.caData),
    cert: material(abs(user.certFile), user.certData),
    key: material(abs(user.keyFile), user.keyData),
    token: token ? () => token : undefined,
    basic: user.username ? `${user.username}:${user.password ?? ''}` : undefined,
  });
}

/**
 * Loads the cluster access from the same places, in the same order, as kube/client.ts loadKubeConfig;
 * imports @kubernetes/client-node only when the configuration needs it.
 */
export async function loadKubeAccess(opts: LoadKubeConfigOptions = {}): Promise<KubeAccess> {
  const src = kubeConfigSource(opts);
  if (src.kind === 'cluster') {
    const token = new CachedFile(`${src.prefix}${SA_TOKEN}`);
    return new LightKubeAccess({
      server: src.server,
      skipTLSVerify: false,
      ca: material(`${src.prefix}${SA_CA}`, undefined),
      token: () => token.get().toString('utf8'),
    });
  }
  const [only, ...more] = src.files as [{ file: string; source: string }, ...{ file: string; source: string }[]];
  const light = more.length === 0 ? fromFile(only.file, only.source) : undefined;
  if (light) return light;
  const { loadKubeConfig } = await import('./client.js');
  return loadKubeConfig(opts);
}
