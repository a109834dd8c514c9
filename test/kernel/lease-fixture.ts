// A private-evaluator run driven by a worker, for the lease campaigns (private-leases, private-lease-faults):
// an examiner (python3, staged from a verifier directory) starts one worker with the scenario's name, waits
// for its end, prints its output and reports one case, whether the worker exited 0; the worker (python3,
// staged beside it with the client library) runs the scenario against its broker. The candidate tree has
// a case directory at /work/input/cases/a.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { admitReport } from '../../core/private-evaluator/report-admission.js';
import { nsIds } from '../../native/index.js';
import { freezeTree } from '../../node-agent/private-evaluator/freeze-tree.js';
import { runExaminer, VERIFIERS_PATH, type ExaminerRunSpec, type RoleGate } from '../../node-agent/private-evaluator/run-examiner.js';
import { detectCgroups } from '../../node-agent/sandbox/cgroup.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';

export const INPUT = '/work/input';
export const CASE = `${INPUT}/cases/a`;

// The examiner: starts the worker with the scenario's name, waits for its end, prints its output and
// reports one case, whether the worker exited 0.
const EXAMINE = `
import sys
sys.path.insert(0, '/run/worldline-verifiers')
from worldline_broker import Broker
scenario = open('/work/input/SCENARIO').read().strip()
with Broker() as b:
    w = b.worker(['/usr/bin/python3', '-I', '/run/worldline-verifiers/worker.py', scenario], '/work/input', 60000)
    e = None
    while e is None:
        e = b.wait(w, 2000)
    out, offset = b'', 0
    while True:
        data, eof = b.output(w, offset)
        out += data
        offset += len(data)
        if eof or not data:
            break
    sys.stdout.write(out.decode())
    b.teardown(w)
ok = e['code'] == 0
with open('/run/worldline-report/report', 'w') as f:
    f.write('<testsuite tests="1" failures="%d"><testcase name="worker">%s</testcase></testsuite>' % (0 if ok else 1, '' if ok else '<failure/>'))
`;

/**
 * The start of every worker program: the client library, the case's path, the scenario from argv, and
 * finish(b, s): wait for a candidate's end, read its output, tear it down.
 */
export const WORKER_PRELUDE = `
import os, sys
sys.path.insert(0, '/run/worldline-verifiers')
from worldline_broker import WorkerBroker, BrokerError
case = '${CASE}'
scenario = sys.argv[1]

def finish(b, s):
    e = None
    while e is None:
        e = b.wait(s, 2000)
    data, _ = b.output(s)
    b.teardown(s)
    return e, data.decode()
`;

/** Runs scenarios of one worker program in runs under `base`, with host ids from `hostBase`. */
export function leaseRunner(base: string, hostBase: number, workerSource: string) {
  const layout = detectCgroups();
  const agentNs = nsIds('self');
  const verifiers = join(base, 'verifiers');
  mkdirSync(verifiers, { mode: 0o755 });
  writeFileSync(join(verifiers, 'examine.py'), EXAMINE, { mode: 0o644 });
  writeFileSync(join(verifiers, 'worker.py'), workerSource, { mode: 0o644 });
  copyFileSync(join(import.meta.dirname, '..', '..', '..', 'examples', 'greeter', 'checks', 'worldline_broker.py'), join(verifiers, 'worldline_broker.py'));
  let runs = 0;

  /** Runs one scenario; `gate`, when given, is asked at every role's start. */
  async function scenario(name: string, extra: Record<string, string> = {}, gate?: RoleGate) {
    const n = ++runs;
    const src = join(base, `candidate-${n}`);
    const files: Record<string, string> = { SCENARIO: name, 'cases/a/data': 'original', 'cases/b/data': 'other', ...extra };
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(dirname(join(src, rel)), { recursive: true, mode: 0o755 });
      writeFileSync(join(src, rel), text, { mode: 0o644 });
    }
    chmodSync(src, 0o755);
    const frozen = freezeTree(src, join(base, `frozen-${n}`), hostBase);
    const binding = { run: `leases-${process.pid}-${n}`, check: 'leases', candidate: frozen.sourceDigest, verifier: `sha256:${'c'.repeat(64)}` };
    const spec: ExaminerRunSpec = {
      dir: join(base, `run-${n}`), hostBase, agentNs,
      inputs: [{ frozen, path: INPUT }],
      verifiers: [{ dir: verifiers, path: VERIFIERS_PATH }], argv: ['/usr/bin/python3', '-I', `${VERIFIERS_PATH}/examine.py`],
      env: ['PATH=/usr/bin:/bin', 'LANG=C.UTF-8'], cwd: '/',
      binding, reportFormat: 'junit', cgroups: layout, limits: { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024, pids: 64 },
      supervisorCgroupProcs: supervisorCgroupProcs(layout), wallTimeMs: 60_000, outputLimitBytes: 65536,
      ...(gate ? { gate } : {}),
    };
    const result = await runExaminer(spec).finally(() => assert.deepEqual(mountsUnder(spec.dir), [], 'nothing of the run stays mounted'));
    const output = readFileSync(result.outputFile, 'utf8');
    return { result, output, admission: admitReport(result.record, result.reportBytes, binding), problems: result.record.boundary.problems.join('\n') };
  }

  /** A scenario the protocol refuses: the whole run is UNTRUSTED and its boundary names `why`. */
  async function refused(name: string, why: RegExp) {
    const r = await scenario(name);
    assert.match(r.output, /^REFUSED PROTOCOL_VIOLATION/m, `${name}: the worker was refused\n${r.output}`);
    assert.match(r.problems, why, `${name}: the boundary names the violation`);
    assert.equal(r.admission.classification, 'UNTRUSTED', `${name}: the run is refused whatever the examiner reports`);
    assert.ok(r.admission.classification === 'UNTRUSTED' && r.admission.reasons.includes('BOUNDARY_INCOMPLETE'), name);
    return r;
  }
  return { scenario, refused };
}
