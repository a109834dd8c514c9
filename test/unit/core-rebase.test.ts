// The rebase of a candidate onto a PRIME that moved, as pure logic over manifests: independent changes
// commute (either order gives the same tree, and it is a well-formed tree), and every meeting of the two
// changes is refused naming its paths. Property-tested over random trees and random edits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sha256Hex } from '../../core/digest.js';
import { changedBetween, conflictingPaths, rebase, ROOT_PATH, type RootChange } from '../../core/collapse/rebase.js';
import { measuredEntryJson, sortManifest, validateManifest, type Manifest, type ManifestEntry } from '../../core/manifest.js';

const file = (path: string, content: string, mode = 0o644): ManifestEntry => ({ path, type: 'file', mode, uid: 1000, gid: 1000, size: content.length, sha256: sha256Hex(content) });
const dir = (path: string, mode = 0o755): ManifestEntry => ({ path, type: 'dir', mode, uid: 1000, gid: 1000 });
const tree = (...entries: ManifestEntry[]): Manifest => sortManifest({ entries, root: { mode: 0o755, uid: 1000, gid: 1000 } });

/** The change from `from` to `to`, as a candidate's delta records it. */
function changeOf(from: Manifest, to: Manifest): RootChange {
  const now = new Map(to.entries.map((e) => [e.path, e]));
  const changed = changedBetween(from, to);
  return {
    upsert: changed.filter((p) => now.has(p)).map((p) => now.get(p)!),
    deleted: changed.filter((p) => !now.has(p)),
    ...(to.root ? { rootAttributes: to.root } : {}),
  };
}

const text = (m: Manifest): string => JSON.stringify({ e: m.entries.map(measuredEntryJson), r: m.root });

test('independent edits rebase: PRIME edited one file, the candidate another and added a directory', () => {
  const base = tree(dir('src'), file('src/a', 'a'), file('src/b', 'b'), file('README', 'r'));
  const prime = tree(dir('src'), file('src/a', 'a2'), file('src/b', 'b'), file('README', 'r'));
  const cand = tree(dir('src'), file('src/a', 'a'), file('src/b', 'b3'), file('README', 'r'), dir('docs'), file('docs/x', 'x'));
  const r = rebase(base, prime, changeOf(base, cand));
  assert.equal(r.outcome, 'rebased');
  assert.ok(r.outcome === 'rebased');
  assert.equal(text(r.manifest), text(tree(dir('src'), file('src/a', 'a2'), file('src/b', 'b3'), file('README', 'r'), dir('docs'), file('docs/x', 'x'))));
});

test('the same path on both sides, a file under a directory the other side deleted, and a chmod of a parent are conflicts naming the paths', () => {
  const base = tree(dir('src'), file('src/a', 'a'), dir('lib'), file('lib/l', 'l'));
  const bothEdit = rebase(base, tree(dir('src'), file('src/a', 'P'), dir('lib'), file('lib/l', 'l')), changeOf(base, tree(dir('src'), file('src/a', 'C'), dir('lib'), file('lib/l', 'l'))));
  assert.deepEqual(bothEdit, { outcome: 'conflict', paths: ['src/a'] });
  const underDeleted = rebase(base, tree(dir('src'), file('src/a', 'a')), changeOf(base, tree(dir('src'), file('src/a', 'a'), dir('lib'), file('lib/l', 'l'), file('lib/new', 'n'))));
  assert.deepEqual(underDeleted, { outcome: 'conflict', paths: ['lib', 'lib/new'] });
  const chmodParent = rebase(base, tree(dir('src', 0o700), file('src/a', 'a'), dir('lib'), file('lib/l', 'l')), changeOf(base, tree(dir('src'), file('src/a', 'a'), file('src/n', 'n'), dir('lib'), file('lib/l', 'l'))));
  assert.deepEqual(chmodParent, { outcome: 'conflict', paths: ['src', 'src/n'] });
});

test('root attributes: one side changing them rebases with that change; both changing them differently conflicts at "."', () => {
  const base = tree(file('f', 'f'));
  const primeRoot = { ...base, root: { mode: 0o700, uid: 1000, gid: 1000 } };
  const candEdit = tree(file('f', 'g'));
  const r = rebase(base, primeRoot, changeOf(base, candEdit));
  assert.ok(r.outcome === 'rebased');
  assert.deepEqual(r.manifest.root, { mode: 0o700, uid: 1000, gid: 1000 });
  const candRoot = { ...base, root: { mode: 0o750, uid: 1000, gid: 1000 } };
  assert.deepEqual(rebase(base, primeRoot, changeOf(base, candRoot)), { outcome: 'conflict', paths: [ROOT_PATH] });
});

// ---- properties over random trees -------------------------------------------------------------------

const NAMES = ['a', 'b', 'c'];

/** A random well-formed tree over a small universe of paths (depth <= 3). */
function randomTree(rand: () => number): Manifest {
  const entries: ManifestEntry[] = [];
  const grow = (prefix: string, depth: number): void => {
    for (const n of NAMES) {
      const p = prefix ? `${prefix}/${n}` : n;
      const r = rand();
      if (r < 0.35) entries.push(file(p, String(Math.floor(rand() * 3))));
      else if (r < 0.6 && depth < 3) {
        entries.push(dir(p));
        grow(p, depth + 1);
      }
    }
  };
  grow('', 1);
  return tree(...entries);
}

/** A random edit of a tree: delete a subtree, add a file in an existing directory, rewrite or chmod an entry. */
function randomEdit(m: Manifest, rand: () => number, tag: string): Manifest {
  const entries = new Map(m.entries.map((e) => [e.path, e]));
  const edits = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < edits; i++) {
    const list = [...entries.values()];
    const pick = list[Math.floor(rand() * list.length)];
    const r = rand();
    if (pick && r < 0.25) {
      for (const p of [...entries.keys()]) if (p === pick.path || p.startsWith(`${pick.path}/`)) entries.delete(p);
    } else if (pick && r < 0.5) {
      entries.set(pick.path, pick.type === 'file' ? file(pick.path, `${tag}${i}`) : dir(pick.path, 0o700));
    } else if (pick && r < 0.6) {
      entries.set(pick.path, { ...pick, mode: 0o600 });
    } else {
      const dirs = ['', ...list.filter((e) => e.type === 'dir').map((e) => e.path)];
      const parent = dirs[Math.floor(rand() * dirs.length)] ?? '';
      const p = parent ? `${parent}/${tag}${i}` : `${tag}${i}`;
      if (!entries.has(p)) entries.set(p, file(p, tag));
    }
  }
  return tree(...entries.values());
}

function seeded(seed: number): () => number {
  let x = seed | 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}


test('property: a rebase is refused exactly when the two changes meet; otherwise both orders give one well-formed tree', () => {
  let rebased = 0;
  let conflicts = 0;
  fc.assert(
    fc.property(fc.integer(), (seed) => {
      const rand = seeded(seed);
      const base = randomTree(rand);
      const prime = randomEdit(base, rand, 'p');
      const cand = randomEdit(base, rand, 'c');
      const candChange = changeOf(base, cand);
      const primeChange = changeOf(base, prime);
      const meet = conflictingPaths([...candChange.upsert.map((e) => e.path), ...candChange.deleted], [...primeChange.upsert.map((e) => e.path), ...primeChange.deleted]);
      const r = rebase(base, prime, candChange);
      if (r.outcome === 'conflict') {
        conflicts++;
        assert.ok(meet.length > 0);
        assert.deepEqual(r.paths, meet);
        return;
      }
      rebased++;
      assert.deepEqual(meet, []);
      // The other order: PRIME's change applied on top of the candidate's tree.
      const other = rebase(base, cand, primeChange);
      assert.ok(other.outcome === 'rebased');
      assert.equal(text(r.manifest), text(other.manifest));
      assert.deepEqual(validateManifest(r.manifest), [], text(r.manifest));
      // Nothing of either change is lost: every changed path has its side's entry in the result.
      const result = new Map(r.manifest.entries.map((e) => [e.path, measuredEntryJson(e)]));
      for (const side of [candChange, primeChange]) {
        for (const e of side.upsert) assert.equal(result.get(e.path), measuredEntryJson(e));
        for (const p of side.deleted) assert.equal(result.has(p), false);
      }
    }),
    { numRuns: 2000, seed: 20261202 },
  );
  // Both outcomes are exercised (a generator that only ever conflicts would prove nothing).
  assert.ok(rebased > 100 && conflicts > 100, `rebased ${rebased}, conflicts ${conflicts}`);
});
