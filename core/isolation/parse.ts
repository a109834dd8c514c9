// Parsing raw JSON into isolation records. A malformed record is refused with a list of named problems;
// nothing is defaulted, coerced, sorted or de-duplicated on the way in.
import type { z } from 'zod';
import { IsolationRecordError } from './errors.js';
import { ISOLATION_RECORD_SCHEMAS, type IsolationRecordKind, type IsolationRecordOf } from './records.js';

export const RECORD_PROBLEM_CODES = [
  'NOT_AN_OBJECT',
  'UNKNOWN_FIELD',
  'MISSING_FIELD',
  'WRONG_SCHEMA_VERSION',
  'WRONG_KIND',
  'UNKNOWN_ENUM_VALUE',
  'DUPLICATE',
  'NON_CANONICAL_ORDER',
  'INCONSISTENT',
  'INVALID_VALUE',
] as const;
export type RecordProblemCode = (typeof RECORD_PROBLEM_CODES)[number];

export interface RecordProblem {
  code: RecordProblemCode;
  /** JSON path of the offending element, e.g. `$.stages[1].stage`. */
  path: string;
  message: string;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; problems: RecordProblem[] };

/** Parses `raw` as the record `kind`; returns the typed value or every problem found. */
export function parseRecord<K extends IsolationRecordKind>(kind: K, raw: unknown): ParseResult<IsolationRecordOf[K]> {
  const result = (ISOLATION_RECORD_SCHEMAS[kind] as z.ZodType).safeParse(raw, { reportInput: true });
  if (result.success) return { ok: true, value: result.data as IsolationRecordOf[K] };
  return { ok: false, problems: result.error.issues.flatMap(toProblems) };
}

/** Like parseRecord, but throws IsolationRecordError naming the problems. */
export function requireRecord<K extends IsolationRecordKind>(kind: K, raw: unknown): IsolationRecordOf[K] {
  const parsed = parseRecord(kind, raw);
  if (!parsed.ok) throw new IsolationRecordError(kind, parsed.problems);
  return parsed.value;
}

function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return out;
}

function toProblems(issue: z.core.$ZodIssue): RecordProblem[] {
  const path = jsonPath(issue.path);
  const last = issue.path[issue.path.length - 1];
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ code: 'UNKNOWN_FIELD', path: jsonPath([...issue.path, key]), message: `unknown field '${key}'` }));
    case 'invalid_type':
      if (issue.path.length === 0) return [{ code: 'NOT_AN_OBJECT', path, message: issue.message }];
      if (issue.input === undefined) return [{ code: 'MISSING_FIELD', path, message: `missing field '${String(last)}'` }];
      return [{ code: 'INVALID_VALUE', path, message: issue.message }];
    case 'invalid_value':
      if (issue.input === undefined) return [{ code: 'MISSING_FIELD', path, message: `missing field '${String(last)}'` }];
      if (issue.path.length === 1 && last === 'schemaVersion') {
        return [{ code: 'WRONG_SCHEMA_VERSION', path, message: `schemaVersion ${JSON.stringify(issue.input)} is not supported (expected 1)` }];
      }
      if (issue.path.length === 1 && last === 'kind') return [{ code: 'WRONG_KIND', path, message: `kind ${JSON.stringify(issue.input)} is not ${String(issue.values[0])}` }];
      return [{ code: 'UNKNOWN_ENUM_VALUE', path, message: `unknown value ${JSON.stringify(issue.input)}; expected one of ${issue.values.map(String).join(', ')}` }];
    case 'custom': {
      const problem = (issue.params as { problem?: RecordProblemCode } | undefined)?.problem ?? 'INVALID_VALUE';
      return [{ code: problem, path, message: issue.message }];
    }
    default:
      return [{ code: 'INVALID_VALUE', path, message: issue.message }];
  }
}
