import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ManifestEntry } from '../../core/manifest.js';
import { rootChanges, summarizeChanges } from '../../node-agent/store/change-summary.js';

const file = (path: string, size: number): ManifestEntry => ({ path, type: 'file', mode: 0o644, uid: 0, gid: 0, size, sha256: 'x'.repeat(64) });
const dir = (path: string): ManifestEntry => ({ path, type: 'dir', mode: 0o755, uid: 0, gid: 0 });

test('change summary: one Root\'s changes merge upserts and deletions in byte order, naming the kind of change and sizes', () => {
  const base = new Map<string, ManifestEntry>([['a', file('a', 3)], ['b', file('b', 4)], ['d', file('d', 9)], ['Z', dir('Z')]]);
  const upsert = [file('a', 5), dir('d'), file('c', 1), file('é', 2)];
  const s = rootChanges('r', upsert, ['Z', 'b'], (p) => base.get(p));
  assert.equal(s.total, 6);
  assert.deepEqual(s.changes, [
    { root: 'r', path: 'Z', change: 'Deleted', type: 'dir' },
    { root: 'r', path: 'a', change: 'Modified', type: 'file', size: 5, previousSize: 3 },
    { root: 'r', path: 'b', change: 'Deleted', type: 'file', size: 4 },
    { root: 'r', path: 'c', change: 'Added', type: 'file', size: 1 },
    // A file replaced by a directory is one change, Modified, with no size now and the file's size before.
    { root: 'r', path: 'd', change: 'Modified', type: 'dir', previousSize: 9 },
    { root: 'r', path: 'é', change: 'Added', type: 'file', size: 2 },
  ]);
});

test('change summary: bounded across Roots (by Root name), saying when more changed than it lists', () => {
  const many = Array.from({ length: 40 }, (_, i) => file(`f${String(i).padStart(2, '0')}`, i));
  const b = rootChanges('b', many, [], () => undefined);
  const a = rootChanges('a', many.slice(0, 30), [], () => undefined);
  assert.equal(b.changes.length, 40);
  const s = summarizeChanges([b, a]);
  assert.equal(s.changes.length, 50);
  assert.equal(s.truncated, true);
  assert.deepEqual(s.changes.slice(28, 32).map((c) => `${c.root}/${c.path}`), ['a/f28', 'a/f29', 'b/f00', 'b/f01']);
  const small = summarizeChanges([rootChanges('a', many.slice(0, 3), [], () => undefined)]);
  assert.equal(small.truncated, false);
  assert.equal(small.changes.length, 3);
  // A Root's own bound holds too: a huge change costs at most the limit on status.
  assert.equal(rootChanges('c', many, [], () => undefined, 5).changes.length, 5);
  assert.equal(summarizeChanges([rootChanges('c', many, [], () => undefined, 5)], 50).truncated, true);
});
