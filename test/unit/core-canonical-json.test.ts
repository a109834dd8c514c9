import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CanonicalJsonError, canonicalJson, isCanonicalParse } from '../../core/canonical-json.js';
import { digestOf, digestOfText, isDigest, isSha256Hex, sha256Hex } from '../../core/digest.js';

test('canonicalJson: accepted values', async (t) => {
  const cases: { name: string; value: unknown; want: string }[] = [
    { name: 'null', value: null, want: 'null' },
    { name: 'booleans', value: [true, false], want: '[true,false]' },
    { name: 'integers and fractions', value: [0, 1, -1, 1.5, 1e21, 1e-7], want: '[0,1,-1,1.5,1e+21,1e-7]' },
    { name: 'negative zero is written as 0', value: -0, want: '0' },
    { name: 'keys sorted, no whitespace', value: { b: 1, a: { d: [], c: {} } }, want: '{"a":{"c":{},"d":[]},"b":1}' },
    { name: 'keys sorted by UTF-16 code unit', value: { b: 0, B: 0, é: 0, '\u{1F600}': 0, '\uFFFF': 0 }, want: '{"B":0,"b":0,"é":0,"\u{1F600}":0,"\uFFFF":0}' },
    { name: 'strings escaped as JSON.stringify does', value: 'a"b\\c\n\u0001\u2028', want: JSON.stringify('a"b\\c\n\u0001\u2028') },
    { name: 'undefined property is left out', value: { a: undefined, b: 2 }, want: '{"b":2}' },
    { name: 'null-prototype object', value: Object.assign(Object.create(null) as object, { z: 1, y: 2 }), want: '{"y":2,"z":1}' },
    { name: 'shared (non-cyclic) reference', value: ((o) => ({ a: o, b: o }))({ x: 1 }), want: '{"a":{"x":1},"b":{"x":1}}' },
  ];
  for (const c of cases) await t.test(c.name, () => assert.equal(canonicalJson(c.value), c.want));
});

test('canonicalJson: refused values name where they are', async (t) => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const cases: { name: string; value: unknown; at: string }[] = [
    { name: 'NaN', value: { a: NaN }, at: '$.a' },
    { name: 'Infinity', value: [Infinity], at: '$[0]' },
    { name: '-Infinity', value: -Infinity, at: '$' },
    { name: 'undefined in an array', value: [1, undefined], at: '$[1]' },
    { name: 'array hole', value: [1, , 3], at: '$[1]' }, // eslint-disable-line no-sparse-arrays
    { name: 'top-level undefined', value: undefined, at: '$' },
    { name: 'bigint', value: { n: 1n }, at: '$.n' },
    { name: 'function', value: { f: () => 1 }, at: '$.f' },
    { name: 'symbol', value: [Symbol('s')], at: '$[0]' },
    { name: 'Date', value: { d: new Date(0) }, at: '$.d' },
    { name: 'Map', value: new Map(), at: '$' },
    { name: 'cycle', value: cyclic, at: '$.self' },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.throws(() => canonicalJson(c.value), (e: unknown) => e instanceof CanonicalJsonError && e.at === c.at && e.code === 'CANONICAL_JSON_INVALID');
    });
  }
});

test('canonicalJson parses back to an equal value', () => {
  const v = { z: [1, 'two', { y: null, x: false }], a: 'ü\u0000' };
  assert.deepEqual(JSON.parse(canonicalJson(v)), v);
});

test('sha256Hex and digestOf', async (t) => {
  await t.test('known vectors', () => {
    assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(sha256Hex(new Uint8Array([0x61, 0x62, 0x63])), sha256Hex('abc'));
  });
  await t.test('digestOf hashes the canonical text, independent of key order', () => {
    assert.equal(digestOf({ b: 1, a: 2 }), `sha256:${sha256Hex('{"a":2,"b":1}')}`);
    assert.equal(digestOf({ b: 1, a: 2 }), digestOf({ a: 2, b: 1 }));
    assert.notEqual(digestOf({ a: 1 }), digestOf({ a: '1' }));
    assert.ok(isDigest(digestOf(null)));
    assert.ok(!isDigest('sha256:ABC'));
  });
});

test('canonicalJson: refusals say why, in an error named CanonicalJsonError', async (t) => {
  const cyclic: unknown[] = [];
  cyclic.push(cyclic);
  const cases: { name: string; value: unknown; message: string }[] = [
    { name: 'NaN', value: { a: NaN }, message: 'cannot write canonical JSON at $.a: non-finite number NaN' },
    { name: '-Infinity', value: -Infinity, message: 'cannot write canonical JSON at $: non-finite number -Infinity' },
    { name: 'cycle', value: cyclic, message: 'cannot write canonical JSON at $[0]: cycle' },
    { name: 'bigint', value: { n: 1n }, message: 'cannot write canonical JSON at $.n: unsupported type bigint' },
    { name: 'top-level undefined', value: undefined, message: 'cannot write canonical JSON at $: unsupported type undefined' },
    // An array slot is refused by its own rule, not as "unsupported type undefined".
    { name: 'undefined in an array', value: [1, undefined], message: 'cannot write canonical JSON at $[1]: undefined (or a hole) in an array' },
    { name: 'class instance', value: { d: new Date(0) }, message: 'cannot write canonical JSON at $.d: not a plain object' },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.throws(() => canonicalJson(c.value), (e: unknown) => e instanceof CanonicalJsonError && e.name === 'CanonicalJsonError' && e.message === c.message);
    });
  }
});

test('isDigest and isSha256Hex: anchored on both ends, lowercase hex of exactly 64', () => {
  const hex = 'ab'.repeat(32);
  assert.equal(isDigest(`sha256:${hex}`), true);
  assert.equal(isDigest(`xsha256:${hex}`), false);
  assert.equal(isDigest(`sha256:${hex}0`), false);
  assert.equal(isDigest(hex), false);
  assert.equal(isSha256Hex(hex), true);
  assert.equal(isSha256Hex('a'), false);
  assert.equal(isSha256Hex('g'.repeat(64)), false);
  assert.equal(isSha256Hex(`${hex}0`), false);
  assert.equal(isSha256Hex(`0${hex}`), false);
  assert.equal(isSha256Hex(hex.toUpperCase()), false);
});

test('digestOfText: the digest of the concatenation, however it is split', () => {
  const whole = 'one line\nanother line\n';
  assert.equal(digestOfText([whole]), `sha256:${sha256Hex(whole)}`);
  assert.equal(digestOfText(['one ', 'line\nanother', ' line\n']), `sha256:${sha256Hex(whole)}`);
  assert.equal(digestOfText([]), `sha256:${sha256Hex('')}`);
});

/** canonicalJson(JSON.parse(text)) === text, a refusal counting as false: what isCanonicalParse must equal. */
function canonicalByWriting(text: string): boolean {
  try {
    return canonicalJson(JSON.parse(text)) === text;
  } catch {
    return false;
  }
}

test('isCanonicalParse equals re-writing the parsed value canonically, on canonical texts and on every way a text can differ', () => {
  // Keys that sort in surprising ways: integer-like ones (V8 keeps them first, ascending), case, non-ASCII,
  // astral characters, escapes, the empty key and __proto__ (JSON.parse makes it an own property).
  const key = fc.oneof(fc.constantFrom('0', '1', '10', '2', '01', '-1', 'a', 'B', 'b', 'é', '\u{1F600}', '\uFFFF', '', '__proto__', 'a"b', 'x\n'), fc.string({ maxLength: 3 }));
  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom(null, true, false, 0, -1, 1.5, 1e21, 1e-7, 'a', 'é\u2028', '"\\'),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ maxLength: 4 }),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(key, tie('value'), { maxKeys: 4 }),
    ),
  })).value;
  // Texts JSON.parse accepts that are canonical or not: spacing, shuffled keys, duplicates, other
  // spellings of the same number or string, numbers beyond double range.
  const text = fc.oneof(
    json.map((v) => canonicalJson(v)),
    json.map((v) => JSON.stringify(v)),
    json.map((v) => JSON.stringify(v, null, 1)),
    json.map((v) => canonicalJson(v).replace(/"a"/g, '"\\u0061"')),
    json.map((v) => canonicalJson(v).replace(/:0([,}\]])/g, ':0.0$1')),
    json.map((v) => canonicalJson(v).replace(/:1([,}\]])/g, ':1e0$1')),
    fc.tuple(key, key, json, json).map(([k1, k2, a, b]) => `{${JSON.stringify(k1)}:${canonicalJson(a)},${JSON.stringify(k2)}:${canonicalJson(b)}}`),
    fc.constantFrom('{"x":1e400}', '[1e400]', '{"a":1,"a":1}', '{"a":1,"a":2}', '{"b":1,"a":1}', '{"1":0,"0":0}', '{"0":0,"1":0}', '{"10":0,"2":0}', '{"2":0,"10":0}', '{"__proto__":1}', '-0', '[-0]', '1E2', '"\\/"'),
  );
  fc.assert(
    fc.property(text, (t) => {
      assert.equal(isCanonicalParse(JSON.parse(t), t), canonicalByWriting(t), t);
    }),
    { numRuns: 5000 },
  );
});
