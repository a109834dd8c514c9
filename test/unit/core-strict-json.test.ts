// The strict JSON reader for evidence: the same values as JSON.parse on every valid text, and a named
// refusal of duplicate keys, deep nesting and oversize input, which JSON.parse accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStrictJson, StrictJsonError } from '../../core/evidence/strict-json.js';
import { outcomeOf } from '../support/error-code.js';

const LIMITS = { maxLength: 1 << 20, maxDepth: 64 };
const code = (f: () => unknown): string => outcomeOf(f, StrictJsonError);

test('property: every JSON text (compact or indented) reads as JSON.parse reads it', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.boolean(), (v, pretty) => {
      const text = JSON.stringify(v, null, pretty ? 2 : undefined);
      assert.deepEqual(parseStrictJson(text, LIMITS), JSON.parse(text));
    }),
    { numRuns: 1000, seed: 7 },
  );
});

test('property: on mangled texts it accepts exactly what JSON.parse accepts (no duplicate keys there), with the same value', () => {
  const mangled = fc.tuple(fc.jsonValue(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', '\\', ' ', '0', '-', 'e', '\u0001', 'tru', 'nul', '{"a":1}')).map(([v, at, ins]) => {
    const t = JSON.stringify(v);
    const k = t.length === 0 ? 0 : at % (t.length + 1);
    return t.slice(0, k) + ins + t.slice(k);
  });
  fc.assert(
    fc.property(mangled, (text) => {
      let expected: unknown;
      let ok = true;
      try {
        expected = JSON.parse(text);
      } catch {
        ok = false;
      }
      const got = code(() => parseStrictJson(text, LIMITS));
      if (got === 'JSON_DUPLICATE_KEY') return; // JSON.parse takes the last value; refusing is the point
      assert.equal(got === 'ok', ok, `${JSON.stringify(text)}: strict ${got}, JSON.parse ${ok ? 'accepts' : 'refuses'}`);
      if (ok) assert.deepEqual(parseStrictJson(text, LIMITS), expected);
    }),
    { numRuns: 3000, seed: 11 },
  );
});

test('duplicate keys, depth and size are refused by name; __proto__ is an ordinary key', () => {
  assert.equal(code(() => parseStrictJson('{"a":1,}', LIMITS)), 'JSON_INVALID');
  assert.equal(code(() => parseStrictJson('{"a":1,"b":{"c":2,"c":3}}', LIMITS)), 'JSON_DUPLICATE_KEY');
  assert.equal(code(() => parseStrictJson('{"a":1,"\\u0061":2}', LIMITS)), 'JSON_DUPLICATE_KEY', 'an escaped spelling of the same key');
  assert.equal(code(() => parseStrictJson('['.repeat(65) + ']'.repeat(65), LIMITS)), 'JSON_TOO_DEEP');
  assert.equal(code(() => parseStrictJson('['.repeat(64) + ']'.repeat(64), LIMITS)), 'ok');
  assert.equal(code(() => parseStrictJson(`"${'x'.repeat(100)}"`, { maxLength: 50, maxDepth: 4 })), 'JSON_TOO_LARGE');
  const proto = parseStrictJson('{"__proto__":{"polluted":true}}', LIMITS) as Record<string, unknown>;
  assert.deepEqual(Object.keys(proto), ['__proto__']);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
});
