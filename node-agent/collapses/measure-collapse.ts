// Everything the collapse decision compares, measured on this node for one Collapse of mode Candidate:
// the World's record (its base and captured candidate), the store's records (PRIME's generation, the
// stored candidate), fresh walks of live PRIME, the governing Policy resolved against PRIME now, and the
// evaluations table. Each identity pair is fed from two different records, named at each field.
//
// measureCandidate() runs twice per collapse: at `prepare` (it walks live PRIME itself) and at the
// serialized `commit` boundary, where the commit passes in its own re-hashes of live PRIME and of the
// staged payload (commit-generation.ts) and everything else — the evaluations included, so a FAIL that
// lands meanwhile revokes — is read again.
import type { BoundaryHashes } from './commit-generation.js';
import type { Database } from 'better-sqlite3';
import type { DecisionInput, Evaluation } from '../../core/collapse/decide.js';
import { idFrom, presentId, unmeasuredId } from '../../core/collapse/identity.js';
import { globToRegExp, verifierIdentity, type CheckResources } from '../../core/evidence/requirement.js';
import { evaluationsFor } from '../store/evaluation-records.js';
import { entryReader } from '../store/generation-entries.js';
import { verifierModifiedByCandidate } from '../../core/evidence/verifier-delta.js';
import { readCandidate } from '../store/candidates.js';
import { resolveRequirement, type PolicyChecksView } from '../evidence/policy-requirement.js';
import type { Store } from '../store/open-store.js';
import { getGeneration, getRoot, type RootRecord } from '../store/store-records.js';
import type { StoredDelta } from '../store/candidates.js';
import { generationManifest } from '../store/world-records.js';
import { composite, primeGenerations, primeRehashSource, rootSetIds, type Part } from './composite-id.js';
import type { PrimeRehash, PrimeSource } from '../store/prime-measures.js';
import { decisionEvaluations } from './decision-evaluations.js';
import { testedManifest } from './tested-manifest.js';
import { join } from 'node:path';

/** One Root of the World as the measurement found it. */
export interface MeasuredRoot {
  name: string;
  rootKey: string;
  /** The World's base for this Root (world record, kept at fork time). */
  base: { generation: number; digest: string };
  /** PRIME as the store records it when the measurement started. */
  prime: { generation: number; digest: string };
  delta: StoredDelta | null;
  /** The digest the tested candidate gives this Root (base manifest + delta), null when not computable. */
  testedDigest: string | null;
}

export interface CandidateMeasurement {
  input: DecisionInput;
  roots: MeasuredRoot[];
  candidateDir: string;
  /** What the receipt binds: the requirement, subject and verifier identities the decision compared. */
  evidence: { requirementHash: string | null; subject: string | null; verifierIdentity: string | null; executedVerifierIdentity: string | null };
}

export interface WorldView {
  uid: string;
  roots: readonly string[];
  /** World status (the agent's record): base[] and candidate.digest. */
  base: readonly { root: string; generation: number; digest: string }[];
  candidateDigest: string | undefined;
}

/** Paths the candidate changes that PRIME also changed since the base (the two generations' entries compared). */
function conflictsOf(db: Database, root: RootRecord, baseGeneration: number, delta: StoredDelta | null): { measured: false } | { measured: true; found: string[] } {
  if (!delta) return { measured: false };
  if (baseGeneration === root.generation) return { measured: true, found: [] };
  const base = getGeneration(db, root.rootKey, baseGeneration);
  const prime = getGeneration(db, root.rootKey, root.generation);
  if (!base || !prime) return { measured: false };
  const [before, now] = [entryReader(db, root.rootKey, base.number), entryReader(db, root.rootKey, prime.number)];
  const touched = [...delta.upsert.map((e) => e.path), ...delta.deleted];
  const found = touched.filter((p) => JSON.stringify(before.get(p) ?? null) !== JSON.stringify(now.get(p) ?? null)).map((p) => `${root.name}/${p}`);
  return { measured: true, found };
}

/** What the pass over the World's Roots measured, per Root and in sum. */
interface RootsPass {
  roots: MeasuredRoot[];
  candidateValid: boolean;
  foreign: string[];
  foreignMeasured: boolean;
  conflicts: string[];
  conflictsMeasured: boolean;
  primeRehash: Part[];
  primeSources: [string, PrimeSource | undefined][];
  stagedRehash: Part[];
  storePrime: Part[];
  candidateBase: Part[];
  worldBase: Part[];
  tested: Part[];
  storeRoots: string[];
  /** Each Root's current generation manifest (lazy), for resolving the requirement PRIME imposes now. */
  manifests: Map<string, ReturnType<typeof generationManifest>>;
}

type StoredCandidate = ReturnType<typeof readCandidate>;

/** The digest the tested candidate gives a Root: its base generation's manifest with the delta applied (null: not computable; false: invalid). */
function testedDigestOf(db: Database, root: RootRecord, baseGeneration: number, delta: StoredDelta | null): string | null | false {
  const baseGen = getGeneration(db, root.rootKey, baseGeneration);
  const tested = baseGen && testedManifest(db, baseGen.id, delta ?? { upsert: [], deleted: [] });
  if (!tested) return null;
  return tested.digest ?? false;
}

async function measureRoots(
  db: Database,
  world: WorldView,
  stored: StoredCandidate | undefined,
  walkPrime: (root: RootRecord) => Promise<PrimeRehash | undefined>,
  boundary: BoundaryHashes | undefined,
): Promise<RootsPass> {
  const pass: RootsPass = {
    roots: [], candidateValid: world.candidateDigest !== undefined && stored !== undefined && world.roots.length > 0,
    foreign: [], foreignMeasured: true, conflicts: [], conflictsMeasured: true,
    primeRehash: [], primeSources: [], stagedRehash: [], storePrime: [], candidateBase: [], worldBase: [], tested: [], storeRoots: [], manifests: new Map(),
  };
  for (const name of world.roots) {
    const root = getRoot(db, name);
    const base = world.base.find((b) => b.root === name);
    if (!root || !base) {
      pass.candidateValid = false;
      continue;
    }
    if (root.state === 'Ready') pass.storeRoots.push(name);
    pass.manifests.set(name, generationManifest(db, root.rootKey, root.generation));
    const delta = stored?.deltas.get(root.rootKey) ?? null;
    if (delta && (delta.root !== name || delta.baseGeneration !== base.generation || delta.baseDigest !== base.digest)) pass.candidateValid = false;

    const tested = testedDigestOf(db, root, base.generation, delta);
    if (tested === false) pass.candidateValid = false;
    const testedDigest = tested === false ? null : tested;

    const walked = boundary ? undefined : await walkPrime(root);
    const rehash = boundary ? boundary.prime.get(name) : walked?.digest;
    pass.primeRehash.push([name, rehash]);
    pass.primeSources.push([name, boundary ? boundary.primeSources.get(name) : walked?.source]);
    pass.stagedRehash.push([name, boundary ? boundary.staged.get(name) : undefined]);
    if (rehash === undefined) pass.foreignMeasured = false;
    else if (rehash !== root.digest) pass.foreign.push(name);

    const c = conflictsOf(db, root, base.generation, delta);
    if (!c.measured) pass.conflictsMeasured = pass.conflictsMeasured && delta === null;
    else pass.conflicts.push(...c.found);

    pass.storePrime.push([name, `${name}@${root.generation}`]);
    pass.candidateBase.push([name, delta ? `${delta.root}@${delta.baseGeneration}` : stored ? `${name}@${base.generation}` : null]);
    pass.worldBase.push([name, base.digest]);
    pass.tested.push([name, testedDigest]);
    pass.roots.push({ name, rootKey: root.rootKey, base: { generation: base.generation, digest: base.digest }, prime: { generation: root.generation, digest: root.digest }, delta, testedDigest });
  }
  return pass;
}

/**
 * Verifier paths the candidate touched, as "<root>/<path>": a bound verifier it rewrites, deletes or
 * shadows, and any path it adds or removes where the Policy declares verifiers (a new file a verifier
 * might source is a redirection, bound or not).
 */
function verifiersModified(roots: readonly MeasuredRoot[], resolved: ReturnType<typeof resolveRequirement>): string[] {
  const globs = (resolved?.definitions ?? []).flatMap((d) => (d.verifiers ?? []).map(globToRegExp));
  const out: string[] = [];
  for (const r of roots) {
    const hits = new Set(verifierModifiedByCandidate(resolved?.bound.get(r.name) ?? [], r.delta));
    for (const p of r.delta ? [...r.delta.upsert.filter((e) => e.type !== 'dir').map((e) => e.path), ...r.delta.deleted] : []) if (globs.some((g) => g.test(p))) hits.add(p);
    out.push(...[...hits].sort().map((p) => `${r.name}/${p}`));
  }
  return out;
}

/** The evaluations that speak for the candidate; with no check required, the empty roster is the evaluation. */
function candidateEvaluations(db: Database, world: WorldView, resolved: ReturnType<typeof resolveRequirement>, stored: StoredCandidate | undefined): Evaluation[] {
  const privateChecks = new Set((resolved?.definitions ?? []).filter((d) => d.profile === 'private-evaluator-v1').map((d) => d.name));
  const evaluations = world.candidateDigest ? decisionEvaluations(evaluationsFor(db, world.uid, world.candidateDigest), privateChecks) : [];
  if (resolved && resolved.definitions.length === 0 && stored) {
    // Nothing ran; its subject is the candidate as re-hashed in the store, its executed verifier set the
    // empty one. That is all it can claim.
    evaluations.push({
      ordinal: evaluations.reduce((n, e) => Math.max(n, e.ordinal), 0) + 1,
      subject: presentId('evidenceSubject', stored.digest),
      requirement: presentId('requirement', resolved.requirementHash),
      context: { present: true, intact: true, world: idFrom('world', world.uid) },
      executedVerifier: presentId('verifierExecuted', verifierIdentity([])),
      executions: [],
    });
  }
  return evaluations;
}

/**
 * Measures a Candidate-mode collapse. `walkPrime(root)` re-hashes live PRIME of a Root, walked or vouched
 * for by the watcher (undefined, or an undefined digest: the walk found a problem, or the live route is
 * broken) and is only called at `prepare`.
 */
export async function measureCandidate(
  store: Store,
  world: WorldView,
  policy: PolicyChecksView | undefined,
  walkPrime: (root: RootRecord) => Promise<PrimeRehash | undefined>,
  checkResources: CheckResources | null,
  boundary?: BoundaryHashes,
): Promise<CandidateMeasurement> {
  const db = store.db;
  const candidateDigest = world.candidateDigest;
  const candidateDir = join(store.layout.candidates, (candidateDigest ?? 'sha256:missing').replace(/^sha256:/, ''));
  let stored: StoredCandidate | undefined;
  try {
    stored = candidateDigest ? readCandidate(candidateDir) : undefined;
  } catch {
    stored = undefined; // unreadable, or it does not hash to its name: the delta pair below is then absent
  }

  const startGenerations = primeGenerations(db, world.roots);
  const pass = await measureRoots(db, world, stored, walkPrime, boundary);
  const { roots } = pass;
  // The requirement CURRENT PRIME imposes: the Policy now, its verifiers read in PRIME's generation now,
  // and the resources a check runs with on this node now.
  const resolved = resolveRequirement(policy, world.roots, (name) => pass.manifests.get(name), checkResources);
  const modifiedVerifiers = verifiersModified(roots, resolved);
  const evaluations = candidateEvaluations(db, world, resolved, stored);
  const endGenerations = primeGenerations(db, world.roots);
  const source = primeRehashSource(store.primeMeasures, pass.primeSources);
  const speaking = evaluations.reduce<(typeof evaluations)[number] | undefined>((a, e) => (!a || e.ordinal > a.ordinal ? e : a), undefined);
  const allRoots = roots.length === world.roots.length;

  const input: DecisionInput = {
    stage: boundary ? 'commit' : 'prepare',
    candidateValid: pass.candidateValid,
    conflicts: pass.conflictsMeasured && allRoots ? { measured: true, found: pass.conflicts } : { measured: false },
    foreignWrites: pass.foreignMeasured && allRoots ? { measured: true, found: pass.foreign } : { measured: false },
    // PRIME's generation when the measurement started (store record) and when it ended (store record, read again).
    primeGeneration: {
      before: idFrom('primeGeneration', composite(startGenerations)),
      after: idFrom('primeGeneration', composite(endGenerations)),
    },
    // parent: the generation PRIME is (store record) vs the generation the candidate was captured on (candidate's delta).
    parent: { storePrime: idFrom('parent', composite(pass.storePrime)), candidateBase: idFrom('parent', composite(pass.candidateBase)) },
    // base: live PRIME re-hashed now vs the base digest the World kept at fork time.
    base: { primeRehash: idFrom('base', composite(pass.primeRehash)), world: idFrom('base', composite(pass.worldBase)) },
    // How live PRIME was re-hashed: walked, or the watcher's state at the recorded walk vs its state now.
    primeRehashSource: source,
    // delta: the digest the World's capture recorded vs the stored candidate re-hashed (candidate.json hashes to its name).
    delta: { captured: idFrom('delta', candidateDigest), stored: idFrom('delta', stored?.digest) },
    rootSet: rootSetIds(world.roots, pass.storeRoots),
    // staged root (commit only): the staged payload re-hashed vs what the tested candidate gives.
    stagedRoot: boundary
      ? { staged: idFrom('stagedRoot', composite(pass.stagedRehash)), tested: idFrom('stagedRoot', composite(pass.tested)) }
      : { staged: unmeasuredId('stagedRoot'), tested: unmeasuredId('stagedRoot') },
    subject: idFrom('evidenceSubject', candidateDigest),
    obligation: {
      mode: 'Candidate',
      world: idFrom('world', world.uid),
      currentRequirement: idFrom('requirement', resolved?.requirementHash),
      requiredChecks: (resolved?.definitions ?? []).map((d) => d.name),
      declaredVerifier: idFrom('verifierDeclared', resolved?.declaredVerifier),
      verifiersModifiedByCandidate: resolved && stored ? { measured: true, found: modifiedVerifiers } : { measured: false },
      evaluations,
    },
  };
  return {
    input,
    roots,
    candidateDir,
    evidence: {
      requirementHash: resolved?.requirementHash ?? null,
      subject: candidateDigest ?? null,
      verifierIdentity: resolved?.declaredVerifier ?? null,
      executedVerifierIdentity: speaking && speaking.executedVerifier.present ? speaking.executedVerifier.value : null,
    },
  };
}
