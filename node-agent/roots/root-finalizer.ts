// The finalizer the node-agent puts on a Root it adopted, so that deleting the Root waits for the agent
// to release the directory (or, with spec.onDelete KeepAdopted, to let go of it). Added and removed with
// JSON patches guarded by a test, so a concurrent change to the list fails and is retried by the runner
// instead of writing over another finalizer. The chart's admission policy lets a node-agent add or remove
// exactly this finalizer, on its own node's Roots only.
import type { KubeConfig } from '@kubernetes/client-node';
import { isNotFound } from '../../kube/api-error.js';
import { objectPath } from '../../kube/api-paths.js';
import { httpClientFor } from '../../kube/http.js';
import { refs } from '../api-refs.js';

export const ROOT_RELEASE_FINALIZER = 'worldline.dev/root-release';

export interface RootFinalizers {
  /** Adds the finalizer to the Root `name` unless it is there or the Root is being deleted. */
  add(name: string): Promise<void>;
  /** Removes it; a Root already gone is fine. */
  remove(name: string): Promise<void>;
}

interface RootMeta {
  metadata?: { finalizers?: string[]; deletionTimestamp?: string; resourceVersion?: string };
}

export function rootFinalizers(kc: KubeConfig): RootFinalizers {
  const http = httpClientFor(kc);
  const path = (name: string): string => objectPath(refs.Root, name);
  const patch = (name: string, body: unknown[]): Promise<unknown> => http.request({ method: 'PATCH', path: path(name), body, contentType: 'application/json-patch+json' });
  return {
    async add(name) {
      const obj = await http.request<RootMeta>({ path: path(name) });
      const list = obj.metadata?.finalizers;
      if (obj.metadata?.deletionTimestamp || list?.includes(ROOT_RELEASE_FINALIZER)) return;
      const rv = { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata?.resourceVersion };
      await patch(name, list ? [rv, { op: 'add', path: '/metadata/finalizers/-', value: ROOT_RELEASE_FINALIZER }] : [rv, { op: 'add', path: '/metadata/finalizers', value: [ROOT_RELEASE_FINALIZER] }]);
    },
    async remove(name) {
      try {
        const obj = await http.request<RootMeta>({ path: path(name) });
        const idx = (obj.metadata?.finalizers ?? []).indexOf(ROOT_RELEASE_FINALIZER);
        if (idx < 0) return;
        await patch(name, [
          { op: 'test', path: `/metadata/finalizers/${idx}`, value: ROOT_RELEASE_FINALIZER },
          { op: 'remove', path: `/metadata/finalizers/${idx}` },
        ]);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
  };
}
