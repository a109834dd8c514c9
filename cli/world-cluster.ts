// What every World command of the CLI (logs, diff, exec) shares: the options that name the cluster and
// namespace, and the kubeconfig and namespace they resolve to.
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../kube/client.js';

/** parseArgs options of every World command: -n NAMESPACE, --kubeconfig PATH, -h. */
export const WORLD_COMMAND_OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  kubeconfig: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The kubeconfig (--kubeconfig, else the usual places) and the namespace (-n, else the context's, else "default"). */
export function worldCluster(v: { namespace?: string | boolean | undefined; kubeconfig?: string | boolean | undefined }): { kc: KubeConfig; namespace: string } {
  const kc = loadKubeConfig(typeof v.kubeconfig === 'string' ? { kubeconfig: v.kubeconfig } : {});
  const namespace = (typeof v.namespace === 'string' ? v.namespace : undefined) ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  return { kc, namespace };
}
