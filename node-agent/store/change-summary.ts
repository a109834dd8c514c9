// The bounded list of changed paths a World's status shows (status.candidate.changes), so a reviewer sees
// what an agent changed with `kubectl describe world`, without the plugin or a shell on the node. Built
// from what capture already measured (the delta and the base it was taken against): no extra walk.
import type { EntryType, ManifestEntry } from '../../core/manifest.js';
import { compareBytes } from '../../core/relative-path.js';
import { CHANGED_PATHS_SHOWN } from '../../crds/world.js';

/** How many changed paths status shows at most; the counts on status say how many there are in all. */
export const CHANGE_SUMMARY_LIMIT = CHANGED_PATHS_SHOWN;

export interface PathChange {
  root: string;
  path: string;
  change: 'Added' | 'Modified' | 'Deleted';
  /** The entry's type now (its type before, for a deletion). */
  type: EntryType;
  /** A file's size now, in bytes (before, for a deletion). */
  size?: number;
  /** A modified file's size before, when it was a file then. */
  previousSize?: number;
}

/** One Root's first changes and how many changed paths it has in all. */
export interface RootChangeSummary {
  root: string;
  changes: PathChange[];
  total: number;
}

/**
 * Every path a delta changes, in byte order, each once: its new or changed entries merged with its
 * deletions (a path deleted and re-created, such as a file replaced by a directory, is one path).
 */
export function changedPaths(upsert: readonly ManifestEntry[], deleted: readonly string[]): { paths: string[]; upserted: Map<string, ManifestEntry> } {
  const upserted = new Map(upsert.map((e) => [e.path, e]));
  return { paths: [...new Set([...upserted.keys(), ...deleted])].sort(compareBytes), upserted };
}

/**
 * The first `limit` changes of one Root in byte order of paths, merged from the delta's new or changed
 * entries and its deletions. A path both deleted and re-created (a file replaced by a directory) is one
 * change: Modified.
 */
export function rootChanges(root: string, upsert: readonly ManifestEntry[], deleted: readonly string[], base: (path: string) => ManifestEntry | undefined, limit = CHANGE_SUMMARY_LIMIT): RootChangeSummary {
  const { paths: all, upserted } = changedPaths(upsert, deleted);
  const changes = all.slice(0, limit).map((path): PathChange => {
    const now = upserted.get(path);
    const was = base(path);
    if (!now) return { root, path, change: 'Deleted', type: was?.type ?? 'file', ...(was?.size !== undefined ? { size: was.size } : {}) };
    const out: PathChange = { root, path, change: was ? 'Modified' : 'Added', type: now.type };
    if (now.size !== undefined) out.size = now.size;
    if (was?.type === 'file' && was.size !== undefined) out.previousSize = was.size;
    return out;
  });
  return { root, changes, total: all.length };
}

/** The first `limit` changes over several Roots (by Root name, then path), and whether any were left out. */
/** What status shows: the first changes, and whether more changed than it shows. */
export interface ChangeSummary {
  changes: PathChange[];
  truncated: boolean;
}

export function summarizeChanges(perRoot: readonly RootChangeSummary[], limit = CHANGE_SUMMARY_LIMIT): ChangeSummary {
  const ordered = [...perRoot].sort((a, b) => compareBytes(a.root, b.root));
  const changes = ordered.flatMap((r) => r.changes).slice(0, limit);
  const total = ordered.reduce((n, r) => n + r.total, 0);
  return { changes, truncated: total > changes.length };
}
