// Server-side apply of status (and of our own entries on the main resource) under one field manager, so
// several writers (controller, node-agent) each own their fields and never overwrite one another.
import type { KubeConfig } from '@kubernetes/client-node';
import { objectPath, statusPath } from './api-paths.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import { nullLogger, type Logger } from './logger.js';
import { apiVersionOf, type ResourceRef } from './resource-ref.js';

export { statusEqual } from './status-equal.js';

export const APPLY_PATCH_CONTENT_TYPE = 'application/apply-patch+yaml';

export interface ApplyTarget {
  metadata: { name: string; namespace?: string };
}

export class StatusWriter {
  private readonly http: KubeHttpClient;
  private readonly log: Logger;

  constructor(kc: KubeConfig, readonly fieldManager: string, logger?: Logger) {
    if (!fieldManager) throw new Error('StatusWriter: fieldManager required');
    this.http = httpClientFor(kc);
    this.log = (logger ?? nullLogger).child({ fieldManager });
  }

  /**
   * Applies exactly the given status fields (the set this manager owns) to the status subresource.
   * Fields this manager applied before and omits now are removed; other managers' fields are untouched.
   */
  async applyStatus<T>(resource: ResourceRef, obj: ApplyTarget & { status: Record<string, unknown> }): Promise<T> {
    const { name, namespace } = obj.metadata;
    const body = {
      apiVersion: apiVersionOf(resource),
      kind: resource.kind,
      metadata: resource.namespaced ? { name, namespace } : { name },
      status: obj.status,
    };
    this.log.debug('applying status', { kind: resource.kind, name, namespace });
    return this.apply<T>(statusPath(resource, name, namespace), body);
  }

  /** Applies a partial object (our finalizers, labels, ownerReferences entries, ...) to the main resource. */
  async applyObject<T>(resource: ResourceRef, obj: Record<string, unknown>): Promise<T> {
    const meta = (obj.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    if (typeof meta.name !== 'string' || meta.name === '') throw new Error(`applyObject ${resource.kind}: metadata.name required`);
    const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined;
    const body = { ...obj, apiVersion: apiVersionOf(resource), kind: resource.kind };
    this.log.debug('applying object', { kind: resource.kind, name: meta.name, namespace });
    return this.apply<T>(objectPath(resource, meta.name, namespace), body);
  }

  private apply<T>(path: string, body: unknown): Promise<T> {
    return this.http.request<T>({
      method: 'PATCH',
      path,
      query: { fieldManager: this.fieldManager, force: true },
      // JSON is YAML; the apiserver accepts it under the apply-patch content type.
      body: JSON.stringify(body),
      contentType: APPLY_PATCH_CONTENT_TYPE,
    });
  }
}
