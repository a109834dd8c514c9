// What the collapse decision compares for a Collapse of mode CheckpointReturn: PRIME goes back to the
// World's checkpoint — the generation each Root had when the World was forked — as a new generation.
// It is an undo of the World's own committed collapse, so it is allowed only while PRIME is still
// exactly what that collapse made (else PRIME_MOVED: returning would discard someone else's work).
//
// The evidence is a witness: the checkpoint generation re-hashed in the store now (generations share
// inodes, so a file written in place since would change it), which must equal the checkpoint the World
// recorded at fork time. Each identity pair is fed from two different records, named at each field.
import type { DecisionInput } from '../../core/collapse/decide.js';
import { idFrom, presentId, unmeasuredId } from '../../core/collapse/identity.js';
import { manifestDigest } from '../../core/manifest.js';
import type { Store } from '../store/open-store.js';
import { holdPayload } from '../store/payload-holds.js';
import { getGeneration, getGenerationManifest, getRoot, type RootRecord } from '../store/store-records.js';
import { cleanDigest } from '../store/store-walk.js';
import { composite, primeGenerations, primeRehashSource, rootSetIds, type Part } from './composite-id.js';
import type { PrimeRehash, PrimeSource } from '../store/prime-measures.js';
import type { BoundaryHashes } from './commit-generation.js';
import type { WorldView } from './measure-collapse.js';

/** Per Root: what the World's committed Candidate collapse made of it (collapse transaction record). */
export type CollapsedResult = ReadonlyMap<string, { toGeneration: number; digest: string }>;

export interface ReturnRoot {
  name: string;
  /** PRIME as the return starts from it (store record): the base of the commit. */
  prime: { generation: number; digest: string };
  /** The checkpoint generation (world record). */
  checkpoint: { generation: number; digest: string };
}

export interface CheckpointMeasurement {
  input: DecisionInput;
  roots: ReturnRoot[];
  evidence: { requirementHash: null; subject: string | null; verifierIdentity: null; executedVerifierIdentity: null };
}

export async function measureCheckpointReturn(
  store: Store,
  world: WorldView,
  collapsed: CollapsedResult,
  walkPrime: (root: RootRecord) => Promise<PrimeRehash | undefined>,
  boundary?: BoundaryHashes,
): Promise<CheckpointMeasurement> {
  const db = store.db;
  const roots: ReturnRoot[] = [];
  let candidateValid = world.roots.length > 0;
  let foreignMeasured = true;
  const foreign: string[] = [];
  const start = primeGenerations(db, world.roots);
  const storePrime: Part[] = [];
  const collapsedTo: Part[] = [];
  const primeRehash: Part[] = [];
  const primeSources: [string, PrimeSource | undefined][] = [];
  const collapsedDigest: Part[] = [];
  const recorded: Part[] = [];
  const stored: Part[] = [];
  const witness: Part[] = [];
  const staged: Part[] = [];
  const storeRoots: string[] = [];

  for (const name of world.roots) {
    const root = getRoot(db, name);
    const checkpoint = world.base.find((b) => b.root === name);
    const made = collapsed.get(name);
    recorded.push([name, checkpoint?.digest]);
    if (!root || !checkpoint) {
      candidateValid = false;
      continue;
    }
    if (root.state === 'Ready') storeRoots.push(name);
    // The checkpoint as the store records it, and as its payload re-hashes now (the witness).
    const gen = getGeneration(db, root.rootKey, checkpoint.generation);
    const manifest = gen && getGenerationManifest(db, gen.id);
    if (!gen || !manifest || manifestDigest(manifest) !== gen.digest) candidateValid = false;
    stored.push([name, gen?.digest]);
    witness.push([name, gen ? await checkpointWitness(store, gen.id) : undefined]);

    const walked = boundary ? undefined : await walkPrime(root);
    const rehash = boundary ? boundary.prime.get(name) : walked?.digest;
    primeRehash.push([name, rehash]);
    primeSources.push([name, boundary ? boundary.primeSources.get(name) : walked?.source]);
    staged.push([name, boundary?.staged.get(name)]);
    if (rehash === undefined) foreignMeasured = false;
    else if (rehash !== root.digest) foreign.push(name);

    storePrime.push([name, `${name}@${root.generation}`]);
    collapsedTo.push([name, made ? `${name}@${made.toGeneration}` : null]);
    collapsedDigest.push([name, made?.digest]);
    roots.push({ name, prime: { generation: root.generation, digest: root.digest }, checkpoint: { generation: checkpoint.generation, digest: checkpoint.digest } });
  }
  const end = primeGenerations(db, world.roots);
  const source = primeRehashSource(store.primeMeasures, primeSources);
  const complete = roots.length === world.roots.length;
  const witnessValue = composite(witness);

  const input: DecisionInput = {
    stage: boundary ? 'commit' : 'prepare',
    candidateValid,
    // Nothing but the World's own collapse happened since the checkpoint (the parent pair holds PRIME to it).
    conflicts: complete ? { measured: true, found: [] } : { measured: false },
    foreignWrites: foreignMeasured && complete ? { measured: true, found: foreign } : { measured: false },
    primeGeneration: { before: idFrom('primeGeneration', composite(start)), after: idFrom('primeGeneration', composite(end)) },
    // parent: the generation PRIME is (store record) vs the generation the World's collapse made (collapse transaction).
    parent: { storePrime: idFrom('parent', composite(storePrime)), candidateBase: idFrom('parent', composite(collapsedTo)) },
    // base: live PRIME re-hashed now vs the digest the World's collapse made (collapse transaction).
    base: { primeRehash: idFrom('base', composite(primeRehash)), world: idFrom('base', composite(collapsedDigest)) },
    primeRehashSource: source,
    // delta: the checkpoint the World recorded at fork time vs the checkpoint generation's store record.
    delta: { captured: idFrom('delta', composite(recorded)), stored: idFrom('delta', composite(stored)) },
    rootSet: rootSetIds(world.roots, storeRoots),
    // staged root (commit only): the staged payload re-hashed vs the checkpoint the World recorded.
    stagedRoot: boundary ? { staged: idFrom('stagedRoot', composite(staged)), tested: idFrom('stagedRoot', composite(recorded)) } : { staged: unmeasuredId('stagedRoot'), tested: unmeasuredId('stagedRoot') },
    // The bytes that would go live: the checkpoint as the World recorded it.
    subject: idFrom('evidenceSubject', composite(recorded)),
    obligation: {
      mode: 'CheckpointReturn',
      checkpoint: idFrom('checkpoint', composite(recorded)),
      witness: witnessValue === null ? null : { checkpoint: presentId('checkpoint', witnessValue), subject: presentId('evidenceSubject', witnessValue) },
    },
  };
  return { input, roots, evidence: { requirementHash: null, subject: composite(recorded), verifierIdentity: null, executedVerifierIdentity: null } };
}

/** The checkpoint's payload re-hashed, held mounted while it is walked; undefined (unmeasured) when it cannot be mounted or walked. */
async function checkpointWitness(store: Store, genId: string): Promise<string | undefined> {
  let held: ReturnType<typeof holdPayload>;
  try {
    held = holdPayload(store, genId);
  } catch {
    return undefined;
  }
  try {
    return await cleanDigest(held.path, store.dir);
  } finally {
    held.release();
  }
}
