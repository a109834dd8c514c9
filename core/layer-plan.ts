// What an overlay layer must hold so that, over a tree with manifest `base`, the merged view has
// manifest `next` (node-agent/collapses/stage-layer.ts writes it, node-agent/store/generation-stack.ts
// stacks it). Pure: computed from the two manifests and the changed paths alone.
//
// Overlay semantics this relies on (mounted with redirect_dir, metacopy and index off): a whiteout hides a
// path and everything below it in the layers underneath; a non-directory hides whatever is underneath at
// its path; a directory over a directory merges with it, and the merged directory has the topmost one's
// owner and mode; a directory over a non-directory (or nothing) stands alone.
import { compareBytes, parentOf } from './relative-path.js';
import type { Manifest, ManifestEntry } from './manifest.js';

/** One thing a layer holds, and what it must be. */
export type LayerItem =
  | { path: string; kind: 'entry'; entry: ManifestEntry }
  | { path: string; kind: 'whiteout' };

/** The entry at `path` of a manifest whose entries are in byte order (binary search). */
export function entryAt(m: Manifest, path: string): ManifestEntry | undefined {
  let lo = 0;
  let hi = m.entries.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const e = m.entries[mid]!;
    const c = compareBytes(e.path, path);
    if (c === 0) return e;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(path); p !== ''; p = parentOf(p)) out.push(p);
  return out.reverse();
}

/** What the layer must hold for `changed` paths, computed from the two manifests alone. */
export function planLayer(base: Manifest, next: Manifest, changed: Iterable<string>): LayerItem[] {
  const paths = [...new Set(changed)].sort(compareBytes);
  const hidden = new Set<string>(); // paths whose whole subtree the layer replaces or removes
  const placed = new Map<string, LayerItem>();
  for (const p of paths) {
    if (ancestorsOf(p).some((a) => hidden.has(a))) continue;
    const now = entryAt(next, p);
    if (!now && !entryAt(base, p)) continue; // neither before nor after: nothing to hide
    for (const a of ancestorsOf(p)) {
      if (placed.has(a)) continue;
      const dir = entryAt(next, a);
      if (dir?.type !== 'dir') throw new Error(`the next manifest has no directory ${a} above ${p}`);
      placed.set(a, { path: a, kind: 'entry', entry: dir });
    }
    if (!now) {
      placed.set(p, { path: p, kind: 'whiteout' });
      hidden.add(p);
    } else {
      placed.set(p, { path: p, kind: 'entry', entry: now });
      if (now.type !== 'dir') hidden.add(p);
    }
  }
  return [...placed.values()].sort((a, b) => compareBytes(a.path, b.path));
}
