// Argument validation for the native wrappers. Everything is checked here, in TypeScript, before C sees
// it; the C side re-checks types only as a last line. Errors follow Node's conventions (TypeError /
// RangeError with code ERR_INVALID_ARG_TYPE / ERR_INVALID_ARG_VALUE / ERR_OUT_OF_RANGE).
import type { IdMap } from './types.js';

const AT_FDCWD = -100;
const U32_MAX = 0xffffffff;
/** The kernel accepts at most 340 rows in a uid_map/gid_map. */
export const MAX_MAP_ROWS = 340;

function typeError(name: string, want: string, value: unknown): TypeError {
  const err = new TypeError(`The "${name}" argument must be ${want}. Received ${describe(value)}`);
  Object.defineProperty(err, 'code', { value: 'ERR_INVALID_ARG_TYPE', enumerable: true });
  return err;
}

export function valueError(name: string, reason: string): RangeError {
  const err = new RangeError(`The "${name}" argument is invalid: ${reason}`);
  Object.defineProperty(err, 'code', { value: 'ERR_INVALID_ARG_VALUE', enumerable: true });
  return err;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `"${value.length > 40 ? value.slice(0, 40) + '…' : value}"`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${value}`;
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : typeof value;
}

export function integer(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw typeError(name, 'an integer', value);
  if (value < min || value > max) {
    const err = new RangeError(`The "${name}" argument must be >= ${min} and <= ${max}. Received ${value}`);
    Object.defineProperty(err, 'code', { value: 'ERR_OUT_OF_RANGE', enumerable: true });
    throw err;
  }
  return value;
}

/** A file descriptor: >= 0. */
export function fd(name: string, value: unknown): number {
  return integer(name, value, 0, 0x7fffffff);
}

/** A directory fd for *at() calls: >= 0 or AT_FDCWD. */
export function dirFd(name: string, value: unknown): number {
  if (value === AT_FDCWD) return AT_FDCWD;
  return fd(name, value);
}

export function flags32(name: string, value: unknown): number {
  return integer(name, value, 0, U32_MAX);
}

export function bool(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw typeError(name, 'of type boolean', value);
  return value;
}

export function string(name: string, value: unknown): string {
  if (typeof value !== 'string') throw typeError(name, 'of type string', value);
  if (value.includes('\0')) throw valueError(name, 'must not contain NUL bytes');
  return value;
}

export function nonEmptyString(name: string, value: unknown): string {
  const s = string(name, value);
  if (s.length === 0) throw valueError(name, 'must not be empty');
  return s;
}

/** An absolute path without "." or ".." components. */
export function absolutePath(name: string, value: unknown): string {
  const s = string(name, value);
  if (!s.startsWith('/')) throw valueError(name, `must be an absolute path, got "${s}"`);
  if (s.split('/').some((c) => c === '..' || c === '.')) throw valueError(name, `must not contain "." or ".." components, got "${s}"`);
  return s;
}

/** A relative path for *at() calls (may be empty only when allowEmpty). */
export function relativePath(name: string, value: unknown, allowEmpty = false): string {
  const s = string(name, value);
  if (s.length === 0 && !allowEmpty) throw valueError(name, 'must not be empty');
  return s;
}

export function stringArray(name: string, value: unknown, check: (n: string, v: unknown) => string = string): string[] {
  if (!Array.isArray(value)) throw typeError(name, 'an array of strings', value);
  return value.map((v, i) => check(`${name}[${i}]`, v));
}

export function object(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw typeError(name, 'an object', value);
  return value as Record<string, unknown>;
}

/** uid_map/gid_map rows: 1..340 rows of 32-bit ranges; no outside range may contain host id 0. */
export function idMaps(name: string, value: unknown): IdMap[] {
  if (!Array.isArray(value)) throw typeError(name, 'an array of { inside, outside, count }', value);
  if (value.length === 0 || value.length > MAX_MAP_ROWS) throw valueError(name, `must have 1..${MAX_MAP_ROWS} rows`);
  return value.map((row: unknown, i): IdMap => {
    const r = object(`${name}[${i}]`, row);
    const inside = integer(`${name}[${i}].inside`, r['inside'], 0, U32_MAX - 1);
    const outside = integer(`${name}[${i}].outside`, r['outside'], 0, U32_MAX - 1);
    const count = integer(`${name}[${i}].count`, r['count'], 1, U32_MAX);
    if (inside + count > U32_MAX || outside + count > U32_MAX) throw valueError(name, `row ${i} overflows 32 bits`);
    if (outside === 0) throw valueError(name, `row ${i} maps host id 0 (host root is never mapped into a namespace)`);
    return { inside, outside, count };
  });
}

/** The id must fall inside one of the map's inside ranges. */
export function mappedId(name: string, value: unknown, maps: IdMap[]): number {
  const id = integer(name, value, 0, U32_MAX - 1);
  if (!maps.some((m) => id >= m.inside && id < m.inside + m.count)) throw valueError(name, `${id} is not mapped by the namespace's map`);
  return id;
}

export function optional<T>(value: unknown, check: (v: unknown) => T): T | undefined {
  return value === undefined ? undefined : check(value);
}
