// KubeConfig discovery (kube/kubeconfig-source.ts decides where from) into a full @kubernetes/client-node
// KubeConfig. Importing this module loads that library (~70 MiB resident); a process that only talks to
// the apiserver through kube/http.ts can use the light loader in kube/kube-access.ts instead.
import { KubeConfig } from '@kubernetes/client-node';
import { kubeConfigSource, noCurrentCluster, readable, unreadableKubeconfig, type LoadKubeConfigOptions } from './kubeconfig-source.js';

export type { LoadKubeConfigOptions };

function fromFile(file: string, source: string): KubeConfig {
  if (!readable(file)) throw unreadableKubeconfig(file, source);
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  if (!kc.getCurrentCluster()) throw noCurrentCluster(file, source);
  return kc;
}

export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const src = kubeConfigSource(opts);
  if (src.kind === 'files') {
    const [first, ...rest] = src.files as [{ file: string; source: string }, ...{ file: string; source: string }[]];
    const kc = fromFile(first.file, first.source);
    for (const extra of rest) kc.mergeConfig(fromFile(extra.file, extra.source), true);
    return kc;
  }
  const kc = new KubeConfig();
  kc.loadFromCluster(src.prefix);
  // loadFromCluster reads process.env itself; honour the (possibly injected) env for the server address.
  kc.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server: src.server })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return kc;
}
