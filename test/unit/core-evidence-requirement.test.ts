import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  argvPath, boundVerifierPaths, boundVerifierPathsSorted, globMatches, qualifiedVerifierPath, requirementHash, requirementValue, verifierIdentity,
  type BindableEntry, type CheckDefinition, type RequirementInput,
} from '../../core/evidence/requirement.js';
import { digestOf, isDigest } from '../../core/digest.js';
import { compareBytes } from '../../core/relative-path.js';
import fc from 'fast-check';

const H = (c: string): string => c.repeat(64);

test('globMatches: table', async (t) => {
  const cases: { glob: string; path: string; want: boolean }[] = [
    { glob: 'checks/verify.sh', path: 'checks/verify.sh', want: true },
    { glob: 'checks/verify.sh', path: 'checks/verify.shx', want: false },
    { glob: 'checks/*', path: 'checks/verify.sh', want: true },
    { glob: 'checks/*', path: 'checks/sub/verify.sh', want: false },
    { glob: 'checks/*.sh', path: 'checks/a.sh', want: true },
    { glob: 'checks/*.sh', path: 'checks/a.py', want: false },
    { glob: '*.sh', path: 'a.sh', want: true },
    { glob: '*.sh', path: 'd/a.sh', want: false },
    { glob: 'checks/**', path: 'checks/a', want: true },
    { glob: 'checks/**', path: 'checks/a/b/c', want: true },
    { glob: 'checks/**', path: 'checksx/a', want: false },
    { glob: '**/*.py', path: 'a.py', want: true },
    { glob: '**/*.py', path: 'x/y/a.py', want: true },
    { glob: '**/*.py', path: 'x/y/a.pyc', want: false },
    { glob: 'a/**/b', path: 'a/b', want: true },
    { glob: 'a/**/b', path: 'a/x/y/b', want: true },
    { glob: 'a/**/b', path: 'a/x/yb', want: false },
    { glob: 't?st.sh', path: 'test.sh', want: true },
    { glob: 't?st.sh', path: 't/st.sh', want: false },
    { glob: 'a.b', path: 'axb', want: false, },
    { glob: 'a+(b)', path: 'a+(b)', want: true },
    { glob: 'a[1]', path: 'a[1]', want: true },
    { glob: 'a[1]', path: 'a1', want: false },
  ];
  for (const c of cases) {
    await t.test(`${c.glob} ~ ${c.path}`, () => assert.equal(globMatches(c.glob, c.path), c.want));
  }
});

test('argvPath: table', async (t) => {
  const cases: [string, string | null][] = [
    ['checks/verify.sh', 'checks/verify.sh'],
    ['./checks/verify.sh', 'checks/verify.sh'],
    ['/bin/sh', null],
    ['../x', null],
    ['a//b', null],
    ['-c', '-c'],
    ['', null],
    ['./', null],
    ['././', null],
    ['./././a', 'a'],
  ];
  for (const [arg, want] of cases) await t.test(JSON.stringify(arg), () => assert.equal(argvPath(arg), want));
});

const MANIFEST: BindableEntry[] = [
  { path: 'README.md', type: 'file' },
  { path: 'checks', type: 'dir' },
  { path: 'checks/lib', type: 'dir' },
  { path: 'checks/lib/common.sh', type: 'file' },
  { path: 'checks/verify.sh', type: 'file' },
  { path: 'checks/link.sh', type: 'symlink' },
  { path: 'tests', type: 'dir' },
  { path: 'tests/test_a.py', type: 'file' },
  { path: 'tests/unit/test_b.py', type: 'file' },
  { path: 'Makefile', type: 'file' },
];

test('boundVerifierPaths: table', async (t) => {
  const cases: { why: string; command: string[]; verifiers?: string[]; want: string[] }[] = [
    { why: 'argv names an existing file', command: ['sh', 'checks/verify.sh'], want: ['checks/verify.sh'] },
    { why: 'leading ./ is the same file', command: ['sh', './checks/verify.sh'], want: ['checks/verify.sh'] },
    { why: 'argv names a missing file', command: ['sh', 'checks/missing.sh'], want: [] },
    { why: 'make test binds nothing', command: ['make', 'test'], want: [] },
    { why: 'absolute paths are host paths, not Root files', command: ['/bin/sh', '-c', 'grep ok README.md'], want: [] },
    { why: 'a directory is not bound', command: ['sh', 'checks'], want: [] },
    { why: 'a symlink is not bound', command: ['sh', 'checks/link.sh'], want: [] },
    { why: 'globs add files, not dirs or symlinks', command: ['make', 'test'], verifiers: ['checks/**'], want: ['checks/lib/common.sh', 'checks/verify.sh'] },
    { why: 'argv and globs together, unique, byte order', command: ['sh', 'checks/verify.sh', 'Makefile'], verifiers: ['checks/*.sh', 'tests/**/*.py'], want: ['Makefile', 'checks/verify.sh', 'tests/test_a.py', 'tests/unit/test_b.py'] },
    { why: 'a glob matching nothing', command: ['true'], verifiers: ['nope/*'], want: [] },
  ];
  for (const c of cases) {
    await t.test(c.why, () => assert.deepEqual(boundVerifierPaths({ command: c.command, ...(c.verifiers ? { verifiers: c.verifiers } : {}) }, MANIFEST), c.want));
  }
});

test('verifierIdentity: order-independent, content- and path-sensitive, refuses duplicates', () => {
  const a = { path: 'r/a', sha256: H('a') };
  const b = { path: 'r/b', sha256: H('b') };
  const id = verifierIdentity([a, b]);
  assert.ok(isDigest(id));
  assert.equal(verifierIdentity([b, a]), id);
  assert.notEqual(verifierIdentity([a, { ...b, sha256: H('c') }]), id);
  assert.notEqual(verifierIdentity([a, { ...b, path: 'r/c' }]), id);
  assert.notEqual(verifierIdentity([a]), id);
  assert.notEqual(verifierIdentity([]), id);
  assert.throws(() => verifierIdentity([a, { ...a }]), /twice/);
  assert.equal(qualifiedVerifierPath('proj', 'checks/verify.sh'), 'proj/checks/verify.sh');
});

const CHECK: CheckDefinition = { name: 'verify', command: ['sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '10m', profile: 'legacy', env: ['LANG'] };
const BASE: RequirementInput = {
  checks: [CHECK, { name: 'lint', command: ['make', 'lint'], timeout: '5m', profile: 'legacy' }],
  verifierIdentity: verifierIdentity([{ path: 'proj/checks/verify.sh', sha256: H('1') }]),
  engineVersion: '0.1.0',
  isolation: { minimumLevel: 'os-sandboxed', controls: ['no-network'] },
  resources: { cpuMillis: 1000, memoryBytes: 2 ** 31, pids: 1024, outputBytes: 2 ** 26, ephemeralStorageBytes: 2 ** 30 },
};

test('requirementHash: every bound input changes it; absent optional lists hash as empty', async (t) => {
  const base = requirementHash(BASE);
  assert.ok(isDigest(base));
  assert.equal(base, digestOf(requirementValue(BASE)));
  const variants: [string, RequirementInput][] = [
    ['check order', { ...BASE, checks: [...BASE.checks].reverse() }],
    ['command', { ...BASE, checks: [{ ...CHECK, command: ['sh', 'checks/other.sh'] }, BASE.checks[1]!] }],
    ['verifier globs', { ...BASE, checks: [{ ...CHECK, verifiers: ['checks/*'] }, BASE.checks[1]!] }],
    ['timeout', { ...BASE, checks: [{ ...CHECK, timeout: '11m' }, BASE.checks[1]!] }],
    ['profile', { ...BASE, checks: [{ ...CHECK, profile: 'private-evaluator-v1' }, BASE.checks[1]!] }],
    ["a private check's report format", { ...BASE, checks: [{ ...CHECK, profile: 'private-evaluator-v1', reportFormat: 'gnatprove' }, BASE.checks[1]!] }],
    ['env names', { ...BASE, checks: [{ ...CHECK, env: ['LANG', 'TZ'] }, BASE.checks[1]!] }],
    ['name', { ...BASE, checks: [{ ...CHECK, name: 'verify2' }, BASE.checks[1]!] }],
    ['verifier identity', { ...BASE, verifierIdentity: verifierIdentity([{ path: 'proj/checks/verify.sh', sha256: H('2') }]) }],
    ['engine version', { ...BASE, engineVersion: '0.1.1' }],
    ['isolation rules', { ...BASE, isolation: { minimumLevel: 'vm-isolated', controls: ['no-network'] } }],
    ['a check removed', { ...BASE, checks: [CHECK] }],
    ['memory a check runs with', { ...BASE, resources: { ...BASE.resources!, memoryBytes: 2 ** 30 } }],
    ['cpu a check runs with', { ...BASE, resources: { ...BASE.resources!, cpuMillis: 500 } }],
    ['pids a check runs with', { ...BASE, resources: { ...BASE.resources!, pids: 64 } }],
    ['output a check may write', { ...BASE, resources: { ...BASE.resources!, outputBytes: 2 ** 20 } }],
    ['disk a check runs with', { ...BASE, resources: { ...BASE.resources!, ephemeralStorageBytes: 2 ** 29 } }],
    ['no resource policy known', { ...BASE, resources: null }],
  ];
  for (const [why, v] of variants) await t.test(why, () => assert.notEqual(requirementHash(v), base));
  await t.test('absent verifiers/env equal empty lists', () => {
    const lint = BASE.checks[1]!;
    assert.equal(requirementHash({ ...BASE, checks: [CHECK, { ...lint, verifiers: [], env: [] }] }), base);
  });
  await t.test("a legacy check's report format is not part of it (a legacy check reads no report)", () => {
    assert.equal(requirementHash({ ...BASE, checks: [{ ...CHECK, reportFormat: 'junit' }, BASE.checks[1]!] }), base);
  });
  await t.test('a private check: junit and another format differ', () => {
    const priv = (reportFormat: string): RequirementInput => ({ ...BASE, checks: [{ ...CHECK, profile: 'private-evaluator-v1', reportFormat }, BASE.checks[1]!] });
    assert.notEqual(requirementHash(priv('junit')), requirementHash(priv('worldline-benchmark-v1')));
  });
  await t.test('isolation objects hash canonically (key order does not matter)', () => {
    assert.equal(requirementHash({ ...BASE, isolation: { controls: ['no-network'], minimumLevel: 'os-sandboxed' } }), base);
  });
});

test('requirementValue: the exact value hashed (format name, no network, isolation as given)', () => {
  const lint = BASE.checks[1]!;
  assert.deepEqual(requirementValue(BASE), {
    format: 'worldline.requirement/v2',
    checks: [
      { name: 'verify', command: ['sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '10m', profile: 'legacy', env: ['LANG'] },
      { name: lint.name, command: ['make', 'lint'], verifiers: [], timeout: '5m', profile: 'legacy', env: [] },
    ],
    verifierIdentity: BASE.verifierIdentity,
    engineVersion: '0.1.0',
    execution: { network: 'none', isolation: { minimumLevel: 'os-sandboxed', controls: ['no-network'] }, resources: BASE.resources },
  });
  assert.deepEqual((requirementValue({ ...BASE, isolation: undefined, resources: null }) as { execution: unknown }).execution, { network: 'none', isolation: null, resources: null });
});

test('verifierIdentity: the exact value hashed (format name, files in byte order)', () => {
  const files = [{ path: 'r/b', sha256: H('b') }, { path: 'r/B', sha256: H('c') }, { path: 'r/a', sha256: H('a') }];
  assert.equal(
    verifierIdentity(files),
    digestOf({ format: 'worldline.verifiers/v1', files: [{ path: 'r/B', sha256: H('c') }, { path: 'r/a', sha256: H('a') }, { path: 'r/b', sha256: H('b') }] }),
  );
});

test('globMatches: `?` and `*` work on characters, not UTF-16 code units', () => {
  assert.equal(globMatches('t?st.sh', 't\u{1F600}st.sh'), true);
  assert.equal(globMatches('??', '\u{1F600}'), false);
  assert.equal(globMatches('a/*/b', 'a/\u{1F600}/b'), true);
});

test('boundVerifierPathsSorted equals boundVerifierPaths on manifests in byte order', () => {
  const seg = fc.constantFrom('a', 'b', 'checks', 'tests', 'lib', 'x.sh', 'y.py', 'a.sh', 'é', '\u{1F600}', '\uE000', 'checks.d', 'test');
  const entry = fc.record({ path: fc.array(seg, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')), type: fc.constantFrom('file' as const, 'dir' as const, 'symlink' as const) });
  const entries = fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 40 }).map((es) => [...es].sort((p, q) => compareBytes(p.path, q.path)));
  const globSeg = fc.oneof(seg, fc.constantFrom('*', '**', '?', '*.sh', 'x.*', 'check?', '*s', ''));
  const glob = fc.array(globSeg, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
  const arg = fc.oneof(fc.array(seg, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')), fc.array(seg, { minLength: 1, maxLength: 3 }).map((s) => `./${s.join('/')}`), fc.constantFrom('sh', '-c', '/bin/sh', 'a/../b', ''));
  fc.assert(
    fc.property(entries, fc.array(arg, { maxLength: 4 }), fc.array(glob, { maxLength: 3 }), (es, command, verifiers) => {
      const check = { command, verifiers };
      assert.deepEqual(boundVerifierPathsSorted(check, es), boundVerifierPaths(check, es));
    }),
    { numRuns: 3000 },
  );
});
