// The API clients a stack benchmark uses: the typed clients on the stack's kubeconfig, and watches of
// resources in one namespace (watch-times.ts), started together and stopped together.
import { CoreV1Api, CustomObjectsApi, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { collectionPath } from '../../kube/api-paths.js';
import type { KubeHttpClient } from '../../kube/http.js';
import { apiVersionOf, type ResourceRef } from '../../kube/resource-ref.js';
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

/**
 * Creates an object with the project's keep-alive client (kube/http.ts), as the controller and the
 * node-agent write: the timed creates of the stack benchmarks and their raw-write baseline use it alike,
 * so neither carries the typed client's own cost (8–19 ms of the bench's CPU per create, against 3–6 ms).
 */
export function createObject(http: KubeHttpClient, ref: ResourceRef, namespace: string, obj: { metadata: { name: string } } & Record<string, unknown>): Promise<unknown> {
  const body = { apiVersion: apiVersionOf(ref), kind: ref.kind, ...obj, metadata: { ...obj.metadata, namespace } };
  return http.request({ method: 'POST', path: collectionPath(ref, namespace), body });
}
