import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../support/fake-clock.js';
import { Refusal } from '../../core/errors.js';
import { ControllerRunner, type ReconcileMetrics, type ReconcileResult } from '../../kube/reconcile.js';
import { WorkQueue } from '../../kube/work-queue.js';

function recorder(): ReconcileMetrics & { results: string[] } {
  const results: string[] = [];
  return { results, observe: (kind, result, seconds) => { assert.ok(seconds >= 0); results.push(`${kind}:${result}`); } };
}

function setup(reconcile: (key: string, call: number) => Promise<ReconcileResult>, onTerminal?: (key: string, err: Refusal) => Promise<void>) {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock, baseDelayMs: 10, maxDelayMs: 1000, random: () => 0 });
  const metrics = recorder();
  const calls: string[] = [];
  const runner = new ControllerRunner({
    kind: 'World',
    queue,
    metrics,
    onTerminal,
    reconcile: (key) => {
      calls.push(key);
      return reconcile(key, calls.length);
    },
  });
  runner.start();
  return { clock, queue, metrics, calls, runner };
}

test('runner: an error is retried with growing per-key backoff, then forgotten on success', async () => {
  const { clock, queue, metrics, calls, runner } = setup(async (_k, call) => {
    if (call <= 3) throw new Error(`transient ${call}`);
  });
  runner.enqueue('ns/a');
  await clock.advance(0);
  assert.equal(calls.length, 1);
  // Delays 10, 20, 40 ms (base 10, no jitter).
  for (const [i, delay] of [10, 20, 40].entries()) {
    await clock.advance(delay - 1);
    assert.equal(calls.length, i + 1, `no retry before ${delay}ms`);
    await clock.advance(1);
    assert.equal(calls.length, i + 2, `retry at ${delay}ms`);
  }
  assert.equal(queue.numRequeues('ns/a'), 0, 'success forgets the failures');
  await clock.advance(10_000);
  assert.equal(calls.length, 4);
  assert.deepEqual(metrics.results, ['World:error', 'World:error', 'World:error', 'World:success']);
  await runner.stop();
});

test('runner: a Refusal is recorded via onTerminal and not retried', async () => {
  const recorded: [string, string][] = [];
  const { clock, queue, metrics, calls, runner } = setup(
    async () => { throw new Refusal('ROOTS_EMPTY', 'spec.roots is empty'); },
    async (key, err) => { recorded.push([key, err.code]); },
  );
  runner.enqueue('ns/b');
  await clock.advance(0);
  await clock.advance(600_000);
  assert.equal(calls.length, 1);
  assert.deepEqual(recorded, [['ns/b', 'ROOTS_EMPTY']]);
  assert.equal(queue.numRequeues('ns/b'), 0);
  assert.deepEqual(metrics.results, ['World:terminal']);
  // A new event for the key still reconciles it again (level-based).
  runner.enqueue('ns/b');
  await clock.advance(0);
  assert.equal(calls.length, 2);
  await runner.stop();
});

test('runner: an errno error (its code UPPER_SNAKE, like EBUSY) is transient: retried, never recorded as terminal', async () => {
  const recorded: string[] = [];
  const { clock, metrics, calls, runner } = setup(
    async (_k, call) => {
      if (call === 1) throw Object.assign(new Error('EBUSY: resource busy or locked, rmdir'), { code: 'EBUSY', errno: -16, syscall: 'rmdir' });
    },
    async (key) => { recorded.push(key); },
  );
  runner.enqueue('ns/e');
  await clock.advance(0);
  assert.equal(calls.length, 1);
  await clock.advance(10);
  assert.equal(calls.length, 2, 'retried after its backoff');
  assert.deepEqual(recorded, []);
  assert.deepEqual(metrics.results, ['World:error', 'World:success']);
  await runner.stop();
});

test('runner: if recording a terminal error fails, the key is retried', async () => {
  let fail = true;
  const { clock, calls, runner } = setup(
    async () => { throw new Refusal('ROOTS_EMPTY', 'bad'); },
    async () => { if (fail) { fail = false; throw new Error('status write conflict'); } },
  );
  runner.enqueue('k');
  await clock.advance(0);
  assert.equal(calls.length, 1);
  await clock.advance(10);
  assert.equal(calls.length, 2);
  await clock.advance(10_000);
  assert.equal(calls.length, 2);
  await runner.stop();
});

test('runner: requeueAfterMs is honored and counts as requeue', async () => {
  const { clock, metrics, calls, runner } = setup(async (_k, call) => (call === 1 ? { requeueAfterMs: 1000 } : undefined));
  runner.enqueue('c');
  await clock.advance(0);
  assert.equal(calls.length, 1);
  await clock.advance(999);
  assert.equal(calls.length, 1);
  await clock.advance(1);
  assert.equal(calls.length, 2);
  assert.deepEqual(metrics.results, ['World:requeue', 'World:success']);
  await runner.stop();
});

test('runner: stop() waits for in-flight reconciles and hands out no more keys', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  const { clock, calls, runner } = setup(async () => { await gate; });
  runner.enqueue('a');
  runner.enqueue('b');
  await clock.advance(0);
  assert.deepEqual(calls, ['a']);
  let stopped = false;
  const stopping = runner.stop().then(() => { stopped = true; });
  await clock.advance(0);
  assert.equal(stopped, false, 'waits for the in-flight reconcile');
  release();
  await stopping;
  assert.deepEqual(calls, ['a'], 'b was never started');
});

test('runner: several workers never process the same key concurrently', async () => {
  let active = 0;
  let maxActive = 0;
  const perKey = new Map<string, number>();
  const clock = new FakeClock();
  const runner = new ControllerRunner({
    kind: 'X',
    workers: 4,
    queue: new WorkQueue({ clock }),
    reconcile: async (key) => {
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
      assert.equal(perKey.get(key), 1, `${key} concurrently processed`);
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setImmediate(r));
      active--;
      perKey.set(key, perKey.get(key)! - 1);
    },
  });
  runner.start();
  for (let i = 0; i < 50; i++) runner.enqueue(`k${i % 5}`);
  for (let i = 0; i < 20; i++) await clock.advance(0);
  assert.ok(maxActive > 1 && maxActive <= 4, `maxActive ${maxActive}`);
  await runner.stop();
});
