// A private-evaluator run with its examiner alone, end to end on the kernel: a candidate tree frozen,
// the examiner (python3 from a staged verifier directory) reading it read-only as data and writing a
// JUnit report, the boundary checked, the report collected and admitted — and the verdict is the
// report's. An examiner that writes no report, or fails, leaves the report UNTRUSTED by name.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { admitReport } from '../../core/private-evaluator/report-admission.js';
import { nsIds } from '../../native/index.js';
import { freezeTree } from '../../node-agent/private-evaluator/freeze-tree.js';
import { runExaminer, VERIFIERS_PATH, type ExaminerRunSpec } from '../../node-agent/private-evaluator/run-examiner.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the private evaluator examiner run');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('examiner');
const layout = detectCgroups();
const HOST_BASE = 3_400_000;
const agentNs = nsIds('self');

const EXAMINE = `
import os, socket
root = '/work/input'
names = sorted(os.listdir(root))
fails = [n for n in names if n.startswith('FAIL')]
try:
    with open(os.path.join(root, 'injected'), 'w') as f:
        f.write('x')
    print('wrote-input')
except OSError as e:
    print('input-readonly', e.errno)
s = socket.socket(socket.AF_UNIX)
s.connect('/run/worldline-examiner-broker.sock')
print('broker', s.recv(200).decode().strip())
cases = ''.join('<testcase name="%s">%s</testcase>' % (n, '<failure/>' if n.startswith('FAIL') else '') for n in names)
mode = open(os.path.join(root, 'MODE')).read().strip() if 'MODE' in names else 'report'
if mode == 'report':
    with open('/run/worldline-report/report', 'w') as f:
        f.write('<testsuite tests="%d" failures="%d">%s</testsuite>' % (len(names), len(fails), cases))
raise SystemExit(3 if mode == 'exit3' else 0)
`;
const verifiers = join(base, 'verifiers');
mkdirSync(verifiers, { mode: 0o755 });
writeFileSync(join(verifiers, 'examine.py'), EXAMINE, { mode: 0o644 });
let runs = 0;

async function evaluate(files: Record<string, string>) {
  const n = ++runs;
  const src = join(base, `candidate-${n}`);
  mkdirSync(src, { mode: 0o755 });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(src, name), text, { mode: 0o644 });
  chmodSync(src, 0o755);
  const frozen = freezeTree(src, join(base, `frozen-${n}`), HOST_BASE);
  const binding = { run: `run-${process.pid}-${n}`, check: 'unit', candidate: frozen.sourceDigest, verifier: `sha256:${'b'.repeat(64)}` };
  const spec: ExaminerRunSpec = {
    dir: join(base, `run-${n}`), hostBase: HOST_BASE, agentNs,
    inputs: [{ frozen, path: '/work/input' }],
    verifiers, argv: ['/usr/bin/python3', '-I', `${VERIFIERS_PATH}/examine.py`], env: ['PATH=/usr/bin:/bin', 'LANG=C.UTF-8'], cwd: '/',
    binding, reportFormat: 'junit', cgroups: layout, limits: { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024, pids: 64 },
    supervisorCgroupProcs: supervisorCgroupProcs(layout), wallTimeMs: 30_000, outputLimitBytes: 65536,
  };
  const result = await runExaminer(spec);
  assert.deepEqual(mountsUnder(spec.dir), [], 'nothing of the run stays mounted');
  return { result, admission: admitReport(result.record, result.reportBytes, binding), output: readFileSync(result.outputFile, 'utf8') };
}

test('the examiner reads the frozen candidate as data, cannot change it, and its admitted report decides: PASS', async () => {
  const { result, admission, output } = await evaluate({ a: 'one', b: 'two' });
  assert.match(output, /^input-readonly 30$/m, 'EROFS: the frozen input is read-only');
  assert.match(output, /broker .*BROKER_UNSUPPORTED/, 'the examiner reaches its broker, which says it serves nothing yet');
  assert.deepEqual(result.record.boundary, { problems: [], rolesCompleted: true, reportMountExclusive: true });
  assert.deepEqual(result.record.examiner, { code: 0, signal: null, reason: 'Completed' });
  assert.deepEqual(admission, { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 2, failures: 0, errors: 0, skipped: 0 } });
});

test('a failing case in the report is a FAIL verdict, whatever the examiner\'s exit status', async () => {
  const { admission } = await evaluate({ a: 'one', 'FAIL-b': 'two' });
  assert.deepEqual(admission, { classification: 'ADMISSIBLE', verdict: 'FAIL', totals: { tests: 2, failures: 1, errors: 0, skipped: 0 } });
});

test('an examiner that writes no report, or fails, leaves the report UNTRUSTED by name', async () => {
  const none = await evaluate({ a: 'one', MODE: 'none' });
  assert.deepEqual(none.admission.classification === 'UNTRUSTED' && none.admission.reasons, ['REPORT_MISSING']);
  const failed = await evaluate({ a: 'one', MODE: 'exit3' });
  assert.deepEqual(failed.admission.classification === 'UNTRUSTED' && failed.admission.reasons, ['EXAMINER_INCOMPLETE', 'REPORT_MISSING']);
  assert.equal(failed.result.record.examiner.code, 3);
});
