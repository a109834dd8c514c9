// The worldline-benchmark-v1 report: measurements the examiner took, each with the bound it must meet,
// read strictly enough to be a verdict's input. One JSON object, exactly
//   { "format": "worldline-benchmark-v1", "benchmarks": [ { "name", "unit", "value", "min"?, "max"? }, … ] }
// with 1 to 1000 benchmarks, unique names, finite numbers, at least one bound each (min ≤ max when both).
// Any other key, a repeated key anywhere, or a value of another type makes the report unreadable: two
// readers of the same bytes must not come to different verdicts. The verdict is recomputed here from the
// numbers (inclusive bounds), never taken from the examiner: a benchmark out of its bounds is a failure.
import type { JUnitTotals } from './junit.js';

export const BENCHMARK_FORMAT = 'worldline-benchmark-v1';
export const MAX_BENCHMARKS = 1000;
const MAX_NAME = 200;
const MAX_UNIT = 32;

export interface Benchmark {
  name: string;
  unit: string;
  value: number;
  min?: number;
  max?: number;
}

export type BenchmarkParse = { ok: true; benchmarks: Benchmark[]; totals: JUnitTotals } | { ok: false; problem: string };

/** Whether `value` lies within the benchmark's bounds (both inclusive). */
export const withinBounds = (b: Benchmark): boolean => (b.min === undefined || b.value >= b.min) && (b.max === undefined || b.value <= b.max);

export function parseBenchmarkReport(text: string): BenchmarkParse {
  const repeated = repeatedKey(text);
  if (repeated !== undefined) return { ok: false, problem: `the key "${repeated.slice(0, 40)}" appears twice in one object` };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `not JSON: ${(err as Error).message.slice(0, 120)}` };
  }
  if (!isObject(doc)) return { ok: false, problem: 'the report is not a JSON object' };
  const extra = Object.keys(doc).filter((k) => k !== 'format' && k !== 'benchmarks');
  if (extra.length > 0) return { ok: false, problem: `unknown key "${extra[0]!.slice(0, 40)}" in the report` };
  if (doc.format !== BENCHMARK_FORMAT) return { ok: false, problem: `format is not "${BENCHMARK_FORMAT}"` };
  const list = doc.benchmarks;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BENCHMARKS) return { ok: false, problem: `benchmarks must be a list of 1 to ${MAX_BENCHMARKS}` };
  const benchmarks: Benchmark[] = [];
  const names = new Set<string>();
  for (const [i, entry] of list.entries()) {
    const b = benchmark(entry);
    if (typeof b === 'string') return { ok: false, problem: `benchmarks[${i}]: ${b}` };
    if (names.has(b.name)) return { ok: false, problem: `benchmarks[${i}]: the name "${b.name.slice(0, 40)}" is used twice` };
    names.add(b.name);
    benchmarks.push(b);
  }
  const failures = benchmarks.filter((b) => !withinBounds(b)).length;
  return { ok: true, benchmarks, totals: { tests: benchmarks.length, failures, errors: 0, skipped: 0 } };
}

function benchmark(entry: unknown): Benchmark | string {
  if (!isObject(entry)) return 'not an object';
  const extra = Object.keys(entry).filter((k) => !['name', 'unit', 'value', 'min', 'max'].includes(k));
  if (extra.length > 0) return `unknown key "${extra[0]!.slice(0, 40)}"`;
  const { name, unit, value, min, max } = entry;
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME) return `name must be a string of 1 to ${MAX_NAME} characters`;
  if (typeof unit !== 'string' || unit.length === 0 || unit.length > MAX_UNIT) return `unit must be a string of 1 to ${MAX_UNIT} characters`;
  if (!isFiniteNumber(value)) return 'value must be a finite number';
  if (min !== undefined && !isFiniteNumber(min)) return 'min must be a finite number';
  if (max !== undefined && !isFiniteNumber(max)) return 'max must be a finite number';
  if (min === undefined && max === undefined) return 'a benchmark needs a bound: min, max or both';
  if (min !== undefined && max !== undefined && min > max) return 'min is greater than max';
  return { name, unit, value, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The first key that appears twice in one JSON object of `text`, or undefined. JSON.parse keeps the last
 * of a repeated key silently; a reader that keeps the first would see another report. A scan of the
 * token stream (strings, and the brackets outside strings) is enough: a string followed by ':' is a key
 * of the innermost open object. Malformed JSON is left to JSON.parse.
 */
export function repeatedKey(text: string): string | undefined {
  const stack: (Set<string> | null)[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const raw = text.slice(i, j + 1);
      i = j + 1;
      while (i < text.length && /\s/.test(text[i]!)) i++;
      const keys = stack.at(-1);
      if (text[i] === ':' && keys) {
        let key: string;
        try {
          key = JSON.parse(raw) as string;
        } catch {
          return undefined;
        }
        if (keys.has(key)) return key;
        keys.add(key);
      }
      continue;
    }
    if (c === '{') stack.push(new Set());
    else if (c === '[') stack.push(null);
    else if (c === '}' || c === ']') stack.pop();
    i++;
  }
  return undefined;
}
