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
  const w = new Writer();
  w.write(value);
  return w.out;
}

/**
 * Writes one value. The path of the value being written is kept as a stack of keys and indexes and
 * spelled out ($.a[0].b) only for a refusal: building that string for every value cost more than the
 * writing itself on the receipts' hot paths (hashing, verifying a ledger's canonical form).
 */
class Writer {
  out = '';
  private readonly path: (string | number)[] = [];
  private readonly open = new Set<object>();

  write(value: unknown): void {
    switch (typeof value) {
      case 'string':
        this.out += JSON.stringify(value);
        return;
      case 'boolean':
        this.out += value ? 'true' : 'false';
        return;
      case 'number':
        if (!Number.isFinite(value)) throw this.refuse(`non-finite number ${String(value)}`);
        this.out += JSON.stringify(value); // -0 is written as 0, like JSON.stringify
        return;
      case 'object':
        if (value === null) {
          this.out += 'null';
          return;
        }
        if (this.open.has(value)) throw this.refuse('cycle');
        this.open.add(value);
        if (Array.isArray(value)) this.writeArray(value);
        else this.writeObject(value);
        this.open.delete(value);
        return;
      default:
        throw this.refuse(`unsupported type ${typeof value}`);
    }
  }

  private writeArray(items: readonly unknown[]): void {
    this.out += '[';
    for (let i = 0; i < items.length; i++) {
      const item: unknown = items[i];
      this.path.push(i);
      if (item === undefined) throw this.refuse('undefined (or a hole) in an array');
      if (i > 0) this.out += ',';
      this.write(item);
      this.path.pop();
    }
    this.out += ']';
  }

  private writeObject(obj: object): void {
    const proto: unknown = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) throw this.refuse('not a plain object');
    const record = obj as Record<string, unknown>;
    const keys = Object.keys(record).sort(); // default sort: UTF-16 code units
    this.out += '{';
    let first = true;
    for (const key of keys) {
      const v = record[key];
      if (v === undefined) continue;
      if (!first) this.out += ',';
      first = false;
      this.out += JSON.stringify(key) + ':';
      this.path.push(key);
      this.write(v);
      this.path.pop();
    }
    this.out += '}';
  }

  private refuse(reason: string): CanonicalJsonError {
    const at = this.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
    return new CanonicalJsonError(`$${at}`, reason);
  }
}

/**
 * True when `text` is exactly the canonical JSON of `value`, for a `value` JSON.parse made of `text`:
 * equal to `canonicalJson(value) === text` (a refusal counting as false), and several times faster on a
 * ledger line. When every object's keys are already in sorted order, JSON.stringify writes what
 * canonicalJson would (same key order, same strings and numbers; a number beyond double range becomes
 * null, never its text), so one native call decides. V8 keeps integer-like keys first, ascending, whatever
 * the text said: an object where that order is not the sorted one is written canonically instead.
 */
export function isCanonicalParse(value: unknown, text: string): boolean {
  if (keysSorted(value)) return JSON.stringify(value) === text;
  try {
    return canonicalJson(value) === text;
  } catch {
    return false;
  }
}

function keysSorted(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (!keysSorted(item)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in record) {
    if (previous !== undefined && !(previous < key)) return false;
    previous = key;
    if (!keysSorted(record[key])) return false;
  }
  return true;
}
