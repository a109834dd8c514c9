import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CanonicalJsonError, canonicalJson } from '../../core/canonical-json.js';
import { digestOf, isDigest, sha256Hex } from '../../core/digest.js';

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
