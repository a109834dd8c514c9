// CEL-rule helpers: each rule the API server enforces through CEL is declared once, with the TypeScript
// predicate that makes zod enforce the same thing, so the generated CRDs and in-process validation agree.
import { z } from 'zod';

// ---- CEL rules -------------------------------------------------------------------------------------------

/** One `x-kubernetes-validations` entry. */
export interface CelRule {
  /** The CEL expression; `self` is the value of the node the rule is attached to. */
  rule: string;
  /** Human-readable message; by convention it names the field and the rule. */
  message: string;
  /** Optional JSONPath (relative to the node) of the field the error should point at. */
  fieldPath?: string;
  /** Optional machine-readable reason reported by the API server. */
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export const VALIDATIONS_KEY = 'x-kubernetes-validations';

/**
 * A transition rule: each of `fields` is unchanged — present on both sides with the same value, or absent
 * on both. The `has` guards matter: an object stored under an older schema may lack a field the current one
 * requires, and an unguarded `self.f` would make the rule fail to evaluate ("no such key") on every write,
 * status writes included, so nothing could even refuse the object on its status.
 */
export function unchangedFields(fields: readonly string[], message: string): CelRule {
  const rule = fields.map((f) => `(has(self.${f}) ? has(oldSelf.${f}) && self.${f} == oldSelf.${f} : !has(oldSelf.${f}))`).join(' && ');
  return { rule, message };
}

/** The transition rule on a Check's or Collapse's spec: worldUID may go from unset to set, and never changes after. */
export function WORLD_UID_SET_ONCE(kind: 'Check' | 'Collapse'): CelRule {
  return {
    rule: '!has(oldSelf.worldUID) || (has(self.worldUID) && self.worldUID == oldSelf.worldUID)',
    message: `spec.worldUID is set once and never changes: this ${kind} is bound to that World; create a new ${kind} for another`,
    fieldPath: '.worldUID',
  };
}

function existingRules(schema: z.ZodType): CelRule[] {
  const meta = schema.meta();
  const rules = meta?.[VALIDATIONS_KEY];
  return Array.isArray(rules) ? (rules as CelRule[]) : [];
}

/**
 * Attaches CEL rules to a schema without a TypeScript counterpart. Use only for rules zod cannot express
 * (transition rules that compare against `oldSelf`); everything else goes through {@link celChecked}.
 */
export function cel<T extends z.ZodType>(schema: T, ...rules: CelRule[]): T {
  return schema.meta({ [VALIDATIONS_KEY]: [...existingRules(schema), ...rules] });
}

/**
 * Attaches one CEL rule and the equivalent TypeScript predicate: the API server evaluates `rule.rule`,
 * zod evaluates `check`, and both report `rule.message`.
 */
export function celChecked<T extends z.ZodType>(schema: T, rule: CelRule, check: (value: z.output<T>) => boolean): T {
  const path = rule.fieldPath ? rule.fieldPath.replace(/^\./, '').split('.') : [];
  const refined = schema.refine((v) => check(v), { message: rule.message, path });
  return cel(refined, rule);
}

/** Marks a list with its server-side-apply merge semantics. */
export function listType<T extends z.ZodType>(schema: T, type: 'atomic' | 'set'): T;
export function listType<T extends z.ZodType>(schema: T, type: 'map', keys: string[]): T;
export function listType<T extends z.ZodType>(schema: T, type: 'atomic' | 'set' | 'map', keys?: string[]): T {
  const meta: Record<string, unknown> = { 'x-kubernetes-list-type': type };
  if (type === 'map') meta['x-kubernetes-list-map-keys'] = keys;
  return schema.meta(meta);
}

/** Zod-side mirror of `x-kubernetes-list-type: set` / `map`: items (or their keys) must be unique. */
export function uniqueBy<T>(items: readonly T[] | undefined, key: (item: T) => unknown): boolean {
  if (!items) return true;
  const seen = new Set<unknown>();
  for (const item of items) {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
  }
  return true;
}
