// The walk a collapse trusts. Generations share unchanged files by hard link (stage-generation.ts), so a
// walk of one payload sees files with more links than it finds inside it: EXTERNAL_HARDLINK is expected
// here and does not refuse. Every other walk problem does.
import { manifestDigest, type Manifest } from '../../core/manifest.js';
import { walkTree, type WalkProblem } from '../store/walk-tree.js';

export interface CollapseWalk {
  manifest: Manifest;
  digest: string;
  /** Problems other than the store's own hard-link sharing. */
  problems: WalkProblem[];
}

export async function collapseWalk(path: string): Promise<CollapseWalk> {
  const w = await walkTree(path);
  return { manifest: w.manifest, digest: manifestDigest(w.manifest), problems: w.problems.filter((p) => p.code !== 'EXTERNAL_HARDLINK') };
}

/** The digest of the tree at `path`, or undefined when the walk has a problem a payload may not have. */
export async function cleanDigest(path: string): Promise<string | undefined> {
  const w = await collapseWalk(path);
  return w.problems.length > 0 ? undefined : w.digest;
}
