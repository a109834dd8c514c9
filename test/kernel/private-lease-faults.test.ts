// The lease fault campaign: what goes wrong around a case lease ends as a clean, complete run or a
// whole-run refusal, with nothing left mounted (lease-fixture.ts asserts it after every run) and the
// worker's case directory exactly as before a refused copy-out or exactly the whole copy after one:
// a worker that dies with a lease and a candidate open, a candidate killed mid-run, copy-outs of a
// FIFO, a setuid file and a file with an extended attribute, extreme trees (deep, wide, long names, many
// links), three candidates exhausting the run's one pids budget together, a candidate trying nested user
// namespaces, and /proc from inside a leased candidate.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { requireRoot } from '../support/require-root.js';
import { leaseRunner, WORKER_PRELUDE } from './lease-fixture.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the private evaluator lease fault campaign');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('lease-faults');
const HOST_BASE = 3_600_000;

const WORKER = `${WORKER_PRELUDE}
def tree(top):
    files, dirs, links, longest, depth = 0, 0, 0, 0, 0
    for root, ds, fs in os.walk(top):
        depth = max(depth, root.count('/') - top.count('/'))
        dirs += len(ds)
        for f in fs:
            if os.path.islink(os.path.join(root, f)):
                links += 1
            else:
                files += 1
            longest = max(longest, len(f))
    return 'files=%d dirs=%d links=%d longest=%d depth=%d' % (files, dirs, links, longest, depth)

MAKE = {
    'fifo': 'mkfifo pipe',
    'setuid': 'echo x > tool && chmod 4755 tool',
    'xattr': 'echo x > tagged && python3 -c "import os; os.setxattr(\\'tagged\\', \\'user.origin\\', b\\'candidate\\')"',
    'extreme': 'd=deep; for i in $(seq 1 100); do d=$d/n; done; mkdir -p $d; mkdir wide; for i in $(seq 1 1000); do echo $i > wide/f$i; done; n=$(printf "x%.0s" $(seq 1 255)); echo long > $n; mkdir links; for i in $(seq 1 50); do ln -s ../data links/l$i; done',
}

try:
    with WorkerBroker() as b:
        lease = b.open(case)
        if scenario == 'worker-dies':
            b.start(lease, ['/bin/sleep', '30'], case, 20000)
            os.kill(os.getpid(), 9)
        elif scenario == 'candidate-dies':
            s = b.start(lease, ['/bin/sh', '-c', 'echo before > result; exec sleep 30'], case, 20000)
            print('running', b.wait(s, 1000))
            b.signal(s, 'SIGKILL')
            e, out = finish(b, s)
            print('candidate', e['signal'], e['reason'])
            b.copy_out(lease)
            print('copied', open(case + '/result').read().strip())
            b.close_lease(lease)
        elif scenario in MAKE:
            e, out = finish(b, b.start(lease, ['/bin/sh', '-c', MAKE[scenario]], case, 60000))
            print('made', e['code'], out.strip())
            try:
                b.copy_out(lease)
                print('copied', tree(case))
                b.close_lease(lease)
            finally:
                print('worker-dir', sorted(os.listdir(case))[:5], tree(case))
        elif scenario == 'budget':
            spawn = 'import subprocess\\nok = 0\\nfor i in range(40):\\n    try:\\n        subprocess.Popen(["/bin/sleep", "8"])\\n        ok += 1\\n    except OSError:\\n        pass\\nprint("spawned", ok, flush=True)\\nimport time\\ntime.sleep(3)'
            sessions = [b.start(lease, ['/usr/bin/python3', '-c', spawn], case, 20000) for _ in range(3)]
            counts = [int(finish(b, s)[1].split()[-1]) for s in sessions]
            print('budget', sum(counts), counts)
            b.close_lease(lease)
        elif scenario == 'nested-userns':
            probe = 'unshare -U -r id -u 2>&1 || echo unshare-refused; cat /proc/sys/user/max_user_namespaces'
            e, out = finish(b, b.start(lease, ['/bin/sh', '-c', probe], case, 10000))
            print('nested', out.replace(chr(10), '|'))
            b.close_lease(lease)
        elif scenario == 'proc':
            probe = 'echo pids $(ls /proc | grep -E "^[0-9]+$" | tr "\\\\n" " "); ls -a /proc/1/root/run | tr "\\\\n" " "; echo; grep -c -E "worldline-(report|examiner-broker|worker-broker|verifiers)" /proc/self/mountinfo; ls /proc/1/root/run/worldline-verifiers 2>&1 | head -1; cat /proc/1/cmdline | tr "\\\\000" " "'
            e, out = finish(b, b.start(lease, ['/bin/sh', '-c', probe], case, 10000))
            print('proc', out.replace(chr(10), '|'))
            b.close_lease(lease)
    print('done')
except BrokerError as err:
    print('REFUSED', err)
    print('worker-dir-after', sorted(os.listdir(case)), open(case + '/data').read())
`;

const { scenario, refused } = leaseRunner(base, HOST_BASE, WORKER);

/** Host processes running as the run's candidate: none may outlive its run. */
function candidateProcesses(): string[] {
  const want = String(HOST_BASE + 2);
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1] === want;
    } catch {
      return false;
    }
  });
}

describe('lease faults', { concurrency: false }, () => {
  test('a worker that dies with a lease and a live candidate refuses the run, and the candidate does not outlive it', async () => {
    const r = await scenario('worker-dies');
    assert.match(r.problems, /lease l1 \(\/work\/input\/cases\/a\) was still open when the worker ended/);
    assert.match(r.problems, /candidate c1 was still open when the worker ended/);
    assert.equal(r.result.record.boundary.rolesCompleted, false, 'a candidate its broker had to end: not every role completed');
    assert.equal(r.admission.classification, 'UNTRUSTED');
    assert.deepEqual(candidateProcesses(), [], 'no process of the candidate is left');
  });

  test('a candidate killed mid-run ends its session; what it wrote before copies out, and the run is clean', async () => {
    const r = await scenario('candidate-dies');
    assert.equal(r.problems, '', r.output);
    assert.match(r.output, /^running None$/m);
    assert.match(r.output, /^candidate SIGKILL Signaled$/m);
    assert.match(r.output, /^copied before$/m);
    assert.equal(r.result.record.boundary.rolesCompleted, true, 'a candidate killed by its worker still ended with a known end');
    assert.equal(r.admission.classification, 'ADMISSIBLE');
  });

  test("a copy-out of a FIFO, a setuid file or an extended attribute refuses the run and leaves the worker's directory as it was", async () => {
    for (const [name, why] of [['fifo', /pipe: is a special file/], ['setuid', /tool: has setuid, setgid or sticky bits/], ['xattr', /tagged: has extended attributes \(user\.origin\)/]] as const) {
      const r = await refused(name, why);
      assert.match(r.output, /^made 0/m, `${name}: the candidate made it`);
      assert.match(r.output, /^worker-dir \['data'\] files=1 dirs=0 links=0/m, `${name}: the worker's directory is exactly as before`);
    }
  });

  test('an extreme tree — 100 levels deep, 1,000 files wide, a 255-byte name, 50 links — copies out whole', async () => {
    const r = await scenario('extreme');
    assert.equal(r.problems, '', r.output);
    assert.match(r.output, /^copied files=1002 dirs=103 links=50 longest=255 depth=101$/m, r.output);
    assert.equal(r.admission.classification, 'ADMISSIBLE');
  });

  test("the run's roles share one budget: three candidates each spawning 40 processes get fewer than the run's 64 pids together", async () => {
    const r = await scenario('budget');
    assert.equal(r.problems, '', r.output);
    const m = /^budget (\d+) \[(\d+), (\d+), (\d+)\]$/m.exec(r.output);
    assert.ok(m, r.output);
    // Each alone has room for its 40 (a role's own cgroup has the run's limits); together they cannot exceed the run's.
    assert.ok(Number(m[1]) < 64, `the three candidates held ${m[1]} processes at once: more than the run's 64 pids`);
    assert.ok(Number(m[1]) > 0, 'and they did run');
  });

  test('a leased candidate cannot create a nested user namespace', async () => {
    const r = await scenario('nested-userns');
    assert.equal(r.problems, '', r.output);
    assert.match(r.output, /^nested unshare: unshare failed: No space left on device\|unshare-refused\|0\|$/m, r.output);
  });

  test('/proc in a leased candidate shows its own processes and its own /run: no broker, report or verifier', async () => {
    const r = await scenario('proc');
    assert.equal(r.problems, '', r.output);
    const line = r.output.split('\n').find((l) => l.startsWith('proc ')) ?? '';
    const pids = /pids ([\d ]+)\|/.exec(line)?.[1]?.trim().split(' ') ?? [];
    assert.ok(pids.includes('1') && pids.every((p) => Number(p) < 20), `only its own namespace's few processes, numbered from 1: ${line}`);
    assert.match(line, /\|\. \.\. \|/, `its /run holds nothing of the other roles: ${line}`);
    assert.match(line, /\|0\|/, 'no report, broker or verifier mount in its mountinfo');
    assert.match(line, /No such file or directory/, 'no verifiers through /proc/1/root');
  });
});
