// The rebase step of a Collapse with spec.rebase (issue 15, the promotion queue), taken before its
// transaction starts: when PRIME moved since the World's base, the candidate's change is applied to PRIME
// as it is now (store/rebased-candidate.ts; a path changed on both sides refuses CONFLICT), and the
// Collapse waits, phase Rebasing, until every check the governing Policy requires has a finished
// evaluation on exactly those bytes — the controller creates those Checks from status.rebase. The
// transaction then measures and judges the rebased candidate against the generations it was rebased
// onto; evidence about the original candidate never speaks for it (its subject differs).
import { isRefusal } from '../../core/errors.js';
import type { Store } from '../store/open-store.js';
import { evaluationsFor } from '../store/evaluation-records.js';
import { storeRebasedCandidate, type RebaseTarget } from '../store/rebased-candidate.js';
import { getRoot } from '../store/store-records.js';
import { generationManifest } from '../store/world-records.js';

/** What a rebase formed: the three things status.rebase and the receipt record. */
export interface RebaseRecord {
  from: string;
  candidate: string;
  onto: { root: string; generation: number; digest: string }[];
}

export type RebaseStep =
  /** PRIME has not moved (or what a rebase needs is not in the store): the candidate is judged as it is, and a gap is refused there by name. */
  | { kind: 'as-is' }
  | { kind: 'conflict'; message: string }
  | { kind: 'formed'; rebase: RebaseRecord };

/** The World as the rebase reads it: its Roots, its base per Root and its captured candidate. */
export interface RebaseWorld {
  roots: readonly string[];
  base: readonly { root: string; generation: number; digest: string }[];
  candidateDigest: string;
}

/** Forms the rebased candidate when PRIME moved since the World's base (idempotent: the same PRIME gives the same candidate). */
export function rebaseStep(store: Store, world: RebaseWorld): RebaseStep {
  const db = store.db;
  const targets = new Map<string, RebaseTarget>();
  let moved = false;
  for (const name of world.roots) {
    const root = getRoot(db, name);
    const base = world.base.find((b) => b.root === name);
    if (!root || !base) return { kind: 'as-is' };
    const baseManifest = generationManifest(db, root.rootKey, base.generation);
    const prime = generationManifest(db, root.rootKey, root.generation);
    if (!baseManifest || !prime) return { kind: 'as-is' };
    if (root.generation !== base.generation) moved = true;
    targets.set(root.rootKey, { generation: root.generation, digest: root.digest, base: baseManifest, prime });
  }
  if (!moved) return { kind: 'as-is' };
  try {
    const r = storeRebasedCandidate(store.layout.candidates, world.candidateDigest, targets);
    return { kind: 'formed', rebase: { from: r.from, candidate: r.digest, onto: r.onto } };
  } catch (e) {
    if (isRefusal(e) && e.code === 'CONFLICT') return { kind: 'conflict', message: e.message };
    if (isRefusal(e)) return { kind: 'as-is' };
    throw e;
  }
}

/** The required checks that have no finished evaluation on `candidate` for this World yet. */
export function checksPending(store: Store, worldUid: string, candidate: string, required: readonly string[]): string[] {
  const done = new Set(evaluationsFor(store.db, worldUid, candidate).filter((e) => e.subject === candidate && e.worldUid === worldUid).map((e) => e.checkName));
  return required.filter((name) => !done.has(name));
}

