// Where a process's Kubernetes configuration comes from: explicit path > $KUBECONFIG > in-cluster service
// account > ~/.kube/config. Decided here without loading any client library; kube/client.ts (the full
// @kubernetes/client-node KubeConfig) and kube/kube-access.ts (the light loader) both follow it.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface LoadKubeConfigOptions {
  kubeconfig?: string;
  /** For tests: environment and file locations to consult. */
  env?: NodeJS.ProcessEnv;
  serviceAccountTokenPath?: string;
  homeDir?: string;
}

export type KubeConfigSource =
  /** Kubeconfig files, the first one's current context used; later ones merged in (readable ones only). */
  | { kind: 'files'; files: { file: string; source: string }[] }
  /** The pod's service account: token (and CA) under `prefix`, server from the environment. */
  | { kind: 'cluster'; prefix: string; server: string };

export function readable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** The error for a kubeconfig file that cannot be read. */
export function unreadableKubeconfig(file: string, source: string): Error {
  return new Error(`kubeconfig ${file} (from ${source}) does not exist or is not readable`);
}

/** The error for a kubeconfig with no usable current cluster. */
export function noCurrentCluster(file: string, source: string): Error {
  return new Error(`kubeconfig ${file} (from ${source}) has no current context/cluster; set current-context`);
}

export function kubeConfigSource(opts: LoadKubeConfigOptions = {}): KubeConfigSource {
  const env = opts.env ?? process.env;
  if (opts.kubeconfig) return { kind: 'files', files: [{ file: opts.kubeconfig, source: '--kubeconfig' }] };
  const fromEnv = env.KUBECONFIG?.split(path.delimiter).filter(Boolean) ?? [];
  if (fromEnv.length > 0) {
    const [first, ...rest] = fromEnv as [string, ...string[]];
    return { kind: 'files', files: [first, ...rest.filter(readable)].map((file) => ({ file, source: 'KUBECONFIG' })) };
  }
  const tokenPath = opts.serviceAccountTokenPath ?? SA_TOKEN;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host && port && readable(tokenPath)) {
    const prefix = tokenPath.endsWith(SA_TOKEN) ? tokenPath.slice(0, tokenPath.length - SA_TOKEN.length) : '';
    return { kind: 'cluster', prefix, server: `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}` };
  }
  const home = opts.homeDir ?? os.homedir();
  const homeConfig = path.join(home, '.kube', 'config');
  if (readable(homeConfig)) return { kind: 'files', files: [{ file: homeConfig, source: '~/.kube/config' }] };
  throw new Error(
    'no Kubernetes configuration found: pass --kubeconfig, set KUBECONFIG, run in a pod with a service account ' +
      `token at ${tokenPath}, or create ${homeConfig}`,
  );
}
