// The walk the store trusts (collapses, Root re-measurement). Generations share unchanged files by hard link (stage-generation.ts), so a
// walk of one payload sees files with more links than it finds inside it: the store walk is told so
// (sharedWithinStore), which lifts EXTERNAL_HARDLINK for trees under the store's generations/, staging/
// and views/ only (an owner's view shows the same inodes; walk-tree-sync.ts says why nothing else can
// be linked into one). Every other walk problem refuses.
import { manifestDigest, type Manifest } from '../../core/manifest.js';
import type { KnownHash } from './walk-tree-sync.js';
import { walkTree, walkTreeDigests, type WalkProblem } from './walk-tree.js';

export interface CollapseWalk {
  manifest: Manifest;
  digest: string;
  /** Problems of the walk (the store's own hard-link sharing is not one). */
  problems: WalkProblem[];
}

/** Walk a payload under the store at `storeDir` (a generation or a staged payload). */
export async function collapseWalk(path: string, storeDir: string, inodeHashes?: Map<string, KnownHash>): Promise<CollapseWalk> {
  const w = await walkTree(path, { sharedWithinStore: storeDir, ...(inodeHashes ? { inodeHashes } : {}) });
  return { manifest: w.manifest, digest: manifestDigest(w.manifest), problems: w.problems };
}

/** collapseWalk without the manifest (digested in the walk's worker): for checks that compare digests. */
export async function collapseWalkDigest(path: string, storeDir: string, inodeHashes?: Map<string, KnownHash>): Promise<Omit<CollapseWalk, 'manifest'>> {
  const [w] = await walkTreeDigests([path], { sharedWithinStore: storeDir, ...(inodeHashes ? { inodeHashes } : {}) });
  return { digest: w!.digest, problems: w!.problems };
}

/**
 * The clean digests of several payloads, walked together so an inode they share (an unchanged file
 * hard-linked into a staged generation) is read once; undefined for a payload whose walk has a problem.
 */
export async function cleanDigests(paths: readonly string[], storeDir: string): Promise<(string | undefined)[]> {
  const walks = await walkTreeDigests(paths, { sharedWithinStore: storeDir });
  return walks.map((w) => (w.problems.length > 0 ? undefined : w.digest));
}

/** The digest of the payload at `path`, or undefined when the walk has a problem a payload may not have. */
export async function cleanDigest(path: string, storeDir: string): Promise<string | undefined> {
  return (await cleanDigests([path], storeDir))[0];
}
