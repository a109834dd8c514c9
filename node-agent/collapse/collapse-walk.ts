// The walk a collapse trusts. Generations share unchanged files by hard link (stage-generation.ts), so a
// walk of one payload sees files with more links than it finds inside it: the store walk is told so
// (sharedWithinStore), which lifts EXTERNAL_HARDLINK for trees under the store's generations/ and
// staging/ only. Every other walk problem refuses.
import { manifestDigest, type Manifest } from '../../core/manifest.js';
import { walkTree, type WalkProblem } from '../store/walk-tree.js';

export interface CollapseWalk {
  manifest: Manifest;
  digest: string;
  /** Problems of the walk (the store's own hard-link sharing is not one). */
  problems: WalkProblem[];
}

/** Walk a payload under the store at `storeDir` (a generation or a staged payload). */
export async function collapseWalk(path: string, storeDir: string): Promise<CollapseWalk> {
  const w = await walkTree(path, { sharedWithinStore: storeDir });
  return { manifest: w.manifest, digest: manifestDigest(w.manifest), problems: w.problems };
}

/** The digest of the payload at `path`, or undefined when the walk has a problem a payload may not have. */
export async function cleanDigest(path: string, storeDir: string): Promise<string | undefined> {
  const w = await collapseWalk(path, storeDir);
  return w.problems.length > 0 ? undefined : w.digest;
}
