// Parsing API objects at the edge: an informer given a schema keeps in its cache only objects the schema
// accepts (typed as the schema's output), and turns every other one into a named refusal that says which
// field paths zod refused. Nothing the schema refuses is cast to the kind's type.
import type { z } from 'zod';
import { OBJECT_SCHEMA_INVALID } from '../crds/outcomes.js';
import { objectKey } from './resource-ref.js';

export { OBJECT_SCHEMA_INVALID };

/** The identity of a refused object, read defensively from whatever the API server sent. */
export interface RefusedMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
}

/** One entry of the refused object's status.conditions, as stored (only `type` is known to be a string). */
export type RefusedCondition = Record<string, unknown> & { type: string };

/** What a refusal writer needs to know of the refused object's status (read defensively, never cast). */
export interface RefusedStatus {
  reason?: string;
  message?: string;
  /** The stored entries that have a string type, verbatim (a refusal keeps every other writer's entries). */
  conditions: RefusedCondition[];
}

/** An object its kind's schema does not accept. */
export interface ObjectRefusal {
  code: typeof OBJECT_SCHEMA_INVALID;
  kind: string;
  key: string;
  metadata: RefusedMeta;
  status: RefusedStatus;
  /** Field paths zod reported, e.g. `spec.agent.command`, `status.exit.code` (sorted, unique). */
  paths: string[];
  /** `<Kind> <key> does not match the <Kind> schema: <path>: <issue>; ...` */
  message: string;
}

export type ParsedObject<T> = { ok: true; value: T } | { ok: false; refusal: ObjectRefusal };
export type ObjectParser<T> = (raw: unknown) => ParsedObject<T>;

const MAX_ISSUES = 8;
const MAX_MESSAGE = 2048;

/** `spec.checks[0].command` from zod's path array; `<root>` for the object itself. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out === '' ? '<root>' : out;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function refusedMeta(raw: unknown): RefusedMeta {
  const meta = fieldOf(raw, 'metadata');
  const out: RefusedMeta = { name: str(fieldOf(meta, 'name')) ?? '' };
  const namespace = str(fieldOf(meta, 'namespace'));
  const uid = str(fieldOf(meta, 'uid'));
  const resourceVersion = str(fieldOf(meta, 'resourceVersion'));
  const generation = fieldOf(meta, 'generation');
  if (namespace) out.namespace = namespace;
  if (uid) out.uid = uid;
  if (resourceVersion) out.resourceVersion = resourceVersion;
  if (typeof generation === 'number') out.generation = generation;
  return out;
}

function fieldOf(v: unknown, k: string): unknown {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
}

function refusedStatus(raw: unknown): RefusedStatus {
  const st = fieldOf(raw, 'status');
  const out: RefusedStatus = { conditions: [] };
  const reason = str(fieldOf(st, 'reason'));
  const message = str(fieldOf(st, 'message'));
  if (reason !== undefined) out.reason = reason;
  if (message !== undefined) out.message = message;
  const conds = fieldOf(st, 'conditions');
  for (const c of Array.isArray(conds) ? (conds as unknown[]) : []) {
    const type = str(fieldOf(c, 'type'));
    if (type !== undefined) out.conditions.push({ ...(c as Record<string, unknown>), type });
  }
  return out;
}

/** The refusal of `raw` from zod's issues. */
export function refusalOf(kind: string, raw: unknown, issues: readonly z.core.$ZodIssue[]): ObjectRefusal {
  const metadata = refusedMeta(raw);
  const key = objectKey({ metadata });
  const paths = [...new Set(issues.map((i) => formatPath(i.path)))].sort();
  const shown = issues.slice(0, MAX_ISSUES).map((i) => `${formatPath(i.path)}: ${i.message}`);
  if (issues.length > MAX_ISSUES) shown.push(`and ${issues.length - MAX_ISSUES} more`);
  let message = `${kind} ${key} does not match the ${kind} schema: ${shown.join('; ')}`;
  if (message.length > MAX_MESSAGE) message = `${message.slice(0, MAX_MESSAGE - 1)}…`;
  return { code: OBJECT_SCHEMA_INVALID, kind, key, metadata, status: refusedStatus(raw), paths, message };
}

/** A parser that accepts what `schema` accepts (returning its typed output) and refuses the rest by name. */
export function schemaParser<S extends z.ZodType>(kind: string, schema: S): ObjectParser<z.output<S>> {
  return (raw) => {
    const r = schema.safeParse(raw);
    return r.success ? { ok: true, value: r.data } : { ok: false, refusal: refusalOf(kind, raw, r.error.issues) };
  };
}
