// A base generation's manifest as capture needs it: one entry by path, and the descendants of a
// directory as one range — O(log N) each, never the whole manifest. The store's index reads the
// entry spans (generation-entries.ts); an in-memory index over a Manifest serves
// tests and callers that hold a manifest already.
//
// Ranges: the descendants of 'd' are exactly the paths p with 'd/' < p < 'd0' in byte order ('0' is '/'
// + 1), which is SQLite's BINARY collation over UTF-8 text and core/relative-path.ts compareBytes.
import type { Database } from 'better-sqlite3';
import { compareBytes } from '../../core/relative-path.js';
import { entryReader, type EntryReader } from './generation-entries.js';
import { getGenerationManifest } from './store-records.js';
import { compareEntries, type Manifest, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import { statement } from './statements.js';

export interface BaseIndex {
  /** The root directory's own attributes, when the manifest measures them. */
  readonly root: RootAttributes | undefined;
  get(path: string): ManifestEntry | undefined;
  /** Every entry below `dir` ('' for the whole tree), in byte order of paths. */
  descendantsOf(dir: string): ManifestEntry[];
  /** The entries directly in `dir`, in byte order of paths. */
  childrenOf(dir: string): ManifestEntry[];
}

const BASE_INDEX = Symbol('worldline.baseIndex');

type IndexedManifest = Manifest & { readonly [BASE_INDEX]?: BaseIndex };

/** Lower and upper bounds (exclusive) of the descendants of `dir`; '' has no upper bound. */
function rangeOf(dir: string): { above: string; below: string | undefined } {
  return dir === '' ? { above: '', below: undefined } : { above: `${dir}/`, below: `${dir}0` };
}

function isChild(dir: string, path: string): boolean {
  return !path.includes('/', dir === '' ? 0 : dir.length + 1);
}

/** The index of a recorded generation, read from the store's entry spans (generation-entries.ts). */
export function storedBaseIndex(db: Database, generationId: string): BaseIndex {
  let reader: EntryReader | null | undefined;
  const open = (): EntryReader | null => {
    if (reader === undefined) {
      const g = statement(db, 'SELECT root_key AS rootKey, number FROM generations WHERE id = ?').get(generationId) as { rootKey: string; number: number } | undefined;
      reader = g ? entryReader(db, g.rootKey, g.number) : null;
    }
    return reader;
  };
  const get = (path: string): ManifestEntry | undefined => open()?.get(path);
  const descendantsOf = (dir: string): ManifestEntry[] => {
    const { above, below } = rangeOf(dir);
    return open()?.range(above, below) ?? [];
  };
  let root: RootAttributes | undefined | null = null;
  return {
    get root() {
      if (root === null) {
        const r = get('');
        root = r && { mode: r.mode, uid: r.uid, gid: r.gid };
      }
      return root;
    },
    get: (path) => (path === '' ? undefined : get(path)),
    descendantsOf,
    childrenOf: (dir) => descendantsOf(dir).filter((e) => isChild(dir, e.path)),
  };
}

/** An in-memory index over a manifest (sorted here; the manifest itself is not changed). */
export function manifestBaseIndex(m: Manifest): BaseIndex {
  const sorted = [...m.entries].sort(compareEntries);
  const byPath = new Map(sorted.map((e) => [e.path, e]));
  /** The first index whose path is > key in byte order. */
  const after = (key: string): number => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(sorted[mid]!.path, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const descendantsOf = (dir: string): ManifestEntry[] => {
    const { above, below } = rangeOf(dir);
    const out: ManifestEntry[] = [];
    for (let i = after(above); i < sorted.length; i++) {
      const e = sorted[i]!;
      if (below !== undefined && compareBytes(e.path, below) >= 0) break;
      out.push(e);
    }
    return out;
  };
  return {
    root: m.root,
    get: (path) => byPath.get(path),
    descendantsOf,
    childrenOf: (dir) => descendantsOf(dir).filter((e) => isChild(dir, e.path)),
  };
}

/**
 * A recorded generation's manifest that costs nothing until it is read: `entries` reads the whole
 * manifest on first access (getGenerationManifest: cached, digest-checked); baseIndexOf() on it returns the store's index, so capture never parses it at all.
 */
export function storedManifest(db: Database, generationId: string): Manifest {
  const index = storedBaseIndex(db, generationId);
  let entries: ManifestEntry[] | undefined;
  const m = {
    get entries(): ManifestEntry[] {
      entries ??= getGenerationManifest(db, generationId)?.entries ?? [];
      return entries;
    },
    set entries(v: ManifestEntry[]) {
      entries = v;
    },
    get root(): RootAttributes | undefined {
      return index.root;
    },
  };
  Object.defineProperty(m, BASE_INDEX, { value: index, enumerable: false });
  return m;
}

/** The index of a manifest: the store's own when it came from storedManifest, else one built in memory. */
export function baseIndexOf(m: Manifest): BaseIndex {
  return (m as IndexedManifest)[BASE_INDEX] ?? manifestBaseIndex(m);
}
