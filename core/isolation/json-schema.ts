// JSON Schemas (draft 2020-12) of the four isolation records, generated from the zod definitions. They state
// the closed shapes, enumerations, formats, uniqueness and the outcome/reasons consistency JSON Schema can
// express; canonical list order, unique stage rules and the rest of decision consistency are checked by
// typed decoding (parseRecord), and decisions must still be recomputed over their exact inputs.
import { z } from 'zod';
import { ISOLATION_RECORD_KINDS, ISOLATION_RECORD_SCHEMAS, type IsolationRecordKind } from './records.js';

export const ISOLATION_SCHEMA_BASE = 'https://worldline.dev/schemas/isolation/v1/';

/** File name (under docs/schemas/) of each record's schema, e.g. isolation-policy.schema.json. */
export function isolationSchemaFile(kind: IsolationRecordKind): string {
  return `isolation-${kind.slice('Isolation'.length).toLowerCase()}.schema.json`;
}

/** Every record's JSON Schema, keyed by file name, in record order (policy, request, observation, decision). */
export function isolationJsonSchemas(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const kind of ISOLATION_RECORD_KINDS) {
    const file = isolationSchemaFile(kind);
    const json = z.toJSONSchema(ISOLATION_RECORD_SCHEMAS[kind], { io: 'input', unrepresentable: 'throw' }) as Record<string, unknown>;
    const { $schema, ...rest } = json;
    out[file] = { $schema, $id: ISOLATION_SCHEMA_BASE + file, title: `${kind} (schema version 1)`, ...rest };
  }
  return out;
}
