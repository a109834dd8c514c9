// Deletes worldline objects and removes a finalizer entry, tolerating objects that are already gone.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { splitKey, type ResourceRef } from '../kube/resource-ref.js';
import type { Logger } from '../kube/logger.js';

interface MaybeApiError {
  code?: number;
  statusCode?: number;
}

function isNotFound(err: unknown): boolean {
  const e = err as MaybeApiError;
  return e?.code === 404 || e?.statusCode === 404;
}

export class ObjectDeleter {
  private readonly api: CustomObjectsApi;

  constructor(kc: KubeConfig, private readonly logger: Logger) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  async delete(ref: ResourceRef, key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    try {
      if (ref.namespaced) {
        await this.api.deleteNamespacedCustomObject({ group: ref.group, version: ref.version, plural: ref.plural, namespace: namespace ?? '', name });
      } else {
        await this.api.deleteClusterCustomObject({ group: ref.group, version: ref.version, plural: ref.plural, name });
      }
      this.logger.info('deleted dependent', { kind: ref.kind, key });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Removes one finalizer with a JSON patch guarded by a test of its position, so a concurrent change fails instead of removing the wrong entry. */
  async removeFinalizer(ref: ResourceRef, key: string, finalizer: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const base = { group: ref.group, version: ref.version, plural: ref.plural, name };
    try {
      const obj = (ref.namespaced
        ? await this.api.getNamespacedCustomObject({ ...base, namespace: namespace ?? '' })
        : await this.api.getClusterCustomObject(base)) as { metadata?: { finalizers?: string[] } };
      const idx = (obj.metadata?.finalizers ?? []).indexOf(finalizer);
      if (idx < 0) return;
      const body = [
        { op: 'test', path: `/metadata/finalizers/${idx}`, value: finalizer },
        { op: 'remove', path: `/metadata/finalizers/${idx}` },
      ];
      const opts = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
      if (ref.namespaced) await this.api.patchNamespacedCustomObject({ ...base, namespace: namespace ?? '', body }, opts);
      else await this.api.patchClusterCustomObject({ ...base, body }, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
