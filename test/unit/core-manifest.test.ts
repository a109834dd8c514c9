import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf } from '../../core/digest.js';
import {
  applyDelta, applyDeltaBySorting, applyDeltaFrozen, diffManifests, freezeManifest, isDeepFrozen, validateApplied, manifestDigest, manifestDigestValue, measuredEntry, measuredEntryJson, sortManifest, validateManifest, type Manifest, type ManifestEntry, type ManifestProblem,
} from '../../core/manifest.js';
import { compareBytes, isCleanRelativePath } from '../../core/relative-path.js';

const H = (c: string): string => c.repeat(64);
const dir = (path: string, extra: Partial<ManifestEntry> = {}): ManifestEntry => ({ path, type: 'dir', mode: 0o755, uid: 0, gid: 0, ...extra });
const file = (path: string, extra: Partial<ManifestEntry> = {}): ManifestEntry => ({ path, type: 'file', mode: 0o644, uid: 1000, gid: 1000, size: 3, sha256: H('a'), ...extra });
const link = (path: string, target: string): ManifestEntry => ({ path, type: 'symlink', mode: 0o777, uid: 0, gid: 0, target });

const base: Manifest = { entries: [dir('d'), file('d/f'), link('l', 'd/f'), file('z')] };

test('manifestDigest measures every field it claims to, and only those', async (t) => {
  const d0 = manifestDigest(base);
  const variants: { name: string; m: Manifest; changes: boolean }[] = [
    { name: 'same content', m: structuredClone(base), changes: false },
    { name: 'uid (chown is measured)', m: { entries: [dir('d'), file('d/f', { uid: 1001 }), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'gid', m: { entries: [dir('d'), file('d/f', { gid: 0 }), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'setuid bit', m: { entries: [dir('d'), file('d/f', { mode: 0o4644 }), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'sticky bit on a dir', m: { entries: [dir('d', { mode: 0o1755 }), file('d/f'), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'content', m: { entries: [dir('d'), file('d/f', { sha256: H('b') }), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'size', m: { entries: [dir('d'), file('d/f', { size: 4 }), link('l', 'd/f'), file('z')] }, changes: true },
    { name: 'symlink target', m: { entries: [dir('d'), file('d/f'), link('l', 'd'), file('z')] }, changes: true },
    { name: 'root owner', m: { ...structuredClone(base), root: { mode: 0o755, uid: 0, gid: 0 } }, changes: true },
    { name: 'file-type bits above 0o7777 are ignored', m: { entries: [dir('d', { mode: 0o40755 }), file('d/f'), link('l', 'd/f'), file('z')] }, changes: false },
  ];
  for (const v of variants) await t.test(v.name, () => assert.equal(manifestDigest(v.m) !== d0, v.changes));
  await t.test('is a sha256: digest', () => assert.match(d0, /^sha256:[0-9a-f]{64}$/));
  await t.test('equals digestOf its value, for sizes around the streaming batch', () => {
    for (const n of [0, 1, 1023, 1024, 1025, 2048, 2049]) {
      const entries = Array.from({ length: n }, (_, i) => file(`f${String(i).padStart(5, '0')}`));
      for (const root of [undefined, { mode: 0o755, uid: 0, gid: 0 }]) {
        const m: Manifest = { entries, root };
        assert.equal(manifestDigest(m), digestOf(manifestDigestValue(m)), `n=${n} root=${root !== undefined}`);
      }
    }
  });
});

test('measuredEntryJson writes exactly what canonicalJson(measuredEntry) writes, and refuses what it refuses', () => {
  const number = fc.oneof(fc.integer(), fc.nat({ max: 0o177777 }), fc.double(), fc.constant(-0), fc.constant(2 ** 53));
  const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('a"b', 'back\\slash', '\u2028', '\ud800', 'ü/ß'));
  // Mostly the declared types; sometimes a value only an untyped caller could pass, so that the choice
  // between the direct writer and the generic one is seen in the output.
  const odd = fc.oneof(fc.constantFrom(null, true, '7', 7, -1, Number.NaN, { b: 1, a: 2 }), fc.array(fc.nat(), { maxLength: 2 }));
  const field = <T>(declared: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 6, arbitrary: declared }, { weight: 1, arbitrary: odd });
  const entry = fc.record(
    {
      path: field(text),
      type: fc.constantFrom('file', 'dir', 'symlink', 'fifo'),
      mode: field(number),
      uid: field(number),
      gid: field(number),
      size: field(number),
      sha256: field(text),
      target: field(text),
    },
    { requiredKeys: ['type'] },
  ) as fc.Arbitrary<unknown> as fc.Arbitrary<ManifestEntry>;
  fc.assert(
    fc.property(entry, (e) => {
      let want: string | Error;
      try {
        want = canonicalJson(measuredEntry(e));
      } catch (err) {
        want = err as Error;
      }
      if (typeof want === 'string') assert.equal(measuredEntryJson(e), want);
      else assert.throws(() => measuredEntryJson(e), { name: want.name, message: want.message, code: 'CANONICAL_JSON_INVALID' } as object);
    }),
    { numRuns: 5000 },
  );
  // Numbers are checked in key order, so the first bad one named is the same one.
  const bad = { ...file('x'), gid: Number.NaN, size: Number.POSITIVE_INFINITY, uid: Number.NaN };
  assert.throws(() => measuredEntryJson(bad), { message: 'cannot write canonical JSON at $.gid: non-finite number NaN' });
  assert.throws(() => measuredEntryJson({ ...bad, gid: 1 }), { message: 'cannot write canonical JSON at $.size: non-finite number Infinity' });
  assert.throws(() => measuredEntryJson({ ...bad, gid: 1, size: 1 }), { message: 'cannot write canonical JSON at $.uid: non-finite number NaN' });
  // A plain entry of each type, written directly, exactly.
  assert.equal(measuredEntryJson(file('d/f')), `{"gid":1000,"mode":420,"path":"d/f","sha256":"${H('a')}","size":3,"type":"file","uid":1000}`);
  assert.equal(measuredEntryJson(dir('d', { mode: 0o40755 })), '{"gid":0,"mode":493,"path":"d","type":"dir","uid":0}');
  assert.equal(measuredEntryJson(link('l', 'd/f')), '{"gid":0,"mode":511,"path":"l","target":"d/f","type":"symlink","uid":0}');
});

test('diffManifests: table', async (t) => {
  const cases: { name: string; next: Manifest; want: { added: string[]; modified: string[]; deleted: string[] } }[] = [
    { name: 'no change', next: structuredClone(base), want: { added: [], modified: [], deleted: [] } },
    { name: 'add file', next: { entries: [dir('d'), file('d/f'), file('d/g'), link('l', 'd/f'), file('z')] }, want: { added: ['d/g'], modified: [], deleted: [] } },
    { name: 'delete subtree', next: { entries: [link('l', 'd/f'), file('z')] }, want: { added: [], modified: [], deleted: ['d', 'd/f'] } },
    { name: 'chown only', next: { entries: [dir('d'), file('d/f'), link('l', 'd/f'), file('z', { uid: 0 })] }, want: { added: [], modified: ['z'], deleted: [] } },
    { name: 'chmod dir', next: { entries: [dir('d', { mode: 0o700 }), file('d/f'), link('l', 'd/f'), file('z')] }, want: { added: [], modified: ['d'], deleted: [] } },
    { name: 'type change file -> symlink', next: { entries: [dir('d'), file('d/f'), link('l', 'd/f'), link('z', 'd')] }, want: { added: [], modified: ['z'], deleted: [] } },
    { name: 'everything to empty', next: { entries: [] }, want: { added: [], modified: [], deleted: ['d', 'd/f', 'l', 'z'] } },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(diffManifests(base, c.next), c.want));
  await t.test('from empty', () => assert.deepEqual(diffManifests({ entries: [] }, base), { added: ['d', 'd/f', 'l', 'z'], modified: [], deleted: [] }));
});

test('validateManifest: table', async (t) => {
  const cases: { name: string; m: Manifest; codes: string[] }[] = [
    { name: 'valid', m: base, codes: [] },
    { name: 'empty', m: { entries: [] }, codes: [] },
    { name: 'unsorted', m: { entries: [file('z'), dir('d')] }, codes: ['MANIFEST_UNSORTED'] },
    { name: 'duplicate', m: { entries: [file('a'), file('a')] }, codes: ['MANIFEST_DUPLICATE'] },
    { name: 'parent missing', m: { entries: [file('d/f')] }, codes: ['MANIFEST_PARENT_MISSING'] },
    { name: 'parent is a file', m: { entries: [file('d'), file('d/f')] }, codes: ['MANIFEST_PARENT_MISSING'] },
    { name: 'leading slash', m: { entries: [file('/a')] }, codes: ['MANIFEST_PATH_INVALID'] },
    { name: 'dot-dot segment', m: { entries: [dir('d'), file('d/../x')] }, codes: ['MANIFEST_PATH_INVALID'] },
    { name: 'file without hash', m: { entries: [file('a', { sha256: undefined })] }, codes: ['MANIFEST_ENTRY_INVALID'] },
    { name: 'symlink without target', m: { entries: [{ path: 'a', type: 'symlink', mode: 0o777, uid: 0, gid: 0 }] }, codes: ['MANIFEST_ENTRY_INVALID'] },
    { name: 'mode with type bits', m: { entries: [dir('d', { mode: 0o40755 })] }, codes: ['MANIFEST_ENTRY_INVALID'] },
    { name: 'negative uid', m: { entries: [file('a', { uid: -1 })] }, codes: ['MANIFEST_ENTRY_INVALID'] },
    { name: 'byte order, not UTF-16 order', m: { entries: [file('\uFFFF'), file('\u{1F600}')] }, codes: [] },
    { name: "'-' sorts before '/'", m: { entries: [dir('a'), file('a-b'), file('a/b')] }, codes: [] },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(validateManifest(c.m).map((p) => p.code), c.codes));
});

test('sortManifest sorts by UTF-8 byte order', () => {
  const m = sortManifest({ entries: [file('\u{1F600}'), file('\uFFFF'), file('a/b'), file('a-b'), dir('a')] });
  assert.deepEqual(m.entries.map((e) => e.path), ['a', 'a-b', 'a/b', '\uFFFF', '\u{1F600}']);
  const bytes = m.entries.map((e) => Buffer.from(e.path));
  for (let i = 1; i < bytes.length; i++) assert.ok(Buffer.compare(bytes[i - 1]!, bytes[i]!) < 0);
});

test('compareBytes agrees with Buffer.compare', () => {
  const words = ['', 'a', 'b', 'ab', 'a/b', 'a-b', 'é', '\uFFFF', '\u{10000}', '\u{1F600}', '\uE000', 'z\u{1F600}', 'z\uFFFD'];
  for (const x of words) for (const y of words) assert.equal(Math.sign(compareBytes(x, y)), Buffer.compare(Buffer.from(x), Buffer.from(y)), `${x} vs ${y}`);
});

test('isCleanRelativePath: table', () => {
  const good = ['a', 'a/b', '...', '.a', 'a..'];
  const bad = ['', '/', '/a', 'a/', 'a//b', '.', '..', 'a/.', 'a/../b', 'a\0b'];
  for (const p of good) assert.ok(isCleanRelativePath(p), p);
  for (const p of bad) assert.ok(!isCleanRelativePath(p), p);
});

test('manifestDigestValue names the format; measuredEntry measures only the fields of the entry type', () => {
  assert.equal(manifestDigestValue(base).format, 'worldline.manifest/v1');
  assert.deepEqual(measuredEntry(dir('d')), { path: 'd', type: 'dir', mode: 0o755, uid: 0, gid: 0 });
  assert.deepEqual(measuredEntry(link('l', 'd/f')), { path: 'l', type: 'symlink', mode: 0o777, uid: 0, gid: 0, target: 'd/f' });
  assert.deepEqual(measuredEntry(file('f')), { path: 'f', type: 'file', mode: 0o644, uid: 1000, gid: 1000, size: 3, sha256: H('a') });
  // Missing content fields are measured as impossible values, never as absent (so they still differ).
  assert.deepEqual(measuredEntry(file('f', { size: undefined, sha256: undefined })), { path: 'f', type: 'file', mode: 0o644, uid: 1000, gid: 1000, size: -1, sha256: '' });
  assert.deepEqual(measuredEntry({ path: 'l', type: 'symlink', mode: 0o777, uid: 0, gid: 0 }), { path: 'l', type: 'symlink', mode: 0o777, uid: 0, gid: 0, target: '' });
});

test('applyDelta: deletes, upserts, keeps byte order and the root attributes', () => {
  const next = applyDelta(base, { upsert: [file('a'), file('z', { size: 9 })], deleted: ['l'] });
  assert.deepEqual(next, { entries: [file('a'), dir('d'), file('d/f'), file('z', { size: 9 })] });
  const rooted: Manifest = { ...base, root: { mode: 0o755, uid: 0, gid: 0 } };
  assert.deepEqual(applyDelta(rooted, { upsert: [], deleted: [] }), rooted);
  assert.deepEqual(applyDelta(rooted, { upsert: [], deleted: [], rootAttributes: { mode: 0o700, uid: 1, gid: 1 } }).root, { mode: 0o700, uid: 1, gid: 1 });
  assert.deepEqual(applyDelta({ entries: [] }, { upsert: [], deleted: [], rootAttributes: { mode: 0o700, uid: 1, gid: 1 } }), { entries: [], root: { mode: 0o700, uid: 1, gid: 1 } });
  assert.equal('root' in applyDelta(base, { upsert: [], deleted: [] }), false, 'no root attributes are invented');
});

test('applyDelta: the merge over a sorted base gives what the general path gives, for any base and delta', () => {
  const names = ['a', 'a/b', 'a0', 'b', '\u00e9', 'z'];
  const entry = fc.tuple(fc.constantFrom(...names), fc.nat(5)).map(([p, size]) => file(p, { size }));
  fc.assert(
    fc.property(
      fc.array(entry, { maxLength: 6 }),
      fc.boolean(),
      fc.array(entry, { maxLength: 6 }),
      fc.array(fc.constantFrom(...names), { maxLength: 4 }),
      fc.option(fc.record({ mode: fc.nat(0o777), uid: fc.nat(2), gid: fc.nat(2) }), { nil: undefined }),
      (raw, sortIt, upsert, deleted, rootAttributes) => {
        // Sorted and deduplicated (the merge), or as drawn: unsorted or with a path twice (the general path).
        const entries = sortIt ? [...new Map(raw.map((e) => [e.path, e])).values()].sort((x, y) => compareBytes(x.path, y.path)) : raw;
        const m: Manifest = { entries, ...(rootAttributes ? { root: rootAttributes } : {}) };
        const delta = { upsert, deleted, ...(rootAttributes && !sortIt ? { rootAttributes } : {}) };
        assert.deepEqual(applyDelta(m, delta), applyDeltaBySorting(m, delta));
      },
    ),
    { numRuns: 3000 },
  );
});

test('validateApplied: checking only the change gives the problems the whole check gives', () => {
  const names = ['a', 'a/b', 'a/b/c', 'a/c', 'a0', 'b', 'b/x', '\u00e9', '\u00e9/f', 'bad//p'];
  const deepFreeze = (m: Manifest): Manifest => Object.freeze({ ...m, entries: Object.freeze(m.entries.map((e) => Object.freeze({ ...e }))) as ManifestEntry[] });
  const copy = (m: Manifest): Manifest => ({ ...m, entries: m.entries.map((e) => ({ ...e })) });
  const entry = (p: string): fc.Arbitrary<ManifestEntry> =>
    fc.oneof(fc.constant(dir(p)), fc.constant(file(p)), fc.constant({ path: p, type: 'symlink' as const, mode: 0o777, uid: 0, gid: 0, target: 'x' }), fc.constant(file(p, { sha256: 'nope' })));
  // A valid base: chosen paths, each with its parents as directories.
  const baseArb = fc.subarray(names.filter((p) => !p.includes('//'))).map((chosen) => {
    const all = new Map<string, ManifestEntry>();
    for (const p of chosen) {
      const parts = p.split('/');
      for (let i = 1; i < parts.length; i++) all.set(parts.slice(0, i).join('/'), dir(parts.slice(0, i).join('/')));
      if (!all.has(p)) all.set(p, p.length % 2 ? file(p) : dir(p));
    }
    return { entries: [...all.values()].sort((x, y) => compareBytes(x.path, y.path)) };
  });
  const deltaArb = fc.record({
    upsert: fc.array(fc.constantFrom(...names).chain(entry), { maxLength: 4 }),
    deleted: fc.array(fc.constantFrom(...names), { maxLength: 3 }),
  });
  let fast = 0;
  fc.assert(
    fc.property(baseArb, deltaArb, (raw, delta) => {
      const base = deepFreeze(raw);
      assert.deepEqual(validateManifest(base), []); // now known valid
      assert.deepEqual(applyDelta(base, delta), applyDeltaBySorting(base, delta), 'applyDelta over a known-valid base');
      const next = deepFreeze(applyDelta(base, delta));
      const expected = validateManifest(copy(next)); // a copy: the whole check, never the memo
      assert.deepEqual(validateApplied(base, delta, next), expected);
      const frozen = applyDeltaFrozen(base, delta); // made frozen in one pass: the same manifest, the same answer
      assert.deepEqual(frozen, next);
      assert.ok(isDeepFrozen(frozen));
      assert.deepEqual(validateApplied(base, delta, frozen), expected);
      if (expected.length === 0) {
        fast++;
        assert.deepEqual(validateManifest(next), [], 'a valid applied manifest is known valid');
      }
    }),
    { numRuns: 5000 },
  );
  assert.ok(fast > 500, `only ${fast} valid applied manifests were drawn`);
  // A base nobody validated gets the whole check, whatever the delta.
  const invalid: Manifest = { entries: [file('z'), file('a')] };
  assert.deepEqual(validateApplied(invalid, { upsert: [], deleted: [] }, applyDelta(invalid, { upsert: [], deleted: [] })), validateManifest(applyDelta(invalid, { upsert: [], deleted: [] })));
});

test('manifestDigest: frozen manifests changed by deltas again and again digest as their canonical value (kept chunk texts)', () => {
  const freeze = (m: Manifest): Manifest => Object.freeze({ ...m, entries: Object.freeze(m.entries.map((e) => (Object.isFrozen(e) ? e : Object.freeze({ ...e })))) as ManifestEntry[] });
  const names = Array.from({ length: 6000 }, (_, i) => `d${i % 7}/f${String(i).padStart(5, '0')}\u00e9`);
  let m = freeze({ root: { mode: 0o755, uid: 0, gid: 0 }, entries: [...Array.from({ length: 7 }, (_, i) => dir(`d${i}`)), ...names.map((p) => file(p))].sort((x, y) => compareBytes(x.path, y.path)) });
  assert.equal(manifestDigest(m), digestOf(manifestDigestValue(m)));
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(names.length - 1), fc.constantFrom('modify', 'delete', 'add')), { minLength: 1, maxLength: 6 }),
      (ops) => {
        const upsert: ManifestEntry[] = [];
        const deleted: string[] = [];
        for (const [i, op] of ops) {
          if (op === 'delete') deleted.push(names[i]!);
          else upsert.push(file(op === 'add' ? `${names[i]!}+` : names[i]!, { size: i }));
        }
        m = freeze(applyDelta(m, { upsert, deleted }));
        const text = digestOf(manifestDigestValue(m));
        assert.equal(manifestDigest(m), text);
        assert.equal(manifestDigest(m), text, 'digested again, from the kept chunks only');
      },
    ),
    { numRuns: 200 },
  );
});

test('manifestDigest: kept chunks skipped whole, or not, digest as the canonical value: entries after one, one cut short, one changed inside', () => {
  const freeze = (entries: ManifestEntry[]): Manifest => Object.freeze({ entries: Object.freeze(entries.map((e) => (Object.isFrozen(e) ? e : Object.freeze({ ...e })))) as ManifestEntry[] });
  // Few entries: a chunk ended by the manifest's end; then the same entries with more after them, and
  // the manifest cut short inside that chunk.
  const short = freeze(Array.from({ length: 40 }, (_, i) => file(`f${String(i).padStart(3, '0')}`)));
  assert.equal(manifestDigest(short), digestOf(manifestDigestValue(short)));
  const longer = freeze([...short.entries, file('g000'), file('g001')]);
  assert.equal(manifestDigest(longer), digestOf(manifestDigestValue(longer)), 'entries appended after the kept chunk');
  const cut = freeze(short.entries.slice(0, 20));
  assert.equal(manifestDigest(cut), digestOf(manifestDigestValue(cut)), 'the kept chunk runs past the manifest');
  // Many entries: chunks closed by the rule are kept and skipped whole; one changed entry inside one.
  const many = freeze(Array.from({ length: 9000 }, (_, i) => file(`p/${String(i).padStart(5, '0')}`)).sort((x, y) => compareBytes(x.path, y.path)));
  const big = freeze([dir('p'), ...many.entries]);
  assert.equal(manifestDigest(big), digestOf(manifestDigestValue(big)));
  const changed = freeze(big.entries.map((e, i) => (i === 4500 ? file(e.path, { size: 99 }) : e)));
  assert.equal(manifestDigest(changed), digestOf(manifestDigestValue(changed)), 'one entry changed inside a kept chunk');
  assert.equal(manifestDigest(big), digestOf(manifestDigestValue(big)), 'the first manifest again');
});

test('applyDelta: a delta that touches 150k paths gives what sorting gives', () => {
  const n = 150_000;
  const base: Manifest = { entries: Array.from({ length: n }, (_, i) => file(`f${String(i).padStart(6, '0')}`)) };
  assert.deepEqual(validateManifest(base), []);
  const upsert = base.entries.filter((_, i) => i % 2 === 0).map((e) => file(e.path, { size: 7 }));
  const deleted = base.entries.filter((_, i) => i % 2 === 1).map((e) => e.path);
  const next = applyDelta(base, { upsert, deleted });
  assert.equal(next.entries.length, n / 2);
  assert.deepEqual(next, applyDeltaBySorting(base, { upsert, deleted }));
});

test('freezeManifest: frozen all the way down, entries already frozen shared, a frozen one returned as it is', () => {
  const shared = Object.freeze(file('a'));
  const m: Manifest = { entries: [shared, file('b')], root: { mode: 0o755, uid: 0, gid: 0 } };
  const f = freezeManifest(m);
  assert.ok(Object.isFrozen(f) && Object.isFrozen(f.entries) && Object.isFrozen(f.root) && f.entries.every((e) => Object.isFrozen(e)));
  assert.equal(f.entries[0], shared);
  assert.notEqual(f.entries[1], m.entries[1]);
  assert.deepEqual(f, m);
  assert.ok(isDeepFrozen(f));
  assert.equal(isDeepFrozen(m), false);
  assert.equal(freezeManifest(f), f);
  assert.equal(manifestDigest(f), manifestDigest(m));
});

test('applyDeltaFrozen: frozen all the way down, the base entries shared, the delta copied, never frozen in the caller\'s hands', () => {
  const b = freezeManifest({ entries: [dir('d'), file('d/f'), file('z')], root: { mode: 0o755, uid: 0, gid: 0 } });
  const put = file('d/g', { size: 7 });
  const rootAttributes = { mode: 0o700, uid: 1, gid: 1 };
  const delta = { upsert: [put], deleted: ['z'], rootAttributes };
  const next = applyDeltaFrozen(b, delta);
  assert.deepEqual(next, applyDelta(b, delta));
  assert.ok(Object.isFrozen(next) && Object.isFrozen(next.entries) && Object.isFrozen(next.root) && next.entries.every((e) => Object.isFrozen(e)));
  assert.ok(isDeepFrozen(next));
  assert.equal(next.entries[0], b.entries[0]);
  assert.equal(next.entries[1], b.entries[1]);
  assert.notEqual(next.entries[2], put, 'the delta\'s entry is copied');
  assert.equal(Object.isFrozen(put), false, 'the caller\'s entry is left unfrozen');
  assert.equal(Object.isFrozen(rootAttributes), false, 'the caller\'s root attributes are left unfrozen');
  assert.equal(next.entries.length, 3, 'no room left over for the deleted entry');
  // A base that is not deep-frozen: the same manifest, frozen the general way.
  const loose: Manifest = { entries: [dir('d'), file('d/f'), file('z')] };
  const fromLoose = applyDeltaFrozen(loose, delta);
  assert.deepEqual(fromLoose, applyDelta(loose, delta));
  assert.ok(isDeepFrozen(fromLoose));
  assert.equal(Object.isFrozen(loose.entries[0]), false);
});

test('validateManifest: each problem names its path and says what is wrong', async (t) => {
  const only = (m: Manifest): ManifestProblem[] => validateManifest(m);
  await t.test('ordering and paths', () => {
    assert.deepEqual(only({ entries: [file('z'), file('a')] }), [{ code: 'MANIFEST_UNSORTED', path: 'a', message: 'sorts before z' }]);
    assert.deepEqual(only({ entries: [file('a'), file('a')] }), [{ code: 'MANIFEST_DUPLICATE', path: 'a', message: 'path appears twice' }]);
    assert.deepEqual(only({ entries: [file('d/f')] }), [{ code: 'MANIFEST_PARENT_MISSING', path: 'd/f', message: 'parent d is not a directory entry before it' }]);
    assert.deepEqual(only({ entries: [file('a//b')] }), [{ code: 'MANIFEST_PATH_INVALID', path: 'a//b', message: 'path must be relative, /-separated, without ., .. or empty segments' }]);
  });
  const shape: { name: string; e: ManifestEntry; message: string | null }[] = [
    { name: 'fractional mode', e: file('a', { mode: 0.5 }), message: 'mode must hold permission bits only' },
    { name: 'mode 0 (no permission bits at all)', e: file('a', { mode: 0 }), message: null },
    { name: 'every permission bit (0o7777)', e: file('a', { mode: 0o7777 }), message: null },
    { name: 'a file-type bit (0o100644)', e: file('a', { mode: 0o100644 }), message: 'mode must hold permission bits only' },
    { name: 'negative mode beyond 32 bits', e: file('a', { mode: -(2 ** 32) }), message: 'mode must hold permission bits only' },
    { name: 'permission bits above 32 bits (bitwise operators would see 0o644)', e: file('a', { mode: 2 ** 32 + 0o644 }), message: 'mode must hold permission bits only' },
    { name: 'uid at the 32-bit limit', e: file('a', { uid: 0xffffffff, gid: 0xffffffff }), message: null },
    { name: 'uid beyond 32 bits', e: file('a', { uid: 0x100000000 }), message: 'uid and gid must be 32-bit unsigned integers' },
    { name: 'empty file', e: file('a', { size: 0 }), message: null },
    { name: 'negative size', e: file('a', { size: -1 }), message: 'file needs a size' },
    { name: 'fractional size', e: file('a', { size: 1.5 }), message: 'file needs a size' },
    { name: 'file without size', e: file('a', { size: undefined }), message: 'file needs a size' },
    { name: 'sha256 too long', e: file('a', { sha256: H('a') + 'a' }), message: 'file needs a sha256' },
    { name: 'sha256 with a prefix', e: file('a', { sha256: 'x' + H('a') }), message: 'file needs a sha256' },
    { name: 'file with a target', e: file('a', { target: 'b' }), message: 'file has a target' },
    { name: 'symlink with a sha256', e: { ...link('a', 'b'), sha256: H('a') }, message: 'symlink has content fields' },
    { name: 'symlink with a size', e: { ...link('a', 'b'), size: 1 }, message: 'symlink has content fields' },
    { name: 'dir with a sha256', e: dir('a', { sha256: H('a') }), message: 'dir has file or symlink fields' },
    { name: 'dir with a size', e: dir('a', { size: 1 }), message: 'dir has file or symlink fields' },
    { name: 'dir with a target', e: dir('a', { target: 'b' }), message: 'dir has file or symlink fields' },
    { name: 'unknown type', e: { ...dir('a'), type: 'fifo' as 'dir' }, message: 'unknown type' },
  ];
  for (const s of shape) {
    await t.test(s.name, () => {
      const want = s.message === null ? [] : [{ code: 'MANIFEST_ENTRY_INVALID', path: 'a', message: s.message }];
      assert.deepEqual(only({ entries: [s.e] }), want);
    });
  }
});
