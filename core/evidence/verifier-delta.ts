// Which bound verifier paths a candidate's delta touches. A verifier must come from PRIME; a candidate
// that rewrites, deletes or hides one (behind a deleted or replaced ancestor) is refused by name.
import type { ManifestEntry } from '../manifest.js';
import { compareBytes, parentOf } from '../relative-path.js';

/**
 * Bound verifier paths the candidate touched: upserted or deleted themselves, or hidden behind an
 * ancestor it deleted or replaced with something that is not a directory. Byte order.
 */
export function verifierModifiedByCandidate(boundPaths: readonly string[], delta: { upsert: readonly Pick<ManifestEntry, 'path' | 'type'>[]; deleted: readonly string[] } | null): string[] {
  if (!delta) return [];
  const upserted = new Map(delta.upsert.map((e) => [e.path, e.type]));
  const deleted = new Set(delta.deleted);
  const out: string[] = [];
  for (const p of boundPaths) {
    let hit = upserted.has(p) || deleted.has(p);
    for (let a = parentOf(p); !hit && a !== ''; a = parentOf(a)) {
      const t = upserted.get(a);
      hit = deleted.has(a) || (t !== undefined && t !== 'dir');
    }
    if (hit) out.push(p);
  }
  return out.sort(compareBytes);
}
