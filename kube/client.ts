// KubeConfig discovery: explicit path > $KUBECONFIG > in-cluster service account > ~/.kube/config.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface LoadKubeConfigOptions {
  kubeconfig?: string;
  /** For tests: environment and file locations to consult. */
  env?: NodeJS.ProcessEnv;
  serviceAccountTokenPath?: string;
  homeDir?: string;
}

function readable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function fromFile(file: string, source: string): KubeConfig {
  if (!readable(file)) throw new Error(`kubeconfig ${file} (from ${source}) does not exist or is not readable`);
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  if (!kc.getCurrentCluster()) {
    throw new Error(`kubeconfig ${file} (from ${source}) has no current context/cluster; set current-context`);
  }
  return kc;
}

export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  if (opts.kubeconfig) return fromFile(opts.kubeconfig, '--kubeconfig');
  const fromEnv = env.KUBECONFIG?.split(path.delimiter).filter(Boolean) ?? [];
  if (fromEnv.length > 0) {
    const kc = fromFile(fromEnv[0]!, 'KUBECONFIG');
    for (const extra of fromEnv.slice(1)) {
      if (readable(extra)) kc.mergeConfig(fromFile(extra, 'KUBECONFIG'), true);
    }
    return kc;
  }
  const tokenPath = opts.serviceAccountTokenPath ?? SA_TOKEN;
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && readable(tokenPath)) {
    const kc = new KubeConfig();
    const prefix = tokenPath.endsWith(SA_TOKEN) ? tokenPath.slice(0, tokenPath.length - SA_TOKEN.length) : '';
    kc.loadFromCluster(prefix);
    // loadFromCluster reads process.env itself; honour the (possibly injected) env for the server address.
    const host = env.KUBERNETES_SERVICE_HOST;
    const server = `https://${net.isIPv6(host) ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT}`;
    kc.loadFromOptions({
      clusters: kc.clusters.map((c) => ({ ...c, server })),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
    return kc;
  }
  const home = opts.homeDir ?? os.homedir();
  const homeConfig = path.join(home, '.kube', 'config');
  if (readable(homeConfig)) return fromFile(homeConfig, '~/.kube/config');
  throw new Error(
    'no Kubernetes configuration found: pass --kubeconfig, set KUBECONFIG, run in a pod with a service account ' +
      `token at ${tokenPath}, or create ${homeConfig}`,
  );
}
