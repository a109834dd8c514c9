// The API clients a stack benchmark uses: the typed clients on the stack's kubeconfig, and watches of
// resources in one namespace (watch-times.ts), started together and stopped together.
import { CoreV1Api, CustomObjectsApi, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { ResourceRef } from '../../kube/resource-ref.js';
import type { Stack } from '../support/stack.js';
import { WatchTimes } from './watch-times.js';

export type BenchObj = KubernetesObject & { status?: Record<string, any> };

export interface BenchClients {
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  /** A watch of `resource` in the namespace (started by start()). */
  watch(resource: ResourceRef): WatchTimes<BenchObj>;
  start(): Promise<void>;
  stop(): void;
}

export function benchClients(stack: Stack, namespace: string): BenchClients {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(stack.cp.kubeconfigPath);
  const watches: WatchTimes<BenchObj>[] = [];
  return {
    kubeConfig,
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    core: kubeConfig.makeApiClient(CoreV1Api),
    watch(resource) {
      const w = new WatchTimes<BenchObj>(kubeConfig, resource, namespace);
      watches.push(w);
      return w;
    },
    async start() {
      await Promise.all(watches.map((w) => w.start()));
    },
    stop() {
      for (const w of watches) w.stop();
    },
  };
}
