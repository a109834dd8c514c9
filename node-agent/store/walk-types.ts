// What a tree walk returns.
import type { Manifest } from '../../core/manifest.js';

export type WalkProblemCode = 'EXTERNAL_SYMLINK' | 'EXTERNAL_HARDLINK' | 'SPECIAL_FILE' | 'UNSUPPORTED_NAME' | 'CHANGED_DURING_WALK';

export interface WalkProblem {
  code: WalkProblemCode;
  /** Path relative to the walked root. */
  path: string;
  message: string;
}

export interface WalkResult {
  manifest: Manifest;
  /** Sorted by path, then code, so the first problem is the same on every walk of the same tree. */
  problems: WalkProblem[];
  /** The walked root's real path, device and inode, and whether it is itself a mount point. */
  root: { path: string; dev: bigint; ino: bigint; isMountPoint: boolean };
  /** File bytes hashed. */
  bytes: number;
}

/** A WalkResult with its manifest reduced to the manifest's digest (walkTreeDigests). */
export interface WalkDigest extends Omit<WalkResult, 'manifest'> {
  /** manifestDigest of the walk's manifest. */
  digest: string;
  /** How many entries the manifest has. */
  entries: number;
}
