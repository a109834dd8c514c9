// The manifest entries of every generation of a Root, kept as spans: one row per entry value and the
// range of generation numbers that hold it (store-schema.ts, migration "entry spans"). A generation that
// changes k entries closes k spans and opens k (O(change) rows), where a full copy per generation cost
// O(Root) rows and JSON (~0.9 s at 100k files). Generations of a Root are only ever appended, each after
// the Root's latest, so an open span (to_number NULL) is held by the latest generation and every later one
// until a change closes it.
//
// Reading: the entry of `path` at generation n is the span of (root, path) with from_number <= n < to_number
// (or to_number NULL). Spans of one path never overlap, so the latest one starting at or before n is the
// only candidate. The root directory's own attributes are an entry under path ''.
import type { Database, Statement } from 'better-sqlite3';
import { diffManifests, type EntryType, type Manifest, type ManifestDelta, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import { statement } from './statements.js';

export interface EntryRow {
  path: string;
  type: EntryType;
  mode: number;
  uid: number;
  gid: number;
  size: number | null;
  sha256: string | null;
  target: string | null;
}

export const ENTRY_COLUMNS = 'path, type, mode, uid, gid, size, sha256, target';

/** Held at generation `?` (the same number bound twice): the span's range contains it. */
const HELD = 'from_number <= ? AND (to_number IS NULL OR to_number > ?)';

export function toEntry(r: EntryRow): ManifestEntry {
  const e: ManifestEntry = { path: r.path, type: r.type, mode: r.mode, uid: r.uid, gid: r.gid };
  if (r.size !== null) e.size = r.size;
  if (r.sha256 !== null) e.sha256 = r.sha256;
  if (r.target !== null) e.target = r.target;
  return e;
}

/** A change of one generation against the previous one of its Root (the delta the collapse applied). */
export interface GenerationChange {
  /** The generation number the delta was applied to. */
  from: number;
  delta: ManifestDelta;
}

/**
 * Record the entries of generation `number` of `rootKey` (inside the caller's transaction). `manifest`
 * is the generation's whole manifest; `change`, when given and based on the Root's latest recorded
 * generation, is the delta that made it, and only its paths are written. Otherwise the change is found by
 * comparing `manifest` with the latest recorded one (O(Root): recovery, returns, and the first generation).
 */
export function insertGenerationEntries(db: Database, rootKey: string, number: number, manifest: Manifest, change?: GenerationChange): void {
  const latest = statement(db, 'SELECT MAX(number) AS n FROM generations WHERE root_key = ? AND number < ?').get(rootKey, number) as { n: number | null };
  const later = statement(db, 'SELECT 1 FROM generations WHERE root_key = ? AND number > ?').get(rootKey, number);
  if (later !== undefined) throw new Error(`generation ${number} of ${rootKey} is older than one already recorded: generations are only appended`);
  const open = statement(db, `INSERT INTO entry_spans (root_key, path, from_number, to_number, ${ENTRY_COLUMNS.replace('path, ', '')}) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)`);
  const put = (e: { path: string; type: EntryType; mode: number; uid: number; gid: number; size?: number; sha256?: string; target?: string }): void => {
    open.run(rootKey, e.path, number, e.type, e.mode, e.uid, e.gid, e.size ?? null, e.sha256 ?? null, e.target ?? null);
  };
  const rootEntry = (r: RootAttributes) => ({ path: '', type: 'dir' as const, ...r });
  if (latest.n === null) {
    if (manifest.root) put(rootEntry(manifest.root));
    for (const e of manifest.entries) put(e);
    return;
  }
  const close = statement(db, 'UPDATE entry_spans SET to_number = ? WHERE root_key = ? AND path = ? AND to_number IS NULL');
  let upsert: readonly ManifestEntry[];
  let deleted: readonly string[];
  let root: RootAttributes | undefined | null; // null: unchanged
  if (change && change.from === latest.n) {
    ({ upsert, deleted } = change.delta);
    root = change.delta.rootAttributes ?? null;
  } else {
    const previous = manifestAt(db, rootKey, latest.n);
    const diff = diffManifests(previous, manifest);
    const byPath = new Map(manifest.entries.map((e) => [e.path, e]));
    upsert = [...diff.added, ...diff.modified].map((p) => byPath.get(p)!);
    deleted = diff.deleted;
    const same = previous.root && manifest.root && previous.root.mode === manifest.root.mode && previous.root.uid === manifest.root.uid && previous.root.gid === manifest.root.gid;
    root = same || (!previous.root && !manifest.root) ? null : manifest.root;
  }
  for (const p of deleted) close.run(number, rootKey, p);
  for (const e of upsert) {
    close.run(number, rootKey, e.path);
    put(e);
  }
  if (root !== null) {
    close.run(number, rootKey, '');
    if (root) put(rootEntry(root));
  }
}

/** The whole manifest of generation `number` (O(spans of the Root)), entries in byte order of paths. */
export function manifestAt(db: Database, rootKey: string, number: number): Manifest {
  const reader = entryReader(db, rootKey, number);
  const root = reader.get('');
  const entries = reader.range('', undefined);
  return root ? { entries, root: { mode: root.mode, uid: root.uid, gid: root.gid } } : { entries };
}

/** Point and range reads of one generation's entries, each an index seek. */
export interface EntryReader {
  get(path: string): ManifestEntry | undefined;
  /** Entries with above < path (< below when given), in byte order. */
  range(above: string, below: string | undefined): ManifestEntry[];
}

export function entryReader(db: Database, rootKey: string, number: number): EntryReader {
  let one: Statement<[string, string, number]> | undefined;
  let bounded: Statement<[string, string, string, number, number]> | undefined;
  let open: Statement<[string, string, number, number]> | undefined;
  return {
    get(path) {
      one ??= statement(db, `SELECT ${ENTRY_COLUMNS}, to_number FROM entry_spans WHERE root_key = ? AND path = ? AND from_number <= ? ORDER BY from_number DESC LIMIT 1`);
      const row = one.get(rootKey, path, number) as (EntryRow & { to_number: number | null }) | undefined;
      return row && (row.to_number === null || row.to_number > number) ? toEntry(row) : undefined;
    },
    range(above, below) {
      let rows: EntryRow[];
      if (below === undefined) {
        open ??= statement(db, `SELECT ${ENTRY_COLUMNS} FROM entry_spans WHERE root_key = ? AND path > ? AND ${HELD} ORDER BY path`);
        rows = open.all(rootKey, above, number, number) as EntryRow[];
      } else {
        bounded ??= statement(db, `SELECT ${ENTRY_COLUMNS} FROM entry_spans WHERE root_key = ? AND path > ? AND path < ? AND ${HELD} ORDER BY path`);
        rows = bounded.all(rootKey, above, below, number, number) as EntryRow[];
      }
      return rows.map(toEntry);
    },
  };
}
