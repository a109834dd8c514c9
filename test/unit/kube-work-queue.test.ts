import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../support/fake-clock.js';
import { WorkQueue } from '../../kube/work-queue.js';

const noJitter = { random: () => 0 };

/** Resolves get() if an item is ready now, else undefined (without consuming a later item). */
async function tryGet(q: WorkQueue): Promise<string | undefined> {
  if (q.len() === 0) return undefined;
  return q.get();
}

test('work queue: duplicates collapse to one pending item', async () => {
  const q = new WorkQueue();
  q.add('a');
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.len(), 2);
  assert.equal(await q.get(), 'a');
  assert.equal(await q.get(), 'b');
  assert.equal(q.len(), 0);
});

test('work queue: a key added while processing is re-queued only after done()', async () => {
  const q = new WorkQueue();
  q.add('a');
  const k = await q.get();
  assert.equal(k, 'a');
  q.add('a');
  q.add('a');
  assert.equal(q.len(), 0, 'not handed out twice concurrently');
  q.done('a');
  assert.equal(q.len(), 1);
  assert.equal(await q.get(), 'a');
  q.done('a');
  assert.equal(q.len(), 0);
});

test('work queue: a waiting get() is woken by add()', async () => {
  const q = new WorkQueue();
  const p = q.get();
  q.add('x');
  assert.equal(await p, 'x');
});

test('work queue: backoff grows exponentially, is capped, and forget() resets it', async (t) => {
  const cases: { base: number; max: number; want: number[] }[] = [
    { base: 5, max: 300_000, want: [5, 10, 20, 40, 80, 160] },
    { base: 100, max: 1000, want: [100, 200, 400, 800, 1000, 1000, 1000] },
    { base: 1, max: 1, want: [1, 1, 1] },
  ];
  for (const c of cases) {
    await t.test(`base ${c.base} max ${c.max}`, async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock, baseDelayMs: c.base, maxDelayMs: c.max, ...noJitter });
      for (const [i, want] of c.want.entries()) {
        assert.equal(q.numRequeues('k'), i);
        q.addRateLimited('k');
        await clock.advance(want - 1);
        assert.equal(await tryGet(q), undefined, `retry ${i} not before ${want}ms`);
        await clock.advance(1);
        assert.equal(await tryGet(q), 'k', `retry ${i} at ${want}ms`);
        q.done('k');
      }
      q.forget('k');
      assert.equal(q.numRequeues('k'), 0);
      q.addRateLimited('k');
      await clock.advance(c.base);
      assert.equal(await tryGet(q), 'k', 'after forget the first delay is the base again');
    });
  }
});

test('work queue: jitter only shortens delays, by at most the jitter fraction', () => {
  for (const r of [0, 0.25, 0.5, 0.999]) {
    const q = new WorkQueue({ baseDelayMs: 1000, maxDelayMs: 10_000, random: () => r, jitter: 0.2 });
    for (let n = 0; n < 6; n++) {
      const raw = Math.min(10_000, 1000 * 2 ** n);
      const d = q.delayFor(n);
      assert.ok(d <= raw && d >= raw * 0.8, `n=${n} r=${r} d=${d}`);
    }
  }
});

test('work queue: addAfter delays, and the earliest time wins for a waiting key', async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.addAfter('a', 100);
  q.addAfter('a', 500); // later: ignored
  q.addAfter('b', 300);
  q.addAfter('b', 50); // earlier: replaces
  q.addAfter('c', 0); // immediate
  assert.equal(await tryGet(q), 'c');
  await clock.advance(50);
  assert.equal(await tryGet(q), 'b');
  await clock.advance(50);
  assert.equal(await tryGet(q), 'a');
  await clock.advance(1000);
  assert.equal(q.len(), 0, 'no second delivery of a or b');
});

test('work queue: addAfter of a key that is already queued does not duplicate it', async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add('a');
  q.addAfter('a', 10);
  await clock.advance(10);
  assert.equal(q.len(), 1);
});

test('work queue: shutDown() makes get() return undefined, wakes waiters and drops timers', async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  const waiting = q.get();
  q.addAfter('later', 10);
  q.shutDown();
  assert.equal(await waiting, undefined);
  assert.equal(await q.get(), undefined);
  q.add('x');
  await clock.advance(100);
  assert.equal(q.len(), 0);
  assert.equal(await q.get(), undefined);
});

test('work queue: a failing key is not run again before its backoff by its own events, during or after processing', async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock, baseDelayMs: 100, maxDelayMs: 10_000, ...noJitter });
  q.add('k');
  assert.equal(await tryGet(q), 'k');
  // The attempt writes status (an event adds the key while it is processed), then fails.
  q.add('k');
  q.addRateLimited('k');
  q.done('k');
  assert.equal(await tryGet(q), undefined, 'not re-queued by done() while it backs off');
  // The status write's event arrives after the attempt ended: still not before the backoff.
  q.add('k');
  assert.equal(await tryGet(q), undefined, 'not queued by add() while it backs off');
  await clock.advance(99);
  assert.equal(await tryGet(q), undefined);
  await clock.advance(1);
  assert.equal(await tryGet(q), 'k', 'due when the backoff ends, once');
  assert.equal(await tryGet(q), undefined);
  // A success forgets the failures: events run the key at once again.
  q.forget('k');
  q.done('k');
  q.add('k');
  assert.equal(await tryGet(q), 'k');
  q.done('k');
  // A requeueAfter (no failure) does not hold back an event.
  q.addAfter('k', 1000);
  q.add('k');
  assert.equal(await tryGet(q), 'k', 'a plain delayed add is not a backoff');
  q.done('k');
});
