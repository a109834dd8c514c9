// The manifest a candidate's delta makes of its base generation, whether it is valid, and its digest:
// the prepare step, the commit boundary and the staging each need them, and at 100k entries one
// computation costs ~0.5 s. A recorded generation never changes, so the result is kept per database
// connection, keyed by the base generation's id and the delta's own digest; what is kept is frozen.
import type { Database } from 'better-sqlite3';
import { digestOf } from '../../core/digest.js';
import { applyDeltaFrozen, manifestDigest, validateApplied, type Manifest, type ManifestDelta, type ManifestProblem } from '../../core/manifest.js';
import { getGenerationManifest } from '../store/store-records.js';

export interface TestedManifest {
  manifest: Manifest;
  problems: readonly ManifestProblem[];
  /** manifestDigest(manifest) when it is valid, else null. */
  digest: string | null;
}

/** One per collapse in flight on the node's Roots (a few); their entries are mostly their bases', shared. */
const KEPT = 8;
const caches = new WeakMap<Database, Map<string, TestedManifest>>();

/** The tested manifest of `delta` over recorded generation `baseId`, or undefined when that generation is not recorded. */
export function testedManifest(db: Database, baseId: string, delta: ManifestDelta): TestedManifest | undefined {
  const key = `${baseId}\n${digestOf({ upsert: delta.upsert, deleted: delta.deleted, rootAttributes: delta.rootAttributes ?? null })}`;
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map<string, TestedManifest>()));
  const kept = cache.get(key);
  if (kept) return kept;
  const base = getGenerationManifest(db, baseId);
  if (!base) return undefined;
  const manifest = applyDeltaFrozen(base, delta);
  const problems = validateApplied(base, delta, manifest);
  const tested: TestedManifest = Object.freeze({ manifest, problems: Object.freeze(problems), digest: problems.length === 0 ? manifestDigest(manifest) : null });
  cache.set(key, tested);
  while (cache.size > KEPT) cache.delete(cache.keys().next().value!);
  return tested;
}
