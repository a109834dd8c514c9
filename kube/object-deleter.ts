// Deletes objects and removes one finalizer entry, tolerating objects that are already gone.
import type { KubeAccess } from './kube-access.js';
import { isNotFound } from './api-error.js';
import { objectPath } from './api-paths.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import type { Logger } from './logger.js';
import { splitKey, type ResourceRef } from './resource-ref.js';

export class ObjectDeleter {
  private readonly http: KubeHttpClient;

  constructor(kc: KubeAccess, private readonly logger?: Logger) {
    this.http = httpClientFor(kc);
  }

  async delete(ref: ResourceRef, key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    try {
      await this.http.request({ method: 'DELETE', path: objectPath(ref, name, namespace) });
      this.logger?.info('deleted', { kind: ref.kind, key });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Removes one finalizer with a JSON patch guarded by a test of its position, so a concurrent change
   * to the list fails (and is retried by the caller) instead of removing the wrong entry.
   */
  async removeFinalizer(ref: ResourceRef, key: string, finalizer: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const path = objectPath(ref, name, namespace);
    try {
      const obj = await this.http.request<{ metadata?: { finalizers?: string[] } }>({ path });
      const idx = (obj.metadata?.finalizers ?? []).indexOf(finalizer);
      if (idx < 0) return;
      const body = [
        { op: 'test', path: `/metadata/finalizers/${idx}`, value: finalizer },
        { op: 'remove', path: `/metadata/finalizers/${idx}` },
      ];
      await this.http.request({ method: 'PATCH', path, body, contentType: 'application/json-patch+json' });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
