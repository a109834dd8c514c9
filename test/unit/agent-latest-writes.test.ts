// latestWrites (node-agent/worlds/status-steps.ts): a World's status writes go one at a time, requests
// made while a write waits share it, each write carries the state as it is when the write starts, and a
// failed write fails only the requests it carried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { latestWrites } from '../../node-agent/worlds/status-steps.js';

/** A write that records the state it carried and finishes when released. */
function gatedWrites() {
  let state = 0;
  let running = 0;
  let maxRunning = 0;
  const carried: number[] = [];
  const gates: (() => void)[] = [];
  const write = (fail = false) => async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    const at = state;
    await new Promise<void>((r) => gates.push(r));
    carried.push(at);
    running--;
    if (fail) throw new Error(`write of ${at} failed`);
  };
  /** Resolves once a write is running (it has read its state and waits to be released). */
  const started = async () => {
    for (let i = 0; gates.length === 0; i++) {
      if (i > 1000) throw new Error('no write started');
      await new Promise((r) => setImmediate(r));
    }
  };
  const release = async () => {
    await started();
    gates.shift()!();
  };
  return { write, started, release, set: (n: number) => { state = n; }, carried, maxRunning: () => maxRunning };
}

test('latestWrites: one write at a time; requests made while one waits to start share the next, which carries the newest state', async () => {
  const request = latestWrites();
  const g = gatedWrites();
  g.set(1);
  const first = request('w', g.write());
  assert.equal(request('w', g.write()), first, 'a request before the first write starts joins it');
  await g.started();
  g.set(2);
  const second = request('w', g.write());
  assert.notEqual(second, first, 'the first write runs: the next request gets a write of its own');
  g.set(3);
  const third = request('w', g.write());
  assert.equal(third, second, 'the third request joins the write that has not started yet');
  await g.release();
  await first;
  await g.release();
  await second;
  assert.deepEqual(g.carried, [1, 3], 'two writes for three requests; the second carries the newest state, never the stale 2');
  assert.equal(g.maxRunning(), 1);
  // Once everything has settled, a new request starts a write of its own at once.
  g.set(4);
  const fourth = request('w', g.write());
  await g.release();
  await fourth;
  assert.deepEqual(g.carried, [1, 3, 4]);
});

test('latestWrites: a failed write rejects the requests it carried; the next write still runs', async () => {
  const request = latestWrites();
  const g = gatedWrites();
  g.set(1);
  const failing = request('w', g.write(true));
  await g.started();
  const joined = request('w', g.write());
  const next = request('w', g.write());
  assert.equal(next, joined);
  await g.release();
  await assert.rejects(failing, /write of 1 failed/);
  await g.release();
  await next;
  assert.deepEqual(g.carried, [1, 1]);
});

test('latestWrites: different keys do not wait for each other', async () => {
  const request = latestWrites();
  const g = gatedWrites();
  const a = request('a', g.write());
  const b = request('b', g.write());
  await g.release();
  await g.release();
  await Promise.all([a, b]);
  assert.equal(g.maxRunning(), 2, 'both ran at once');
});
