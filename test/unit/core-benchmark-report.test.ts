// The worldline-benchmark-v1 report: read strictly (exact keys, no repeated key, finite numbers, a bound
// on every benchmark, unique names), its verdict recomputed from the numbers, and admitted through the
// same facts as a JUnit report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseBenchmarkReport, repeatedKey } from '../../core/private-evaluator/benchmark-report.js';
import { admitReport, type PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';

const BINDING = { run: 'r1', check: 'bench', candidate: `sha256:${'a'.repeat(64)}`, verifier: `sha256:${'b'.repeat(64)}` };
const digest = (b: Uint8Array): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const report = (benchmarks: unknown[]): string => JSON.stringify({ format: 'worldline-benchmark-v1', benchmarks });
const admitted = (text: string, reportFormat = 'worldline-benchmark-v1') => {
  const bytes = Buffer.from(text);
  const record: PrivateRunRecord = {
    profile: 'private-evaluator-v1', reportFormat, binding: BINDING,
    examiner: { code: 0, signal: null, reason: 'Completed' },
    boundary: { problems: [], rolesCompleted: true, reportMountExclusive: true },
    report: { state: 'collected', size: bytes.length, digest: digest(bytes), binding: BINDING },
  };
  return admitReport(record, bytes, BINDING);
};

test('benchmarks within their bounds pass; one outside fails; bounds are inclusive', () => {
  const ok = report([{ name: 'parse 1k', unit: 'ms', value: 20, max: 20 }, { name: 'throughput', unit: 'ops/s', value: 5000, min: 5000, max: 9000 }]);
  assert.deepEqual(admitted(ok), { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 2, failures: 0, errors: 0, skipped: 0 } });
  const slow = report([{ name: 'parse 1k', unit: 'ms', value: 20.5, max: 20 }, { name: 'throughput', unit: 'ops/s', value: 4999, min: 5000 }, { name: 'rss', unit: 'MiB', value: -1, min: -2 }]);
  assert.deepEqual(admitted(slow), { classification: 'ADMISSIBLE', verdict: 'FAIL', totals: { tests: 3, failures: 2, errors: 0, skipped: 0 } });
});

test('what is not exactly the format is UNTRUSTED (REPORT_UNPARSEABLE), with the problem named', () => {
  const one = { name: 'a', unit: 'ms', value: 1, max: 2 };
  const cases: [string, RegExp][] = [
    ['not json', /not JSON/],
    ['[]', /not a JSON object/],
    [JSON.stringify({ format: 'worldline-benchmark-v2', benchmarks: [one] }), /format is not/],
    [JSON.stringify({ format: 'worldline-benchmark-v1', benchmarks: [one], passed: true }), /unknown key "passed"/],
    [report([]), /list of 1 to 1000/],
    [report(Array.from({ length: 1001 }, (_, i) => ({ ...one, name: `b${i}` }))), /list of 1 to 1000/],
    [report([{ ...one, verdict: 'PASS' }]), /benchmarks\[0\]: unknown key "verdict"/],
    [report([{ name: 'a', unit: 'ms', value: 1 }]), /needs a bound/],
    [report([{ ...one, value: '1' }]), /value must be a finite number/],
    [report([{ ...one, min: 3 }]), /min is greater than max/],
    [report([{ ...one, name: '' }]), /name must be/],
    [report([{ ...one, unit: 'u'.repeat(33) }]), /unit must be/],
    [report([one, { ...one }]), /benchmarks\[1\]: the name "a" is used twice/],
    ['{"format":"worldline-benchmark-v1","benchmarks":[{"name":"a","unit":"ms","value":1e400,"max":2}]}', /value must be a finite number/],
    // JSON.parse keeps the last of a repeated key; another reader would keep the first.
    ['{"format":"worldline-benchmark-v1","benchmarks":[{"name":"a","unit":"ms","value":50,"value":1,"max":2}]}', /"value" appears twice/],
    ['{"format":"worldline-benchmark-v1","benchmarks":[{"name":"a","unit":"ms","value":1,"max":2}],"benchmarks":[]}', /"benchmarks" appears twice/],
  ];
  for (const [text, problem] of cases) {
    const a = admitted(text);
    assert.equal(a.classification, 'UNTRUSTED', text.slice(0, 80));
    if (a.classification !== 'UNTRUSTED') continue;
    assert.deepEqual(a.reasons, ['REPORT_UNPARSEABLE'], text.slice(0, 80));
    assert.match(a.details.join(' '), problem, text.slice(0, 80));
  }
});

test('repeated keys: found after unescaping, per object, and never inside strings', () => {
  assert.equal(repeatedKey('{"a":1,"\\u0061":2}'), 'a');
  assert.equal(repeatedKey('{"a":{"a":1},"b":[{"a":1},{"a":2}]}'), undefined, 'the same key in different objects');
  assert.equal(repeatedKey('{"s":"\\"a\\":1,\\"a\\":2","t":"{\\"x\\":1}"}'), undefined, 'keys quoted inside a string value');
  assert.equal(repeatedKey('{"a":[1,2],"b":{"c":{"d":1,"d":2}}}'), 'd');
  assert.equal(parseBenchmarkReport(report([{ name: 'n "q" \\ ü', unit: 'ms', value: 0, min: 0 }])).ok, true);
});

test('the format of the record decides the reader: a JUnit record of benchmark bytes is unparseable, gnatprove unsupported', () => {
  const text = report([{ name: 'a', unit: 'ms', value: 1, max: 2 }]);
  assert.deepEqual(admitted(text, 'junit').classification === 'UNTRUSTED' && (admitted(text, 'junit') as { reasons: string[] }).reasons, ['REPORT_UNPARSEABLE']);
  const gnat = admitted(text, 'gnatprove');
  assert.deepEqual(gnat.classification === 'UNTRUSTED' && gnat.reasons, ['REPORT_FORMAT_UNSUPPORTED']);
});
