// Canonical JSON: one byte-exact text per value, so that a hash of it is an identity.
//
// Rules: object keys sorted by UTF-16 code unit (the order RFC 8785 uses), no whitespace, strings and
// numbers written exactly as JSON.stringify writes them. Anything JSON cannot round-trip is refused
// instead of being silently changed: non-finite numbers, bigint, functions, symbols, `undefined` in an
// array, cycles, and objects that are not plain (Date, Map, class instances). An object property whose
// value is `undefined` is left out, as JSON.stringify does, so optional fields hash like absent ones.
import { Refusal } from './errors.js';

export class CanonicalJsonError extends Refusal {
  declare readonly code: 'CANONICAL_JSON_INVALID';
  constructor(
    readonly at: string,
    reason: string,
  ) {
    super('CANONICAL_JSON_INVALID', `cannot write canonical JSON at ${at}: ${reason}`);
    this.name = 'CanonicalJsonError';
  }
}

export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, '$', parts, new Set<object>());
  return parts.join('');
}

function write(value: unknown, at: string, out: string[], open: Set<object>): void {
  switch (typeof value) {
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(at, `non-finite number ${String(value)}`);
      out.push(JSON.stringify(value)); // -0 is written as 0, like JSON.stringify
      return;
    case 'object':
      if (value === null) {
        out.push('null');
        return;
      }
      if (open.has(value)) throw new CanonicalJsonError(at, 'cycle');
      open.add(value);
      if (Array.isArray(value)) writeArray(value, at, out, open);
      else writeObject(value, at, out, open);
      open.delete(value);
      return;
    default:
      throw new CanonicalJsonError(at, `unsupported type ${typeof value}`);
  }
}

function writeArray(items: readonly unknown[], at: string, out: string[], open: Set<object>): void {
  out.push('[');
  for (let i = 0; i < items.length; i++) {
    const item: unknown = items[i];
    if (item === undefined) throw new CanonicalJsonError(`${at}[${i}]`, 'undefined (or a hole) in an array');
    if (i > 0) out.push(',');
    write(item, `${at}[${i}]`, out, open);
  }
  out.push(']');
}

function writeObject(obj: object, at: string, out: string[], open: Set<object>): void {
  const proto: unknown = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) {
    throw new CanonicalJsonError(at, 'not a plain object');
  }
  const record = obj as Record<string, unknown>;
  const keys = Object.keys(record).sort(); // default sort: UTF-16 code units
  out.push('{');
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    if (!first) out.push(',');
    first = false;
    out.push(JSON.stringify(key), ':');
    write(v, `${at}.${key}`, out, open);
  }
  out.push('}');
}
