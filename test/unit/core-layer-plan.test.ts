// core/layer-plan.ts against a model of overlayfs: over random trees and random changes (files, symlinks,
// directories added, removed, replaced by another type, owners and modes changed, whole subtrees removed
// and created again), the layer planLayer computes, stacked on the base, shows exactly the next tree —
// and it holds nothing outside the changed paths and the directories on their way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { entryAt, planLayer, type LayerItem } from '../../core/layer-plan.js';
import { diffManifests, sortManifest, validateManifest, type Manifest, type ManifestEntry } from '../../core/manifest.js';
import { compareBytes, parentOf } from '../../core/relative-path.js';

/** overlayfs as the store mounts it, on manifests: the merged view of `layer` over `lower`. */
function overlay(lower: Manifest, layer: readonly LayerItem[]): Manifest {
  const tree = new Map(lower.entries.map((e) => [e.path, e]));
  const dropBelow = (p: string): void => {
    for (const k of [...tree.keys()]) if (k.startsWith(`${p}/`)) tree.delete(k);
  };
  for (const item of [...layer].sort((a, b) => compareBytes(a.path, b.path))) {
    if (item.kind === 'whiteout') {
      tree.delete(item.path);
      dropBelow(item.path);
      continue;
    }
    const under = tree.get(item.path);
    // A directory over a directory merges (the topmost attributes); anything else stands alone.
    if (!(item.entry.type === 'dir' && under?.type === 'dir')) dropBelow(item.path);
    tree.set(item.path, item.entry);
  }
  return sortManifest({ entries: [...tree.values()], ...(lower.root ? { root: lower.root } : {}) });
}

const NAMES = ['a', 'b', 'c'];

/** An entry owned by root. */
const entry = (e: Omit<ManifestEntry, 'uid' | 'gid'>): ManifestEntry => ({ ...e, uid: 0, gid: 0 });

/** A random valid tree of depth ≤ 3 over a small name space (so changes collide often). */
function arbTree(): fc.Arbitrary<Manifest> {
  const node = (path: string, depth: number): fc.Arbitrary<ManifestEntry[]> =>
    fc.oneof(
      fc.constant<ManifestEntry[]>([]),
      fc.record({ mode: fc.constantFrom(0o644, 0o600), sha: fc.constantFrom('1', '2') }).map(({ mode, sha }) => [entry({ path, type: 'file', mode, size: 1, sha256: sha.repeat(64) })]),
      fc.constantFrom('x', 'y').map((target) => [entry({ path, type: 'symlink', mode: 0o777, target })]),
      ...(depth < 3
        ? [fc.tuple(fc.constantFrom(0o755, 0o700), fc.tuple(...NAMES.map((n) => node(`${path}/${n}`, depth + 1)))).map(([mode, kids]) => [entry({ path, type: 'dir', mode }), ...kids.flat()])]
        : []),
    );
  return fc.tuple(...NAMES.map((n) => node(n, 1))).map((kids) => sortManifest({ entries: kids.flat(), root: { mode: 0o755, uid: 0, gid: 0 } }));
}

test('a planned layer over its base shows exactly the next tree', () => {
  fc.assert(
    fc.property(arbTree(), arbTree(), (base, next) => {
      assert.deepEqual(validateManifest(base), []);
      assert.deepEqual(validateManifest(next), []);
      const d = diffManifests(base, next);
      const changed = [...d.added, ...d.modified, ...d.deleted];
      const layer = planLayer(base, next, changed);
      assert.deepEqual(overlay(base, layer).entries, next.entries);
      // Only changed paths and directories on their way; each entry is the next tree's.
      const ways = new Set(changed.flatMap((p) => {
        const up: string[] = [];
        for (let q = parentOf(p); q !== ''; q = parentOf(q)) up.push(q);
        return up;
      }));
      for (const item of layer) {
        assert.ok(changed.includes(item.path) || ways.has(item.path), `${item.path} is neither changed nor on the way to a change`);
        if (item.kind === 'entry') assert.deepEqual(item.entry, entryAt(next, item.path));
        else assert.equal(entryAt(next, item.path), undefined, `${item.path} is whited out but in the next tree`);
      }
    }),
    { numRuns: 2000 },
  );
});

test('stacked layer upon layer, the merged view follows every generation', () => {
  fc.assert(
    fc.property(fc.array(arbTree(), { minLength: 2, maxLength: 6 }), (trees) => {
      let merged = trees[0]!;
      for (const next of trees.slice(1)) {
        const d = diffManifests(merged, next);
        merged = overlay(merged, planLayer(merged, next, [...d.added, ...d.modified, ...d.deleted]));
        assert.deepEqual(merged.entries, next.entries);
      }
    }),
    { numRuns: 500 },
  );
});

test('a changed path whose parent the next tree lacks is refused, not guessed', () => {
  const base: Manifest = { entries: [] };
  const next: Manifest = { entries: [{ path: 'a/b', type: 'file', mode: 0o644, uid: 0, gid: 0, size: 1, sha256: '1'.repeat(64) }] };
  assert.throws(() => planLayer(base, next, ['a/b']), /no directory a above a\/b/);
});
