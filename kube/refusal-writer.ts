// Writes an OBJECT_SCHEMA_INVALID refusal on the status of an object its schema refused, under a field
// manager of its own (`<manager>-schema`), so the fields the process's main manager owns (a World's
// nodeName, the other conditions) are not dropped by server-side apply; the main manager takes the refused
// fields back the next time it writes. It writes only the fields the process owns on that kind: a condition
// (the controller's Accepted or WorldFound) and/or phase, reason and message.
import type { KubeConfig } from '@kubernetes/client-node';
import { setCondition, type Condition } from './conditions.js';
import type { Logger } from './logger.js';
import type { ObjectRefusal } from './object-schema.js';
import type { ResourceRef } from './resource-ref.js';
import { StatusWriter } from './status-writer.js';

/** The CamelCase condition reason of a schema refusal. */
export const OBJECT_SCHEMA_INVALID_REASON = 'ObjectSchemaInvalid';

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

/** The status document of a refusal over the given fields. */
export function refusalStatus(refusal: ObjectRefusal, fields: RefusalFields, now: Date): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (fields.phase) Object.assign(out, { phase: fields.phase, reason: refusal.code, message: refusal.message });
  if (fields.condition) {
    const conditions: Condition[] = setCondition(
      [],
      { type: fields.condition, status: 'False', reason: OBJECT_SCHEMA_INVALID_REASON, message: refusal.message },
      refusal.metadata.generation,
      now,
    );
    out.conditions = conditions;
  }
  return out;
}

export class RefusalWriter {
  private readonly writer: StatusWriter;

  constructor(kc: KubeConfig, fieldManager: string, private readonly logger: Logger) {
    this.writer = new StatusWriter(kc, `${fieldManager}-schema`, logger);
  }

  /** Writes the refusal unless it is already shown; returns whether it wrote. */
  async refuse(ref: ResourceRef, refusal: ObjectRefusal, fields: RefusalFields, now: Date): Promise<boolean> {
    if (refusalShown(refusal, fields)) return false;
    const { name, namespace } = refusal.metadata;
    await this.writer.applyStatus(ref, { metadata: { name, ...(namespace ? { namespace } : {}) }, status: refusalStatus(refusal, fields, now) });
    this.logger.warn('refused an object its schema does not accept', { kind: refusal.kind, key: refusal.key, code: refusal.code, paths: refusal.paths });
    return true;
  }
}
