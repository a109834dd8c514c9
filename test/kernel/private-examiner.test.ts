// A private-evaluator run with its examiner alone, end to end on the kernel: a candidate tree frozen,
// the examiner (python3 from a staged verifier directory) reading it read-only as data and writing a
// JUnit report, the boundary checked, the report collected and admitted — and the verdict is the
// report's. An examiner that writes no report, or fails, leaves the report UNTRUSTED by name.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
import os, sys
sys.path.insert(0, '/run/worldline-verifiers')
from worldline_broker import Broker, BrokerError
root = '/work/input'
names = sorted(n for n in os.listdir(root) if n != 'MODE')
mode = open(os.path.join(root, 'MODE')).read().strip() if os.path.exists(os.path.join(root, 'MODE')) else 'report'
try:
    with open(os.path.join(root, 'injected'), 'w') as f:
        f.write('x')
    print('wrote-input')
except OSError as e:
    print('input-readonly', e.errno)
cases = []
with Broker() as b:
    if mode in ('report', 'exit3'):
        for n in names:
            exit, out, _ = b.run(['/bin/sh', '-c', 'test "$(cat "$1")" = ok && echo x >> "$1"', 'sh', n], root, 10000)
            cases.append((n, exit['code'] == 0))
        exit, out, _ = b.run(['/bin/sh', '-c', 'id -u; id -g; ls -a /run; ls /work/input; cat /work/input/MODE 2>/dev/null; echo env=$(env | sort | tr "\\n" " ")'], root, 10000)
        print('candidate-probe', out.decode().replace(chr(10), '|'))
    elif mode == 'session':
        s = b.start(['/bin/sleep', '30'], root, 20000)
        print('running', b.wait(s, 100))
        b.signal(s, 'SIGKILL')
        e = None
        while e is None:
            e = b.wait(s, 2000)
        print('ended', e['signal'], e['reason'])
        print('teardown', b.teardown(s)['signal'])
        cases.append(('session', e['signal'] == 'SIGKILL'))
    elif mode == 'left-open':
        b.start(['/bin/sleep', '30'], root, 20000)
        cases.append(('left-open', True))
    elif mode == 'probe':
        probe = 'echo pids $(ls /proc | grep -E "^[0-9]+$" | tr "\\n" " "); echo report-mounts $(grep -c worldline /proc/self/mountinfo); ls /run/worldline-verifiers 2>/dev/null && echo VERIFIERS; echo ifaces $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "); unshare -U true 2>/dev/null && echo NESTED; cat /proc/1/cmdline | tr "\\\\000" " "; echo'
        exit, out, _ = b.run(['/bin/sh', '-c', probe], root, 10000)
        for line in out.decode().splitlines():
            print('probe', line)
        cases.append(('probe', exit['code'] == 0))
    elif mode == 'copy-verdict':
        exit, out, _ = b.run(['/bin/cat', 'fake.xml'], root, 10000)
        with open('/run/worldline-report/report', 'wb') as f:
            f.write(out)
        mode = 'copied'
    elif mode == 'benchmark':
        import json, time
        started = time.monotonic()
        exit, out, _ = b.run(['/bin/sh', '-c', 'seq "$(cat count)"'], root, 10000)
        elapsed = (time.monotonic() - started) * 1000
        marks = [{'name': 'lines printed', 'unit': 'lines', 'value': len(out.decode().splitlines()), 'min': 3},
                 {'name': 'run time', 'unit': 'ms', 'value': elapsed, 'min': 0, 'max': 10000}]
        with open('/run/worldline-report/report', 'w') as f:
            json.dump({'format': 'worldline-benchmark-v1', 'benchmarks': marks}, f)
        mode = 'copied'
    elif mode == 'violation':
        try:
            b.call(op='run', argv=[], cwd=root, timeoutMs=1)
        except BrokerError as e:
            print('refused', e)
        cases.append(('violation', True))
if mode not in ('none', 'copied'):
    xml = ''.join('<testcase name="%s">%s</testcase>' % (n, '' if ok else '<failure/>') for n, ok in cases)
    with open('/run/worldline-report/report', 'w') as f:
        f.write('<testsuite tests="%d" failures="%d">%s</testsuite>' % (len(cases), sum(1 for _, ok in cases if not ok), xml))
raise SystemExit(3 if mode == 'exit3' else 0)
`;
const verifiers = join(base, 'verifiers');
mkdirSync(verifiers, { mode: 0o755 });
writeFileSync(join(verifiers, 'examine.py'), EXAMINE, { mode: 0o644 });
copyFileSync(join(import.meta.dirname, '..', '..', '..', 'examples', 'greeter', 'checks', 'worldline_broker.py'), join(verifiers, 'worldline_broker.py'));
let runs = 0;

/** The examiner this file's tests run, or another one (the greeter example's). */
interface Examiner {
  verifiers: { dir: string; path: string }[];
  argv: string[];
  inputPath: string;
}
const TEST_EXAMINER: Examiner = { verifiers: [{ dir: verifiers, path: VERIFIERS_PATH }], argv: ['/usr/bin/python3', '-I', `${VERIFIERS_PATH}/examine.py`], inputPath: '/work/input' };

async function evaluate(files: Record<string, string>, examiner: Examiner = TEST_EXAMINER, reportFormat = 'junit') {
  const n = ++runs;
  const src = join(base, `candidate-${n}`);
  mkdirSync(src, { mode: 0o755 });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(src, name)), { recursive: true, mode: 0o755 });
    writeFileSync(join(src, name), text, { mode: 0o644 });
  }
  chmodSync(src, 0o755);
  const frozen = freezeTree(src, join(base, `frozen-${n}`), HOST_BASE);
  const binding = { run: `run-${process.pid}-${n}`, check: 'unit', candidate: frozen.sourceDigest, verifier: `sha256:${'b'.repeat(64)}` };
  const spec: ExaminerRunSpec = {
    dir: join(base, `run-${n}`), hostBase: HOST_BASE, agentNs,
    inputs: [{ frozen, path: examiner.inputPath }],
    verifiers: examiner.verifiers, argv: examiner.argv, env: ['PATH=/usr/bin:/bin', 'LANG=C.UTF-8'], cwd: examiner.inputPath === '/work/input' ? '/' : examiner.inputPath,
    binding, reportFormat, cgroups: layout, limits: { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024, pids: 64 },
    supervisorCgroupProcs: supervisorCgroupProcs(layout), wallTimeMs: 30_000, outputLimitBytes: 65536,
  };
  const result = await runExaminer(spec);
  assert.deepEqual(mountsUnder(spec.dir), [], 'nothing of the run stays mounted');
  return { result, admission: admitReport(result.record, result.reportBytes, binding), output: readFileSync(result.outputFile, 'utf8') };
}

test('the examiner reads the frozen input read-only and runs the candidate\'s code as the candidate over its own copy; its admitted report decides', async () => {
  const { result, admission, output } = await evaluate({ a: 'ok', b: 'ok' });
  assert.match(output, /^input-readonly 30$/m, 'EROFS: the frozen input is read-only to the examiner');
  const probe = /^candidate-probe (.*)$/m.exec(output)?.[1]?.split('|') ?? [];
  assert.deepEqual(probe.slice(0, 2), ['2', '2'], `the candidate runs as namespace uid and gid 2: ${output}`);
  assert.deepEqual(probe.slice(2, 4), ['.', '..'], 'the candidate\'s /run is empty: no report, no broker, no verifiers');
  assert.ok(probe.includes('a') && probe.includes('b'), 'the candidate sees its copy of the input at the same path');
  assert.match(output, /env=LANG=C\.UTF-8 PATH=\/usr\/local\/bin:\/usr\/bin:\/bin PWD=\/work\/input\|/, 'a cleared environment (PWD is the shell\'s)');
  assert.deepEqual(result.record.boundary, { problems: [], rolesCompleted: true, reportMountExclusive: true });
  assert.deepEqual(admission, { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 2, failures: 0, errors: 0, skipped: 0 } });
  // The candidate appended to its own copies; the frozen input is as it was.
  assert.equal(readFileSync(join(base, `frozen-${runs}`, 'a'), 'utf8'), 'ok');
  assert.deepEqual(readdirSync(join(base, `run-${runs}`)).sort(), ['examiner', 'examiner.log', 'examiner.log.exit', 'report', 'sessions']);
  assert.deepEqual(readdirSync(join(base, `run-${runs}`, 'sessions')), [], 'every session\'s copy and root filesystem removed');
});

test('a failing case in the report is a FAIL verdict', async () => {
  const { admission } = await evaluate({ a: 'ok', b: 'not ok' });
  assert.deepEqual(admission, { classification: 'ADMISSIBLE', verdict: 'FAIL', totals: { tests: 2, failures: 1, errors: 0, skipped: 0 } });
});

test('a worldline-benchmark-v1 report: the examiner measures the candidate\'s run, and the verdict is recomputed from the numbers and bounds', async () => {
  const fast = await evaluate({ count: '5', MODE: 'benchmark' }, TEST_EXAMINER, 'worldline-benchmark-v1');
  assert.deepEqual(fast.admission, { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 2, failures: 0, errors: 0, skipped: 0 } }, fast.output);
  const short = await evaluate({ count: '2', MODE: 'benchmark' }, TEST_EXAMINER, 'worldline-benchmark-v1');
  assert.deepEqual(short.admission, { classification: 'ADMISSIBLE', verdict: 'FAIL', totals: { tests: 2, failures: 1, errors: 0, skipped: 0 } }, 'two lines printed, three required');
  const junit = await evaluate({ count: '5', MODE: 'benchmark' }, TEST_EXAMINER, 'junit');
  assert.deepEqual(junit.admission.classification === 'UNTRUSTED' && junit.admission.reasons, ['REPORT_UNPARSEABLE'], 'the Policy\'s format decides how the bytes are read');
});

test('a session started, waited on, killed and torn down through the broker', async () => {
  const { admission, output } = await evaluate({ MODE: 'session' });
  assert.match(output, /^running None$/m);
  assert.match(output, /^ended SIGKILL Signaled$/m);
  assert.match(output, /^teardown SIGKILL$/m);
  assert.equal(admission.classification, 'ADMISSIBLE', JSON.stringify(admission));
});

test('a session left open, or a request the broker refuses, fails the boundary: the report is UNTRUSTED', async () => {
  const open = await evaluate({ MODE: 'left-open' });
  assert.ok(open.result.record.boundary.problems.includes('examiner broker: candidate session c1 was still open when the run ended'), JSON.stringify(open.result.record.boundary));
  assert.equal(open.result.record.boundary.rolesCompleted, false);
  assert.deepEqual(open.admission.classification === 'UNTRUSTED' && open.admission.reasons, ['BOUNDARY_INCOMPLETE']);
  const bad = await evaluate({ MODE: 'violation' });
  assert.match(bad.output, /^refused PROTOCOL_VIOLATION: a malformed request: argv: /m);
  assert.equal(bad.result.record.boundary.rolesCompleted, true, 'no role was left open: the violation is a problem of its own, not an unfinished role');
  assert.ok(bad.result.record.boundary.problems.some((p) => p.startsWith('examiner broker: a malformed request')), JSON.stringify(bad.result.record.boundary));
  assert.deepEqual(bad.admission.classification === 'UNTRUSTED' && bad.admission.reasons, ['BOUNDARY_INCOMPLETE']);
});

test('a candidate session sees only its own processes, no report, broker or verifier mount, no network, no nested user namespace', async () => {
  const { admission, output } = await evaluate({ MODE: 'probe' });
  const probe = (name: string): string => new RegExp(`^probe ${name} ?(.*)$`, 'm').exec(output)?.[1] ?? '(missing)';
  const pids = probe('pids').trim().split(' ').map(Number);
  assert.ok(pids.length > 0 && pids.length <= 6 && pids.includes(1), `its own PID namespace (pid 1 is its shell): ${probe('pids')}`);
  assert.equal(probe('report-mounts'), '0', 'nothing of worldline is mounted in its namespace');
  assert.doesNotMatch(output, /^probe (VERIFIERS|NESTED)$/m, 'no verifier mount; no nested user namespace');
  assert.equal(probe('ifaces'), 'lo');
  assert.match(output, /^probe \/bin\/sh -c /m, 'pid 1 in its namespace is its own shell, not the examiner');
  assert.equal(admission.classification, 'ADMISSIBLE');
});

test('a documented limit: an examiner that copies candidate output into its report hands the verdict to the candidate', async () => {
  // The candidate prints a passing JUnit report; the examiner writes what it printed as its own report.
  const { admission } = await evaluate({ a: 'not ok', 'fake.xml': '<testsuite tests="1" failures="0"/>', MODE: 'copy-verdict' });
  assert.deepEqual(admission, { classification: 'ADMISSIBLE', verdict: 'PASS', totals: { tests: 1, failures: 0, errors: 0, skipped: 0 } });
});

test('an examiner that writes no report, or fails, leaves the report UNTRUSTED by name', async () => {
  const none = await evaluate({ a: 'ok', MODE: 'none' });
  assert.deepEqual(none.admission.classification === 'UNTRUSTED' && none.admission.reasons, ['REPORT_MISSING']);
  const failed = await evaluate({ a: 'ok', MODE: 'exit3' });
  assert.deepEqual(failed.admission.classification === 'UNTRUSTED' && failed.admission.reasons, ['EXAMINER_INCOMPLETE']);
  assert.equal(failed.result.record.examiner.code, 3);
});

test('the greeter example\'s examiner (examples/greeter/checks/examine.py) passes the greeter and names what a broken one gets wrong', async () => {
  const greeter = join(import.meta.dirname, '..', '..', '..', 'examples', 'greeter');
  const example: Examiner = {
    verifiers: [{ dir: join(greeter, 'checks'), path: `${VERIFIERS_PATH}/demo-repo/checks` }],
    argv: ['/usr/bin/python3', '-I', `${VERIFIERS_PATH}/demo-repo/checks/examine.py`],
    inputPath: '/work/demo-repo',
  };
  // The demo's task done: a greeter that shouts (the example's own greet.sh does not yet, by design).
  const shouting = '#!/bin/sh\nif [ "$1" = --shout ]; then shift; printf "Hello, %s!\\n" "${1:-world}" | tr a-z A-Z; else printf "Hello, %s!\\n" "${1:-world}"; fi\n';
  const good = await evaluate({ 'src/greet.sh': shouting, VERSION: readFileSync(join(greeter, 'VERSION'), 'utf8') }, example);
  assert.deepEqual(good.admission.classification === 'ADMISSIBLE' && good.admission.verdict, 'PASS', good.output);
  assert.match(good.output, /^4 cases, 0 failed$/m);
  // The example's greet.sh as it is (no --shout), with a VERSION that is not a number.
  const broken = await evaluate({ 'src/greet.sh': readFileSync(join(greeter, 'src', 'greet.sh'), 'utf8'), VERSION: 'one\n' }, example);
  assert.deepEqual(broken.admission.classification === 'ADMISSIBLE' && broken.admission.totals, { tests: 4, failures: 2, errors: 0, skipped: 0 }, broken.output);
  assert.equal(broken.admission.classification === 'ADMISSIBLE' && broken.admission.verdict, 'FAIL');
  assert.match(broken.output, /^FAIL --shout greets in capitals: want 'HELLO, ADA!', got 'Hello, --shout!'/m);
  assert.match(broken.output, /^FAIL VERSION is a number: got 'one'$/m);
});
