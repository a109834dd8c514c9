// What capturing one Root's upper layer yields: the delta against its base generation and the problems
// that refuse it. Written by capture-layer.ts, stored by candidates.ts, read by checks and collapses.
import type { ManifestEntry, RootAttributes } from '../../core/manifest.js';

export interface CaptureProblem {
  code: 'EXTERNAL_SYMLINK' | 'EXTERNAL_HARDLINK' | 'SPECIAL_FILE' | 'CAPTURE_OWNER_UNMAPPED' | 'CAPTURE_CHANGED_DURING_READ';
  path: string;
  message: string;
}

/**
 * What one Root's upper layer changes against its base generation — the delta, never the next manifest:
 * diffManifests(base, next) is exactly { added, modified } = upsert split by presence in base, deleted.
 */
export interface LayerDelta {
  /** Entries that are new or differ from the base in a measured field, in byte order of paths. */
  upsert: ManifestEntry[];
  /** Base paths gone from the next tree, in byte order. */
  deleted: string[];
  /** The next root attributes, when they differ from the base's. */
  rootAttributes?: RootAttributes;
  rootChanged: boolean;
  added: number;
  modified: number;
  /** Paths (files) whose content lives in the upper layer. */
  upperFiles: string[];
  problems: CaptureProblem[];
}
