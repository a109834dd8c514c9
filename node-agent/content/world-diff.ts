// A World's captured change as a diff, from this node's store: the candidate its status names (stored
// under its digest, which readCandidate checks) against the base generations it was forked from.
import { join } from 'node:path';
import { Refusal } from '../../core/errors.js';
import { isDigest } from '../../core/digest.js';
import { baseIndexOf } from '../store/base-index.js';
import { readCandidate } from '../store/candidates.js';
import type { Store } from '../store/open-store.js';
import { holdPayload } from '../store/payload-holds.js';
import { getGeneration, getGenerationManifest } from '../store/store-records.js';
import { renderDiff, type DiffFormat, type DiffLimits, type DiffResult, type DiffSource, DEFAULT_DIFF_LIMITS } from './candidate-diff.js';

/** The diff of the candidate `digest` (a World's status.candidate.digest) against the bases it records. */
export function candidateDiff(store: Pick<Store, 'layout' | 'db'>, digest: string, format: DiffFormat, limits: DiffLimits = DEFAULT_DIFF_LIMITS): DiffResult {
  if (!isDigest(digest)) throw new Refusal('CANDIDATE_INVALID', `"${digest}" is not a candidate digest`);
  const candidateDir = join(store.layout.candidates, digest.slice('sha256:'.length));
  let deltas;
  try {
    deltas = readCandidate(candidateDir).deltas;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Refusal('CANDIDATE_MISSING', `candidate ${digest} is not in this node's store`);
    throw err;
  }
  const sources: DiffSource[] = [];
  // Each base's payload is read for the old side of a modified file: held mounted until the diff is made.
  const held: (() => void)[] = [];
  try {
    for (const [rootKey, delta] of deltas) {
      const gen = getGeneration(store.db, rootKey, delta.baseGeneration);
      const manifest = gen ? getGenerationManifest(store.db, gen.id) : undefined;
      // Without the base's manifest every changed path would look added: refuse rather than mislead.
      if (!gen || !manifest) throw new Refusal('CANDIDATE_INVALID', `the base generation ${delta.baseGeneration} of Root ${delta.root} is not recorded in this node's store`);
      const index = baseIndexOf(manifest);
      const base = holdPayload(store, gen.id);
      held.push(base.release);
      sources.push({
        root: delta.root,
        delta,
        candidatePayload: join(candidateDir, 'roots', rootKey),
        basePayload: base.path,
        baseEntry: (p) => index.get(p),
      });
    }
    return renderDiff(sources, format, limits);
  } finally {
    for (const release of held) release();
  }
}
