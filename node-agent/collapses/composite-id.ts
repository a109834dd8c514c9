// Identity values over all of a World's Roots, shared by the collapse measurements of both modes: one
// per-Root value each (Roots in the World's order) folded into the single value a decision pair compares.
import type { Database } from 'better-sqlite3';
import type { DecisionInput, PrimeRehashSource } from '../../core/collapse/decide.js';
import { absentId, idFrom, presentId } from '../../core/collapse/identity.js';
import type { PrimeMeasures, PrimeSource } from '../store/prime-measures.js';
import { digestOf } from '../../core/digest.js';
import { getRoot } from '../store/store-records.js';

/** One Root's value: [root name, value], the value missing when it could not be read. */
export type Part = readonly [string, string | null | undefined];

/** The per-Root values as one identity value; null (absent) when there are none or any is missing. */
export function composite(parts: readonly Part[]): string | null {
  if (parts.length === 0 || parts.some(([, v]) => v === null || v === undefined)) return null;
  return parts.length === 1 ? (parts[0]![1] as string) : digestOf(parts.map(([k, v]) => [k, v]));
}

/** PRIME's generation of each Root as the store records it now (read at the start and again at the end). */
export function primeGenerations(db: Database, roots: readonly string[]): Part[] {
  return roots.map((name) => {
    const r = getRoot(db, name);
    return [name, r ? String(r.generation) : null];
  });
}

/**
 * How the Roots' PRIME re-hashes were obtained, read when the measurement ends: walked, or vouched for by
 * the watcher — the recorded states (store's measurement record) vs the watcher's states read now.
 */
export function primeRehashSource(measures: PrimeMeasures, sources: readonly (readonly [string, PrimeSource | undefined])[]): PrimeRehashSource {
  const vouched: [string, Extract<PrimeSource, { by: 'watcher' }>][] = [];
  for (const [name, s] of sources) if (s?.by === 'watcher') vouched.push([name, s]);
  if (vouched.length === 0) return { by: 'walk' };
  return {
    by: 'watcher',
    measured: idFrom('primeObservation', composite(vouched.map(([name, s]) => [name, s.measured]))),
    now: idFrom('primeObservation', composite(vouched.map(([name, s]) => [name, measures.stateNow(s.dirs)]))),
  };
}

/** root set: the Roots the World names vs the Roots the store holds Ready for them. */
export function rootSetIds(worldRoots: readonly string[], storeRoots: readonly string[]): DecisionInput['rootSet'] {
  return {
    world: worldRoots.length > 0 ? presentId('rootSet', worldRoots.join('\n')) : absentId('rootSet'),
    store: storeRoots.length > 0 ? presentId('rootSet', storeRoots.join('\n')) : absentId('rootSet'),
  };
}
