// A Collapse's progress statuses held while it is quick (node-agent/collapses/progress-hold.ts): a
// collapse that ends within the hold writes none of them; one that takes longer writes the latest once
// the hold passed and each later one as it comes, in order; with no hold each is written at once. The
// writer here records calls: the hold's own logic is what is under test (the stack's collapse tests
// show the statuses on the API server).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProgressHold } from '../../node-agent/collapses/progress-hold.js';

function recorder(opts: { delayMs?: number; fail?: string } = {}): { written: string[]; failures: string[]; write: (s: string) => Promise<void>; failed: (e: Error) => void } {
  const written: string[] = [];
  const failures: string[] = [];
  return {
    written,
    failures,
    write: async (s) => {
      if (opts.delayMs) await sleep(opts.delayMs);
      if (s === opts.fail) throw new Error(`refused ${s}`);
      written.push(s);
    },
    failed: (e) => failures.push(e.message),
  };
}

test('a collapse that ends within its hold writes none of its progress', async () => {
  const r = recorder();
  const h = new ProgressHold(r.write, 50, r.failed);
  await h.note('Preparing');
  await h.note('Authorized');
  await h.end();
  await sleep(80); // past the hold: the ended hold's timer wrote nothing
  assert.deepEqual(r.written, []);
  assert.deepEqual(r.failures, []);
});

test('past the hold only the latest kept status is written, then each later one in order', async () => {
  const r = recorder();
  const h = new ProgressHold(r.write, 30, r.failed);
  await h.note('Preparing');
  await h.note('Authorized');
  await sleep(60);
  assert.deepEqual(r.written, ['Authorized'], 'Preparing was superseded while held');
  await h.note('Later');
  assert.deepEqual(r.written, ['Authorized', 'Later'], 'after the hold a note is written before it resolves');
  await h.end();
  assert.deepEqual(r.written, ['Authorized', 'Later']);
});

test('with no hold every note is written at once, in order', async () => {
  const r = recorder({ delayMs: 5 });
  const h = new ProgressHold(r.write, 0, r.failed);
  const a = h.note('Preparing');
  const b = h.note('Authorized');
  await Promise.all([a, b]);
  assert.deepEqual(r.written, ['Preparing', 'Authorized']);
});

test('release() writes what is kept now, and end() waits for a write under way', async () => {
  const r = recorder({ delayMs: 20 });
  const h = new ProgressHold(r.write, 60_000, r.failed);
  await h.note('Authorized');
  void h.release(); // the controller's grant answers Authorized: written before the hold passed
  await h.end(); // the final status comes after the one under way, never before it
  assert.deepEqual(r.written, ['Authorized']);
});

test('a released write that fails is reported, not thrown, and later notes still go out', async () => {
  const r = recorder({ fail: 'Preparing' });
  const h = new ProgressHold(r.write, 60_000, r.failed);
  await h.note('Preparing');
  await h.release();
  assert.deepEqual(r.failures, ['refused Preparing']);
  await h.note('Authorized');
  assert.deepEqual(r.written, ['Authorized']);
});

test('a note written without a hold that fails is thrown to the collapse, as an unheld write always was', async () => {
  const r = recorder({ fail: 'Preparing' });
  const h = new ProgressHold(r.write, 0, r.failed);
  await assert.rejects(h.note('Preparing'), /refused Preparing/);
  await h.note('Authorized');
  assert.deepEqual(r.written, ['Authorized']);
  assert.deepEqual(r.failures, []);
});
