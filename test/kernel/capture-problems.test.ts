// Capture refuses to record what it cannot vouch for: a changed file owned by a host id outside the
// world's range (CAPTURE_OWNER_UNMAPPED), and a changed file replaced between the walk's lstat and its
// open (CAPTURE_CHANGED_DURING_READ). Real upper directories on the host, real owners (as root), and a
// real concurrent writer (a worker thread replacing the file while capture reads it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { manifestBaseIndex } from '../../node-agent/store/base-index.js';
import { upperTopOwner } from '../../node-agent/sandbox/rootfs.js';
import { captureLayer } from '../../node-agent/store/capture-layer.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup } from './native-fixtures.js';

requireRoot('the capture problem tests (files owned by other host ids)');

const cleanup = new Cleanup();
after(() => cleanup.run());
const scratch = cleanup.tempDir('capture-problems');
const EMPTY_BASE = manifestBaseIndex({ entries: [] });
const ID_BASE = 200_000;
const ID_COUNT = 65_536;

test('a changed file owned by a host id outside the world\'s range is not captured: CAPTURE_OWNER_UNMAPPED names it', async () => {
  const upper = join(scratch, 'unmapped');
  mkdirSync(upper, { mode: 0o755 });
  chownSync(upper, ID_BASE, ID_BASE);
  const inside = join(upper, 'inside.txt');
  writeFileSync(inside, 'mine\n');
  chownSync(inside, ID_BASE + 1000, ID_BASE + 1000);
  // Owned by a host id below the range (what a host process writing into the upper layer leaves).
  const outside = join(upper, 'outside.txt');
  writeFileSync(outside, 'not the world\'s\n');
  chownSync(outside, 70_000, ID_BASE + 1000);

  const delta = await captureLayer(upper, EMPTY_BASE, ID_BASE, ID_COUNT);
  assert.deepEqual(delta.problems.map((p) => [p.code, p.path]), [['CAPTURE_OWNER_UNMAPPED', 'outside.txt']], JSON.stringify(delta.problems));
  assert.match(delta.problems[0]!.message, /host id 70000/);
  assert.deepEqual(delta.upsert.map((e) => [e.path, e.uid, e.gid]), [['inside.txt', 1000, 1000]], 'the in-range file is captured with its world-side owner, the other is not');

  // The same tree captured with a range that holds both owners has no problem: the range decides.
  const wide = await captureLayer(upper, EMPTY_BASE, 0, ID_BASE + ID_COUNT);
  assert.deepEqual(wide.problems, []);
  assert.deepEqual(wide.upsert.map((e) => e.path), ['inside.txt', 'outside.txt']);
});

test('the upper directory itself owned outside the range is reported too (path ".")', async () => {
  const upper = join(scratch, 'unmapped-top');
  mkdirSync(upper, { mode: 0o755 });
  chownSync(upper, 0, 0);
  const delta = await captureLayer(upper, EMPTY_BASE, ID_BASE, ID_COUNT);
  assert.ok(delta.problems.length > 0, 'the unmapped top is not reported');
  for (const p of delta.problems) assert.deepEqual([p.code, p.path], ['CAPTURE_OWNER_UNMAPPED', '.'], JSON.stringify(delta.problems));
  assert.equal(delta.rootAttributes, undefined, 'no root attributes are made up for an unmapped top');
});

test('a Root top owned by an id the world cannot map keeps that owner in the upper layer, and capture finds it unchanged (only the same id)', async () => {
  // What sandbox/rootfs.ts gives a Root whose directory belongs to uid/gid 70000 (runAsUser set).
  const FOREIGN = 70_000;
  assert.equal(upperTopOwner(FOREIGN, ID_BASE), FOREIGN, 'an unmappable owner stays the host\'s own');
  assert.equal(upperTopOwner(1000, ID_BASE), ID_BASE + 1000, 'a mappable owner is the world\'s mapping of it');
  const base = manifestBaseIndex({ entries: [], root: { mode: 0o755, uid: FOREIGN, gid: FOREIGN } });
  const upper = join(scratch, 'foreign-top');
  mkdirSync(upper, { mode: 0o755 });
  chownSync(upper, upperTopOwner(FOREIGN, ID_BASE), upperTopOwner(FOREIGN, ID_BASE));
  writeFileSync(join(upper, 'new.txt'), 'made by the agent\n');
  chownSync(join(upper, 'new.txt'), ID_BASE + 1000, ID_BASE + 1000);
  const delta = await captureLayer(upper, base, ID_BASE, ID_COUNT);
  assert.deepEqual(delta.problems, []);
  assert.equal(delta.rootChanged, false, 'the top is unchanged');
  assert.deepEqual(delta.upsert.map((e) => [e.path, e.uid]), [['new.txt', 1000]]);
  // Any other unmappable owner on the top is still refused.
  chownSync(upper, FOREIGN + 1, FOREIGN);
  const other = await captureLayer(upper, base, ID_BASE, ID_COUNT);
  assert.deepEqual(other.problems.map((p) => [p.code, p.path]), [['CAPTURE_OWNER_UNMAPPED', '.']]);
});

/** Starts a worker that keeps replacing `target` with a new inode (write a sibling, rename it over) until stopped. */
function replaceForever(target: string, spare: string): { stop: () => Promise<number> } {
  const flag = new Int32Array(new SharedArrayBuffer(8));
  const source = `
    const { writeFileSync, renameSync } = require('node:fs');
    const { workerData } = require('node:worker_threads');
    const flag = workerData.flag;
    let n = 0;
    while (Atomics.load(flag, 0) === 0) {
      writeFileSync(workerData.spare, 'replacement ' + n + '\\n');
      renameSync(workerData.spare, workerData.target);
      n++;
    }
    Atomics.store(flag, 1, n);
  `;
  const worker = new Worker(source, { eval: true, workerData: { flag, target, spare } });
  const exited = new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', () => resolve());
  });
  return {
    stop: async () => {
      Atomics.store(flag, 0, 1);
      await exited;
      return Atomics.load(flag, 1);
    },
  };
}

test('a changed file replaced while capture reads it is reported CAPTURE_CHANGED_DURING_READ, never recorded with other bytes', async () => {
  const dir = join(scratch, 'racing');
  const upper = join(dir, 'upper');
  mkdirSync(upper, { recursive: true, mode: 0o755 });
  const target = join(upper, 'hot.txt');
  writeFileSync(target, 'first\n');
  const replacer = replaceForever(target, join(dir, 'spare.txt'));
  let attempts = 0;
  let hit: Awaited<ReturnType<typeof captureLayer>> | undefined;
  try {
    for (; attempts < 20_000 && !hit; attempts++) {
      const delta = await captureLayer(upper, EMPTY_BASE, 0, ID_COUNT);
      if (delta.problems.length > 0) hit = delta;
      else assert.deepEqual(delta.upsert.map((e) => e.path), ['hot.txt'], 'a capture without a problem records the file');
    }
  } finally {
    const replaced = await replacer.stop();
    assert.ok(replaced > 0, 'the worker never replaced the file');
  }
  assert.ok(hit, `no capture in ${attempts} saw the file replaced between its lstat and its open`);
  assert.deepEqual(hit.problems.map((p) => [p.code, p.path]), [['CAPTURE_CHANGED_DURING_READ', 'hot.txt']], JSON.stringify(hit.problems));
  assert.deepEqual(hit.upsert, [], 'the replaced file is not recorded');

  // Once nothing replaces it, the same file captures cleanly: the problem came from the race.
  const still = await captureLayer(upper, EMPTY_BASE, 0, ID_COUNT);
  assert.deepEqual(still.problems, []);
  assert.deepEqual(still.upsert.map((e) => e.path), ['hot.txt']);
});
