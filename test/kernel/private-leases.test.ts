// The lease protocol campaign: workers and their case leases end to end on the kernel. Each scenario is a
// whole private-evaluator run — an examiner (python3, staged) starts a worker through its broker, the
// worker (python3, staged) drives the worker broker through the client library — and must end as a clean,
// complete run or a whole-run refusal naming why: overlap, leases outside the worker's copy, ordering
// (copy-in over a live candidate or over output not copied out), stale-generation replay, handle reuse,
// a worker directory that moved, escaping links and hard links in copy-out (the worker's directory left
// exactly as before), the stdin cap, the environment allowlist, a lease left open, a worker over its
// output limit. Request fuzzing runs against the broker's socket itself, seeded and replayable.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { MAX_STDIN_BYTES } from '../../node-agent/private-evaluator/broker-protocol.js';
import { LeaseLedger, WorkerBroker } from '../../node-agent/private-evaluator/worker-broker.js';
import { requireRoot } from '../support/require-root.js';
import { INPUT, leaseRunner, WORKER_PRELUDE } from './lease-fixture.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the private evaluator lease campaign');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('leases');
const HOST_BASE = 3_500_000;

// The worker: one scenario against its broker. It prints what it saw; a refused request prints REFUSED.
const WORKER = `${WORKER_PRELUDE}
try:
    with WorkerBroker() as b:
        if scenario == 'happy':
            lease = b.open(case)
            print('opened', lease.handle, lease.generation)
            s = b.start(lease, ['/bin/sh', '-c', 'read x; echo "got $x" > result; id -u; echo seed=$PYTHONHASHSEED; test -e /run/worldline-worker-broker.sock || echo no-worker-broker; test -e /run/worldline-verifiers || echo no-verifiers; cat data'], case, 10000, stdin=b'hello\\n', env={'PYTHONHASHSEED': '7'})
            e, out = finish(b, s)
            print('candidate', e['code'], out.replace(chr(10), '|'))
            print('before-copy-out', os.path.exists(case + '/result'))
            b.copy_out(lease)
            print('after-copy-out', open(case + '/result').read().strip(), lease.generation)
            with open(case + '/data', 'w') as f:
                f.write('edited')
            b.copy_in(lease)
            s = b.start(lease, ['/bin/cat', 'data'], case, 10000)
            e, out = finish(b, s)
            print('second', out, lease.generation)
            b.close_lease(lease)
            print('closed')
        elif scenario == 'overlap':
            b.open(case)
            b.open('/work/input/cases')
        elif scenario == 'equal-to-input':
            b.open('/work/input')
        elif scenario == 'outside':
            b.open('/etc')
        elif scenario == 'stale-generation':
            lease = b.open(case)
            s = b.start(lease, ['/bin/true'], case, 10000)
            finish(b, s)
            b.copy_out(lease)
            b.call(op='copy-out', lease=lease.handle, generation=1)
        elif scenario == 'handle-reuse':
            lease = b.open(case)
            b.close_lease(lease)
            b.start(lease, ['/bin/true'], case, 10000)
        elif scenario == 'copy-in-live':
            lease = b.open(case)
            b.start(lease, ['/bin/sleep', '30'], case, 20000)
            b.copy_in(lease)
        elif scenario == 'copy-in-uncopied':
            lease = b.open(case)
            finish(b, b.start(lease, ['/bin/sh', '-c', 'echo x > new'], case, 10000))
            b.copy_in(lease)
        elif scenario == 'worker-moved':
            lease = b.open(case)
            with open(case + '/data', 'a') as f:
                f.write('more')
            b.start(lease, ['/bin/true'], case, 10000)
        elif scenario in ('escaping-link', 'hard-link', 'inner-link'):
            lease = b.open(case)
            make = {'escaping-link': 'ln -s ../../../etc/passwd leak', 'hard-link': 'ln data leak', 'inner-link': 'ln -s data leak && mkdir d && ln -s ../data d/up'}[scenario]
            e, out = finish(b, b.start(lease, ['/bin/sh', '-c', make], case, 10000))
            print('made', e['code'], out)
            try:
                b.copy_out(lease)
                print('copied-out', sorted(os.listdir(case)), os.readlink(case + '/leak'))
                b.close_lease(lease)
            finally:
                print('worker-dir', sorted(os.listdir(case)), open(case + '/data').read())
        elif scenario == 'through-a-link':
            os.symlink('/', '/work/input/escape')
            b.open('/work/input/escape/etc')
        elif scenario == 'parent-swapped':
            lease = b.open(case)
            finish(b, b.start(lease, ['/bin/sh', '-c', 'echo x > new'], case, 10000))
            os.rename('/work/input/cases', '/work/input/real-cases')
            os.symlink('/etc', '/work/input/cases')
            try:
                b.copy_out(lease)
            finally:
                os.unlink('/work/input/cases')
                os.rename('/work/input/real-cases', '/work/input/cases')
        elif scenario == 'stdin-too-large':
            lease = b.open(case)
            b.start(lease, ['/bin/cat'], case, 10000, stdin=b'x' * ${MAX_STDIN_BYTES + 1})
        elif scenario == 'env-outside-allowlist':
            lease = b.open(case)
            b.start(lease, ['/bin/true'], case, 10000, env={'LD_PRELOAD': '/tmp/x.so'})
        elif scenario == 'left-open':
            b.open(case)
        elif scenario == 'worker-output':
            sys.stdout.write('x' * 200000)
    print('done')
except BrokerError as err:
    print('REFUSED', err)
    print('worker-dir-after', sorted(os.listdir(case)), open(case + '/data').read())
`;
const { scenario, refused } = leaseRunner(base, HOST_BASE, WORKER);

describe('case leases', { concurrency: false }, () => {
  test('a lease runs candidates over a view of the case: stdin, the allowed env, copy-out and copy-in by generation, then a clean run', async () => {
    const r = await scenario('happy');
    assert.equal(r.problems, '', r.output);
    assert.match(r.output, /^opened l1 1$/m);
    assert.match(r.output, /^candidate 0 2\|seed=7\|no-worker-broker\|no-verifiers\|original$/m, 'the candidate is uid 2, gets its stdin and the allowed env, and reaches neither the worker broker nor the verifiers');
    assert.match(r.output, /^before-copy-out False$/m, "the candidate's output is not in the worker's directory before copy-out");
    assert.match(r.output, /^after-copy-out got hello 2$/m, 'copy-out brought it back and advanced the generation');
    assert.match(r.output, /^second edited 3$/m, "copy-in carried the worker's edit into the view");
    assert.match(r.output, /^closed$/m);
    assert.equal(r.admission.classification, 'ADMISSIBLE', JSON.stringify(r.admission));
    const lease = r.result.record.boundary.leases?.[0];
    assert.equal(lease?.path, `${INPUT}/cases/a`);
    assert.deepEqual(lease?.events.map((e) => e.split(' ')[0]), ['open', 'copy-in', 'start', 'teardown', 'copy-out', 'copy-in', 'copy-in', 'start', 'teardown', 'close']);
  });

  test('overlapping leases, a lease on the input itself and one outside it are refused', async () => {
    await refused('overlap', /overlaps lease l1/);
    await refused('equal-to-input', /not strictly inside an input/);
    await refused('outside', /not strictly inside an input/);
  });

  test('ordering: a stale generation replayed, a closed handle reused, copy-in over a live candidate or uncopied output, a worker directory that moved', async () => {
    await refused('stale-generation', /names generation 1, but it is at 2/);
    await refused('handle-reuse', /start of unknown lease l1/);
    await refused('copy-in-live', /copy-in of lease l1 while candidate c1 is live/);
    await refused('copy-in-uncopied', /over candidate output not copied out/);
    await refused('worker-moved', /moved since generation 1/);
  });

  test("copy-out refuses an escaping link or a hard link and leaves the worker's directory exactly as before; a link inside the case is copied", async () => {
    const esc = await refused('escaping-link', /leak: is a link that leaves the case/);
    assert.match(esc.output, /^worker-dir \['data'\] original$/m, "the worker's directory is as it was");
    const hard = await refused('hard-link', /: has 2 links/);
    assert.match(hard.output, /^worker-dir \['data'\] original$/m);
    const inner = await scenario('inner-link');
    assert.equal(inner.problems, '', inner.output);
    assert.match(inner.output, /^copied-out \['d', 'data', 'leak'\] data$/m);
  });

  test('a lease through a link the worker planted, or a copy-out after the worker swapped a parent for a link, reaches nothing outside its copy', async () => {
    await refused('through-a-link', /a lease on \/work\/input\/escape\/etc: the case cannot be copied: its top: is not a directory reached without a symbolic link \(ELOOP\)/);
    const swapped = await refused('parent-swapped', /copy-out of lease l1: the worker's \/work\/input\/cases\/a moved since generation 1 \(unmeasurable/);
    assert.match(swapped.output, /^worker-dir-after \['data'\] original$/m, "the worker's directory is as it was");
    assert.equal(existsSync('/etc/a'), false, 'nothing was exchanged into the host');
  });

  test('stdin over the cap and an environment variable outside the allowlist are refused', async () => {
    await refused('stdin-too-large', new RegExp(`stdin of ${MAX_STDIN_BYTES + 1} bytes`));
    await refused('env-outside-allowlist', /env: Unrecognized key.*LD_PRELOAD|LD_PRELOAD/);
  });

  test('a lease left open when the worker ends, and a worker over its output limit, refuse the run', async () => {
    const open = await scenario('left-open');
    assert.match(open.problems, /lease l1 \(\/work\/input\/cases\/a\) was still open when the worker ended/);
    assert.equal(open.admission.classification, 'UNTRUSTED');
    const loud = await scenario('worker-output');
    assert.match(loud.problems, /worker w1: OutputLimitExceeded/);
    assert.equal(loud.admission.classification, 'UNTRUSTED');
  });
});

describe('worker broker request fuzzing', () => {
  /** xorshift32: the same seed gives the same requests (WORLDLINE_FUZZ_SEED replays a run). */
  function rng(seed: number): () => number {
    let x = seed >>> 0 || 1;
    return () => {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      return x / 0x1_0000_0000;
    };
  }
  const seed = Number(process.env.WORLDLINE_FUZZ_SEED ?? Date.now() % 1_000_000);

  function malformed(r: () => number): string {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const ops = ['open', 'start', 'copy-in', 'copy-out', 'close', 'wait', 'output', 'signal', 'teardown', 'exec', ''];
    const values = [null, -1, 0, 1.5, 1e12, '', 'l0', 'l1', '../x', '/work/input/../etc', 'x'.repeat(5000), [], {}, true, 'SIGSTOP'];
    const req: Record<string, unknown> = { op: pick(ops) };
    const keys = ['lease', 'generation', 'path', 'argv', 'cwd', 'timeoutMs', 'stdin', 'env', 'session', 'signal', 'waitMs', 'extra'];
    for (let i = 0, n = 1 + Math.floor(r() * 4); i < n; i++) req[pick(keys)] = pick(values);
    const shapes = [() => JSON.stringify(req), () => JSON.stringify(req).slice(0, -1), () => `[${JSON.stringify(req)}]`, () => '\u0000\u0001', () => JSON.stringify({ ...req, env: { HOME: '/' } })];
    return pick(shapes)();
  }

  test(`every malformed request stops the broker (seed ${seed})`, async () => {
    const r = rng(seed);
    for (let i = 0; i < 40; i++) {
      const line = malformed(r);
      const dir = join(base, `fuzz-${i}`);
      mkdirSync(join(dir, 'copy'), { recursive: true });
      // Peer id 0: this test process (root) is the broker's peer, so the request itself is what is judged.
      const broker = new WorkerBroker(join(dir, 'sock'), 0, HOST_BASE + 2, [{ path: INPUT, hostDir: join(dir, 'copy') }], join(dir, 'cases'), new LeaseLedger(), () => Promise.reject(new Error('no candidate in the fuzz test')));
      await broker.listen();
      const answers = await exchange(join(dir, 'sock'), [line, JSON.stringify({ op: 'open', path: `${INPUT}/x` })]);
      const problems = await broker.shutdown();
      assert.match(answers[0] ?? '', /"error":"PROTOCOL_VIOLATION"/, `request ${i} (${JSON.stringify(line).slice(0, 200)}) is a violation`);
      assert.ok(answers.length === 1 || /the broker has stopped/.test(answers[1] ?? ''), `request ${i}: nothing is served after it: ${answers[1]}`);
      assert.equal(problems.length, 1, `request ${i}: one violation recorded`);
    }
  });
});

/** Sends each line on one connection, waiting for an answer to each; returns the answers received before the broker closed it. */
function exchange(path: string, lines: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const answers: string[] = [];
    const conn = createConnection(path);
    let buf = '';
    let next = 0;
    const send = () => {
      if (next < lines.length) conn.write(`${lines[next++]}\n`);
      else conn.end();
    };
    conn.on('connect', send);
    conn.setEncoding('utf8');
    conn.on('data', (d: string) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        answers.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (!conn.writableEnded) send();
      }
    });
    conn.on('close', () => resolve(answers));
    conn.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? resolve(answers) : reject(e)));
  });
}
