// The recently used recorded generations' manifests, per database connection. A recorded generation never
// changes, so its manifest can be served again without a query (~0.3 s at 100k entries); what is served
// is frozen, entries included, so no caller can change what the next one reads.
import type { Database } from 'better-sqlite3';
import { freezeManifest, type Manifest } from '../../core/manifest.js';

/**
 * Kept while their entries add up to at most this many (least recently used leave first; the newest is
 * always kept). ~250 bytes an entry in memory: ~250 MB at most, enough for PRIME and the generation a
 * collapse makes of it for several Roots of 100k files at once.
 */
export const KEPT_ENTRIES = 1_000_000;

const caches = new WeakMap<Database, Map<string, Manifest>>();

export function cachedManifest(db: Database, id: string): Manifest | undefined {
  const cache = caches.get(db);
  const m = cache?.get(id);
  if (m && cache) {
    cache.delete(id); // most recently used last
    cache.set(id, m);
  }
  return m;
}

/** Keep `manifest` as generation `id`'s (a frozen copy when it is not frozen already) and return what is kept. */
export function rememberManifest(db: Database, id: string, manifest: Manifest): Manifest {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map<string, Manifest>()));
  const kept = freezeManifest(manifest);
  cache.delete(id);
  cache.set(id, kept);
  let total = 0;
  for (const m of cache.values()) total += m.entries.length;
  for (const [old, m] of cache) {
    if (total <= KEPT_ENTRIES || old === id) break;
    cache.delete(old);
    total -= m.entries.length;
  }
  return kept;
}
