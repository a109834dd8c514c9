// The examiner broker's socket on the real kernel: the peer of every connection is identified by the
// kernel (SO_PEERCRED), and only the examiner's host uid and gid are served; everything else — another
// user (host root included), a request that is not JSON, an unknown field, a bound exceeded, an unknown
// session, an oversized line — is a protocol violation that stops the broker and is recorded. Sessions are
// not started here (the examiner run test starts real ones); the starter would fail this test if called.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ExaminerBroker } from '../../node-agent/private-evaluator/examiner-broker.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the examiner broker');
const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('broker');
chmodSync(base, 0o755);
const EXAMINER = 3_500_000;
let n = 0;

async function broker(): Promise<{ b: ExaminerBroker; path: string }> {
  const dir = join(base, `b${++n}`);
  mkdirSync(dir, { mode: 0o755 });
  const path = join(dir, 'broker.sock');
  const b = new ExaminerBroker(path, EXAMINER, () => Promise.reject(new Error('no session may start in this test')));
  await b.listen();
  cleanup.add(() => void b.close());
  return { b, path };
}

/** Sends lines as host uid/gid `id` and returns the answers (one per line, then the broker may close). */
function exchange(path: string, id: number, lines: string[]): Promise<string[]> {
  const script = 'import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\nf=s.makefile("rwb")\nfor l in sys.argv[2:]:\n    f.write(l.encode()+b"\\n"); f.flush()\n    a=f.readline()\n    if not a: break\n    sys.stdout.write(a.decode())\n';
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', script, path, ...lines], { uid: id, gid: id, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out.split('\n').filter((l) => l !== '')));
  });
}

test('only the examiner\'s host uid and gid are served; anyone else stops the broker', async () => {
  const { b, path } = await broker();
  const answers = await exchange(path, EXAMINER, ['{"op":"wait","session":"c1","waitMs":0}']);
  assert.deepEqual(answers.map((a) => JSON.parse(a) as unknown), [{ ok: false, error: 'PROTOCOL_VIOLATION', message: 'wait of unknown session c1' }], 'the examiner is served (and an unknown session is a violation)');
  const other = await broker();
  const root = await new Promise<string>((resolve) => {
    const c = connect(other.path);
    let got = '';
    c.on('data', (d) => (got += d.toString()));
    c.on('close', () => resolve(got));
  });
  assert.match(root, /"error":"PROTOCOL_VIOLATION","message":"a connection from host uid 0 gid 0, not the examiner's"/);
  assert.deepEqual(other.b.violations(), ["examiner broker: a connection from host uid 0 gid 0, not the examiner's"]);
  const third = await broker();
  // The candidate's id cannot even connect: the socket is 0600 and the examiner's (EACCES before the broker sees it).
  assert.deepEqual(await exchange(third.path, EXAMINER + 2, ['{"op":"wait","session":"c1","waitMs":0}']), []);
  assert.deepEqual(third.b.violations(), []);
  assert.equal(b.violations().length, 1);
});

test('malformed requests are violations, each stopping the broker: nothing after one is served', async () => {
  const bad = [
    'not json',
    '{"op":"wait","session":"c1","waitMs":2001}',
    '{"op":"wait","session":"c1","waitMs":0,"extra":1}',
    '{"op":"run","argv":[],"cwd":"/","timeoutMs":1000}',
    '{"op":"run","argv":["/bin/true"],"cwd":"relative","timeoutMs":1000}',
    '{"op":"run","argv":["/bin/true"],"cwd":"/a/../b","timeoutMs":1000}',
    '{"op":"signal","session":"c1","signal":"SIGSTOP"}',
    '{"op":"output","session":"c1","offset":0,"max":65537}',
    '{"op":"exec","argv":["/bin/true"]}',
    `{"op":"run","argv":["${'x'.repeat(70 * 1024)}"],"cwd":"/","timeoutMs":1}`,
  ];
  for (const line of bad) {
    const { b, path } = await broker();
    const answers = await exchange(path, EXAMINER, [line, '{"op":"wait","session":"c1","waitMs":0}']);
    assert.equal(answers.length, 1, `one answer, then the broker closed: ${line.slice(0, 60)}`);
    assert.equal((JSON.parse(answers[0]!) as { error: string }).error, 'PROTOCOL_VIOLATION', line.slice(0, 60));
    assert.equal(b.violations().length, 1, line.slice(0, 60));
    assert.equal(b.sessionCount(), 0);
  }
});
