// Writes an OBJECT_SCHEMA_INVALID refusal on the status of an object its schema refused. Server-side apply
// cannot be used: the API server cannot build a typed view of an object whose stored fields have the wrong
// type ("failed to create typed live object"). So the refusal is a JSON merge patch of the status
// subresource, guarded by the object's resourceVersion (a conflict is retried by the caller's queue), under
// the field manager `<manager>-schema`. It writes only fields the process owns on that kind: a condition
// (the controller's Accepted or WorldFound) and/or phase, reason and message; every other writer's
// condition entries are sent back exactly as they were stored. Once the object is fixed, the process's main
// manager applies its own status again and takes those fields back.
import type { KubeAccess } from './kube-access.js';
import { statusPath } from './api-paths.js';
import { formatTime } from './conditions.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import type { Logger } from './logger.js';
import type { ObjectRefusal, RefusedCondition } from './object-schema.js';
import type { ResourceRef } from './resource-ref.js';

/** The CamelCase condition reason of a schema refusal. */
export const OBJECT_SCHEMA_INVALID_REASON = 'ObjectSchemaInvalid';

const MERGE_PATCH = 'application/merge-patch+json';

/** Which status fields the writing process owns on the refused kind. */
export interface RefusalFields {
  /** A condition type the process owns; it becomes False with reason ObjectSchemaInvalid. */
  condition?: string;
  /** The phase written with reason OBJECT_SCHEMA_INVALID and the refusal's message. */
  phase?: string;
}

/** True when the object already shows this refusal over the given fields (nothing to write). */
export function refusalShown(refusal: ObjectRefusal, fields: RefusalFields): boolean {
  const st = refusal.status;
  if (fields.phase && (st.reason !== refusal.code || st.message !== refusal.message)) return false;
  if (fields.condition) {
    const c = st.conditions.find((x) => x.type === fields.condition);
    if (c?.status !== 'False' || c.reason !== OBJECT_SCHEMA_INVALID_REASON || c.message !== refusal.message) return false;
  }
  return true;
}

/** The status merge patch of a refusal: the owned fields, and the stored conditions with the owned one set. */
export function refusalStatus(refusal: ObjectRefusal, fields: RefusalFields, now: Date): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (fields.phase) Object.assign(out, { phase: fields.phase, reason: refusal.code, message: refusal.message });
  if (fields.condition) {
    const type = fields.condition;
    const prev = refusal.status.conditions.find((c) => c.type === type);
    const entry: RefusedCondition = {
      type,
      status: 'False',
      reason: OBJECT_SCHEMA_INVALID_REASON,
      message: refusal.message,
      lastTransitionTime: prev?.status === 'False' && typeof prev.lastTransitionTime === 'string' ? prev.lastTransitionTime : formatTime(now),
    };
    if (refusal.metadata.generation !== undefined) entry.observedGeneration = refusal.metadata.generation;
    const others = refusal.status.conditions.filter((c) => c.type !== type);
    out.conditions = prev ? refusal.status.conditions.map((c) => (c.type === type ? entry : c)) : [...others, entry];
  }
  return out;
}

export class RefusalWriter {
  private readonly http: KubeHttpClient;
  readonly fieldManager: string;

  constructor(kc: KubeAccess, fieldManager: string, private readonly logger: Logger) {
    this.http = httpClientFor(kc);
    this.fieldManager = `${fieldManager}-schema`;
  }

  /** Writes the refusal unless it is already shown; returns whether it wrote. A 409 (changed meanwhile) throws. */
  async refuse(ref: ResourceRef, refusal: ObjectRefusal, fields: RefusalFields, now: Date): Promise<boolean> {
    if (refusalShown(refusal, fields)) return false;
    const { name, namespace, resourceVersion } = refusal.metadata;
    const body = { metadata: resourceVersion ? { resourceVersion } : {}, status: refusalStatus(refusal, fields, now) };
    await this.http.request({
      method: 'PATCH',
      path: statusPath(ref, name, namespace),
      query: { fieldManager: this.fieldManager },
      body: JSON.stringify(body),
      contentType: MERGE_PATCH,
    });
    this.logger.warn('refused an object its schema does not accept', { kind: refusal.kind, key: refusal.key, code: refusal.code, paths: refusal.paths });
    return true;
  }
}
