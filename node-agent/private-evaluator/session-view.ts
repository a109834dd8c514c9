// A candidate session's own tree of a frozen input, made in O(1) whatever the tree's size: an overlay
// whose one lower layer is the frozen tree itself — bound read-only and idmapped, so that its owner (the
// examiner's host id) appears as the candidate's — under an empty upper layer of the session's own. The
// candidate reads the frozen bytes and writes only its upper layer; nothing it does reaches the frozen
// tree, the examiner's view of it or another session's.
//
// A copy (copyFrozen) is re-measured against the frozen identity. This view is the frozen tree by
// construction, so what is checked is the construction: the lower layer is the frozen directory (same
// device and inode) and the upper layer is empty when the view is handed over. The frozen tree is not
// hashed again: no role can write it (the examiner's bind and every lower layer are read-only); root on
// the node can, and the store trusts host root (docs/security-model.md, limit 9).
import { chmodSync, chownSync, closeSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { fileIdentity } from '../isolation/measure-world.js';
import { STACK_OVERLAY_OPTIONS } from '../store/generation-stack.js';
import { BoundaryFailed } from './check-principals.js';
import type { FrozenTree } from './freeze-tree.js';

/**
 * Mounts at `merged` (made here) an overlay view of `frozen` owned by `ownerHostId`, its layers in
 * `layers` (made here, on the same filesystem as the session's other files). Returns `merged`.
 */
export function overlayFrozen(frozen: FrozenTree, merged: string, layers: string, ownerHostId: number): string {
  const top = lstatSync(frozen.dir);
  const lower = join(layers, 'lower');
  const upper = join(layers, 'upper');
  const work = join(layers, 'work');
  for (const d of [layers, lower, upper, work]) mkdirSync(d, { mode: 0o700 });
  mkdirSync(merged, { mode: 0o700 });
  // The frozen tree's one owner shows as the session's principal; nothing else is mapped.
  const userns = native.createUserNamespace([{ inside: top.uid, outside: ownerHostId, count: 1 }], [{ inside: top.gid, outside: ownerHostId, count: 1 }]);
  try {
    native.mountIdmapped(frozen.dir, lower, userns, { readonly: true, recursive: false });
  } finally {
    closeSync(userns);
  }
  // The view's top takes the upper layer's owner and mode: the frozen top's mode, the session's owner.
  chownSync(upper, ownerHostId, ownerHostId);
  chmodSync(upper, top.mode & 0o7777);
  native.mountOverlay(merged, { lower: [lower], upper, work, extra: STACK_OVERLAY_OPTIONS, nosuid: true, nodev: true });
  const problems: string[] = [];
  if (fileIdentity(lower) !== fileIdentity(frozen.dir)) problems.push(`the lower layer of ${merged} is not the frozen input ${frozen.dir}`);
  if (readdirSync(upper).length > 0) problems.push(`the upper layer of ${merged} is not empty`);
  const seen = lstatSync(merged);
  if (seen.uid !== ownerHostId || seen.gid !== ownerHostId) problems.push(`${merged} is owned by ${seen.uid}:${seen.gid}, not the session's ${ownerHostId}`);
  if (problems.length > 0) throw new BoundaryFailed(problems);
  return merged;
}
