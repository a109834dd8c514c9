// Rebasing a candidate onto a PRIME that moved (issue 15, the promotion queue): the candidate's delta was
// measured against its base generation; PRIME has since become another generation. When no path the
// candidate changed was changed in PRIME since that base, the candidate's delta applies to PRIME as it is
// now, and the result is what both changes together make — whichever order they are applied in. When
// they touch the same path, or one side changed a directory the other changed something under (a
// deletion, a type change, a mode or owner change of the directory), the rebase is refused as a conflict
// naming those paths: the rule is deliberately stricter than a merge of file contents, so it never has to
// judge two edits of one file, and never lets an entry end up beneath a directory that is gone.
// Pure: manifests in (in canonical byte order, as stored), a manifest or the conflicting paths out.
import { applyDelta, diffManifests, sameRootAttributes, type Manifest, type ManifestEntry, type RootAttributes } from '../manifest.js';
import { compareBytes, parentOf } from '../relative-path.js';

/** The change a candidate made to one Root, as measured against its base (the store's delta, without its bookkeeping). */
export interface RootChange {
  /** New or changed entries. */
  upsert: readonly ManifestEntry[];
  /** Base paths gone. */
  deleted: readonly string[];
  /** The Root directory's own mode and owners, when the candidate changed them. */
  rootAttributes?: RootAttributes | undefined;
}

/** The Root directory itself, as a conflict names it. */
export const ROOT_PATH = '.';

export type RebaseResult =
  | { outcome: 'rebased'; manifest: Manifest }
  | { outcome: 'conflict'; paths: string[] };

/** Every path whose measured entry differs between two manifests (added, removed or changed), in byte order. */
export function changedBetween(from: Manifest, to: Manifest): string[] {
  const d = diffManifests(from, to);
  return [...d.added, ...d.modified, ...d.deleted].sort(compareBytes);
}

/** `p` and every directory above it (not the Root itself). */
function withAncestors(p: string): string[] {
  const out: string[] = [];
  for (let q = p; q !== ''; q = parentOf(q)) out.push(q);
  return out;
}

/**
 * The paths where the candidate's change and PRIME's change since the base meet: the same path, or one
 * path at or below a directory the other side changed. Empty means they are independent.
 */
export function conflictingPaths(candidate: readonly string[], prime: readonly string[]): string[] {
  const primeSet = new Set(prime);
  const candSet = new Set(candidate);
  const hit = new Set<string>();
  // Same path, or a candidate path under a directory PRIME changed (walk the candidate path's ancestors).
  for (const p of candidate) for (const q of withAncestors(p)) if (primeSet.has(q)) hit.add(p).add(q);
  // A PRIME path under a directory the candidate changed.
  for (const q of prime) for (const p of withAncestors(q)) if (candSet.has(p)) hit.add(p).add(q);
  return [...hit].sort(compareBytes);
}

/**
 * The candidate's change applied to PRIME as it is now, or the conflict. `base` is the generation the
 * candidate was measured against; `prime` is the generation PRIME holds now.
 */
export function rebase(base: Manifest, prime: Manifest, change: RootChange): RebaseResult {
  const primeChanged = changedBetween(base, prime);
  const candidateChanged = [...change.upsert.map((e) => e.path), ...change.deleted];
  const paths = conflictingPaths(candidateChanged, primeChanged);
  const rootBoth = change.rootAttributes !== undefined && !sameRootAttributes(change.rootAttributes, base.root) && !sameRootAttributes(base.root, prime.root) && !sameRootAttributes(change.rootAttributes, prime.root);
  if (rootBoth) paths.unshift(ROOT_PATH);
  if (paths.length > 0) return { outcome: 'conflict', paths };
  // The candidate's root attributes count only where they differ from the base (a delta may carry them unchanged).
  const rootChanged = change.rootAttributes !== undefined && !sameRootAttributes(change.rootAttributes, base.root);
  return { outcome: 'rebased', manifest: applyDelta(prime, { upsert: change.upsert, deleted: change.deleted, ...(rootChanged ? { rootAttributes: change.rootAttributes } : {}) }) };
}
