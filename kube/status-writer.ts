// Server-side apply of status (and of our own entries on the main resource) under one field manager, so
// several writers (controller, node-agent) each own their fields and never overwrite one another.
import type { KubeAccess } from './kube-access.js';
import { objectPath, statusPath } from './api-paths.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import { nullLogger, type Logger } from './logger.js';
import { apiVersionOf, type ResourceRef } from './resource-ref.js';

import { statusEqual } from './status-equal.js';

export { statusEqual };

export const APPLY_PATCH_CONTENT_TYPE = 'application/apply-patch+yaml';

export interface ApplyTarget {
  metadata: { name: string; namespace?: string };
}

/** The status fields one manager owns: top-level keys, and (when it owns any) condition types. */
export interface OwnedStatus {
  keys: readonly string[];
  conditionTypes?: ReadonlySet<string>;
}

type Observed = { metadata?: { name?: string; namespace?: string }; status?: Record<string, unknown> };

/** The owned part of a status document (undefined keys dropped; conditions filtered to the owned types). */
function ownedPart(status: Record<string, unknown> | undefined, owned: OwnedStatus): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of owned.keys) if (status?.[k] !== undefined) out[k] = status[k];
  if (owned.conditionTypes) {
    const conditions = (status?.conditions ?? []) as { type: string }[];
    out.conditions = conditions.filter((c) => owned.conditionTypes!.has(c.type));
  }
  return out;
}

export class StatusWriter {
  private readonly http: KubeHttpClient;
  private readonly log: Logger;

  constructor(kc: KubeAccess, readonly fieldManager: string, logger?: Logger) {
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

  /**
   * Applies `status` — this manager's whole document — unless `obj` already shows it over the owned
   * keys and condition types (compared with statusEqual). Returns the object the write returned (for the
   * writer's informer: Informer.observeWrite), or undefined when there was nothing to write.
   */
  async applyOwnedStatus<T = unknown>(resource: ResourceRef, obj: Observed, status: object, owned: OwnedStatus): Promise<T | undefined> {
    const clean = JSON.parse(JSON.stringify(status)) as Record<string, unknown>;
    const want = ownedPart(clean, owned);
    if (owned.conditionTypes) want.conditions = clean.conditions ?? [];
    if (statusEqual(ownedPart(obj.status, owned), want)) return undefined;
    return await this.applyStatus<T>(resource, { metadata: { name: obj.metadata?.name ?? '', namespace: obj.metadata?.namespace ?? '' }, status: clean });
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
