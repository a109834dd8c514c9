// Staging the next generation of a root from the base generation and the candidate's delta for that root.
//
// Normally the next generation is stacked (store/generation-stack.ts): its layer holds only what the
// delta changes (stage-layer.ts), is checked to hold exactly that, and goes on top of the base's stack
// (or of its shorter form over a compaction made in the background: background-compaction.ts).
// Cost: O(changed paths); the base is never walked or linked here. The commit boundary measures PRIME and
// re-checks the layer; the stacked payload then has the next manifest's digest by construction.
//
// When the base's stack is MAX_STACK_DEPTH layers deep, the next generation is a full one instead (the
// compaction): every unchanged file one link(2) to the inode of the layer that provides it, directories
// and symlinks re-created, the changed files copied from the candidate, and the result walked (hashing
// only the copied files: linked inodes carry the base manifest's hash) and required to have the digest.
import { linkSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { type Manifest, type ManifestDelta, type RootAttributes } from '../../core/manifest.js';
import { generationIdFor } from '../../core/root-key.js';
import type { Store } from '../store/open-store.js';
import { payloadDir, type StoreLayout } from '../store/store-layout.js';
import { readMarker } from '../store/generation-marker.js';
import { MAX_STACK_DEPTH, effectiveStack, layerDir, stackIds, withBeneath } from '../store/generation-stack.js';
import { buildLayer, layerMismatch, setOwnerAndMode, syncPath, writeEntry, type BuiltLayer } from './stage-layer.js';
import { planLayer, type LayerItem } from '../../core/layer-plan.js';
import { getGeneration, getGenerationManifest, getRoot, type GenerationRecord, type RootRecord } from '../store/store-records.js';
import { testedManifest } from './tested-manifest.js';
import type { KnownHash } from '../store/walk-tree-sync.js';
import type { StoredDelta } from '../store/candidates.js';
import { CollapseError } from './collapse-errors.js';
import type { CollapseHooks } from './collapse-intent.js';
import { cleanDigest, collapseWalkDigest } from '../store/store-walk.js';
import { holdPayload } from '../store/payload-holds.js';

export interface StagedGeneration {
  rootName: string;
  rootKey: string;
  baseGeneration: number;
  baseGenerationId: string;
  baseDigest: string;
  generation: number;
  generationId: string;
  /** manifestDigest(applyDelta(base manifest, delta)), which the staged payload's walk was required to equal. */
  digest: string;
  manifest: Manifest;
  /** The candidate's delta that made `manifest` of the base generation's (absent for a return): the store records only its entries. */
  delta?: ManifestDelta;
  /** The staging directory (it holds `payload` or `layer`); removed once they move into generations/. */
  stagingDir: string;
  /** A full generation's staged payload (stagingDir/payload); for a stacked one, where its layer is staged. */
  payloadPath: string;
  /**
   * Paths under payloadPath (relative, '' for itself) written and not yet fsynced: the commit syncs them
   * where they land in generations/, in its one batch before the exchange. A full payload is synced as
   * it is built (absent).
   */
  unsynced?: string[];
  /** A stacked generation: the generation ids of its stack, topmost first (its own first when it has a layer). */
  layers?: string[];
  /**
   * A stacked generation's own layer: what it must hold, checked again at the commit boundary, and whether
   * the rest of its stack is its base's (then it has the staged digest whenever PRIME has the base's).
   */
  layer?: {
    items: LayerItem[];
    root: RootAttributes;
    overBase: boolean;
    /**
     * The rest of its stack is its base's but for a published compaction of this generation in place of
     * that generation's layers: it has the staged digest whenever PRIME has the base's and the compaction
     * is still what its walk measured (the boundary asks the PRIME watcher).
     */
    overCompaction?: string;
  };
  /** Files linked to the base payload and files copied from the candidate. */
  linked: number;
  copied: number;
}

export interface StageOptions {
  /** Where to build (default staging/collapse-<random>); collapseRoot passes the one its intent names. */
  stagingDir?: string;
  hooks?: CollapseHooks;
}

/** What a next generation will be, known before anything is built: its number, id and manifest digest. */
export interface GenerationIdentity {
  generation: number;
  generationId: string;
  digest: string;
}

/** The next generation of a Root from the candidate's delta, planned: what stageGeneration builds. */
export interface GenerationPlan extends GenerationIdentity {
  root: RootRecord;
  base: GenerationRecord;
  baseManifest: Manifest;
  delta: StoredDelta;
  manifest: Manifest;
}

/** The candidate's delta for one root: roots/<rootKey>.delta.json, checked for shape and base. */
export async function readStoredDelta(candidateDir: string, rootKey: string): Promise<StoredDelta> {
  const path = join(candidateDir, 'roots', `${rootKey}.delta.json`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    throw new CollapseError('CANDIDATE_INVALID', `${path} is missing or not JSON`, { cause: e });
  }
  const d = parsed as Partial<StoredDelta> | null;
  if (
    d === null ||
    typeof d !== 'object' ||
    d.format !== 'worldline.delta/v1' ||
    typeof d.root !== 'string' ||
    !Number.isSafeInteger(d.baseGeneration) ||
    typeof d.baseDigest !== 'string' ||
    !Array.isArray(d.upsert) ||
    !Array.isArray(d.deleted) ||
    !d.deleted.every((p) => typeof p === 'string')
  ) {
    throw new CollapseError('CANDIDATE_INVALID', `${path} is not a worldline.delta/v1 document`);
  }
  return d as StoredDelta;
}

/**
 * The next generation of `rootName` over `baseGeneration`, from the candidate's delta: the delta read and
 * checked against the base, the next manifest made and validated, its digest and the generation's id.
 * Nothing is written; refusals are CANDIDATE_INVALID (or ROOT_NOT_FOUND).
 */
export async function planGeneration(store: Store, rootName: string, candidateDir: string, baseGeneration: number): Promise<GenerationPlan> {
  const root = getRoot(store.db, rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
  const base = getGeneration(store.db, root.rootKey, baseGeneration);
  const baseManifest = base && getGenerationManifest(store.db, base.id);
  if (!base || !baseManifest) throw new CollapseError('CANDIDATE_INVALID', `root ${rootName} has no recorded generation ${baseGeneration}`);
  const delta = await readStoredDelta(candidateDir, root.rootKey);
  if (delta.root !== rootName || delta.baseGeneration !== baseGeneration || delta.baseDigest !== base.digest) {
    throw new CollapseError('CANDIDATE_INVALID', `the candidate's delta for ${rootName} is based on generation ${delta.baseGeneration} (${delta.baseDigest}), not ${baseGeneration} (${base.digest})`);
  }
  const { manifest, problems, digest } = testedManifest(store.db, base.id, delta)!;
  const problem = problems[0];
  if (problem || digest === null) throw new CollapseError('CANDIDATE_INVALID', `the delta makes an invalid manifest: ${problem?.path}: ${problem?.message}`);
  const generation = baseGeneration + 1;
  return { root, base, baseManifest, delta, manifest, digest, generation, generationId: generationIdFor(root.rootKey, generation, digest) };
}

/** Builds and checks the next generation in staging; `plan` is planGeneration's for the same arguments (made here when absent). */
export async function stageGeneration(store: Store, rootName: string, candidateDir: string, baseGeneration: number, options: StageOptions & { plan?: GenerationPlan } = {}): Promise<StagedGeneration> {
  const { root, base, baseManifest, delta, manifest, digest, generation, generationId } = options.plan ?? (await planGeneration(store, rootName, candidateDir, baseGeneration));
  const stagingDir = options.stagingDir ?? join(store.layout.staging, `collapse-${randomUUID()}`);
  // The base's payload is read (its root's owner and mode; walked when a compaction fails): held mounted meanwhile.
  const held = holdPayload(store, base.id);
  const basePayload = held.path;
  try {
    // Over a published compaction of part of the base's stack when there is one (background-compaction.ts).
    const { ids: baseIds, compacted } = effectiveStack(store.db, stackIds(readMarker(store.layout, base.id), base.id));
    const candidateRoot = join(candidateDir, 'roots', root.rootKey);
    const staged = { rootName, rootKey: root.rootKey, baseGeneration, baseGenerationId: base.id, baseDigest: base.digest, generation, generationId, digest, manifest, delta, stagingDir };
    await rm(stagingDir, { recursive: true, force: true });
    mkdirSync(stagingDir, { mode: 0o700 });

    if (baseIds.length < MAX_STACK_DEPTH) {
      const layerPath = join(stagingDir, 'layer');
      let layer: NonNullable<StagedGeneration['layer']>;
      let built: BuiltLayer;
      try {
        const items = planLayer(baseManifest, manifest, [...delta.upsert.map((e) => e.path), ...delta.deleted]);
        const top = lstatSync(basePayload);
        const rootAttributes = manifest.root ?? { mode: top.mode & 0o7777, uid: top.uid, gid: top.gid };
        built = buildLayer(layerPath, items, rootAttributes, candidateRoot);
        layer = { items, root: rootAttributes, overBase: compacted === undefined, ...(compacted !== undefined ? { overCompaction: compacted } : {}) };
      } catch (e) {
        await rm(stagingDir, { recursive: true, force: true });
        throw new CollapseError('STAGED_UNTESTED', `building the layer of generation ${generation} of ${rootName} failed: ${String(e)}`, { cause: e });
      }
      await options.hooks?.afterStep?.('after-stage');
      const mismatch = layerMismatch(layerPath, layer.items, layer.root);
      if (mismatch !== undefined) {
        await rm(stagingDir, { recursive: true, force: true });
        throw new CollapseError('STAGED_UNTESTED', `the staged layer of ${rootName} is not the candidate's: ${mismatch}`);
      }
      await options.hooks?.afterStep?.('after-verify');
      return { ...staged, payloadPath: layerPath, unsynced: built.unsynced, layers: [generationId, ...baseIds], layer, linked: 0, copied: built.copied };
    }

    // The compaction: a full generation, each unchanged file linked from the layer that provides it.
    const payloadPath = join(stagingDir, 'payload');
    let counts: { linked: number; copied: number };
    const seed = new Map<string, KnownHash>();
    try {
      counts = await buildCompaction(store, payloadPath, manifest, baseIds, new Set(delta.upsert.map((e) => e.path)), candidateRoot, seed);
    } catch (e) {
      await rm(stagingDir, { recursive: true, force: true });
      throw new CollapseError('STAGED_UNTESTED', `building the payload of generation ${generation} of ${rootName} failed: ${String(e)}`, { cause: e });
    }
    await options.hooks?.afterStep?.('after-stage');

    // Linked files are taken at the base manifest's word here (the commit boundary re-hashes PRIME, whose
    // inodes they are, for real); the copied files, the structure, owners and modes are measured now.
    const walk = await collapseWalkDigest(payloadPath, store.dir, seed);
    if (walk.problems.length > 0 || walk.digest !== digest) {
      await rm(stagingDir, { recursive: true, force: true });
      // Unchanged files are links to PRIME's own: a write to PRIME since capture shows up here first.
      if ((await cleanDigest(basePayload, store.dir)) !== base.digest) {
        throw new CollapseError('FOREIGN_WRITE', `PRIME of ${rootName} no longer has the digest of generation ${baseGeneration}`);
      }
      const why = walk.problems[0] ? `${walk.problems[0].code} at ${walk.problems[0].path}` : `walk digest ${walk.digest}, expected ${digest}`;
      throw new CollapseError('STAGED_UNTESTED', `the staged payload of ${rootName} is not the candidate's: ${why}`);
    }
    await options.hooks?.afterStep?.('after-verify');
    return { ...staged, payloadPath, ...counts };
  } finally {
    held.release();
  }
}

/**
 * A full generation of `manifest` at `payloadPath`, compacting the stack `ids` (topmost first): each file
 * not in `changed` one link(2) to the inode of the layer that provides it, the rest written from
 * `candidateRoot`. Built beneath the seals (the bottom's read-only bind mount): link(2) cannot cross from
 * a mount to the store's. `seed` gets each linked inode's hash from the manifest.
 */
export function buildCompaction(store: Store, payloadPath: string, manifest: Manifest, ids: readonly string[], changed: ReadonlySet<string>, candidateRoot: string, seed?: Map<string, KnownHash>): Promise<{ linked: number; copied: number }> {
  return withBeneath(store.dir, (beneath) => {
    const provider = providerOf(store.layout, ids);
    return buildPayload(beneath(payloadPath), manifest, changed, (path) => beneath(provider(path)), candidateRoot, seed);
  });
}

/**
 * Where each path of a stack's merged tree lives: the topmost layer holding it as a non-directory, else
 * the full generation at the bottom. Reads the layers only (each holds one collapse's change).
 */
function providerOf(l: StoreLayout, ids: readonly string[]): (path: string) => string {
  const bottom = payloadDir(l, ids[ids.length - 1]!);
  const provided = new Map<string, string>();
  for (const id of ids.slice(0, -1).reverse()) {
    const top = layerDir(l, id);
    const visit = (rel: string): void => {
      for (const d of readdirSync(join(top, rel), { withFileTypes: true })) {
        const path = rel === '' ? d.name : `${rel}/${d.name}`;
        if (d.isDirectory()) visit(path);
        else if (!d.isCharacterDevice()) provided.set(path, join(top, path)); // a whiteout provides nothing
      }
    };
    visit('');
  }
  return (path) => provided.get(path) ?? join(bottom, path);
}

/** Entries in byte order, so each parent directory exists before what it holds. */
export async function buildPayload(
  payload: string,
  manifest: Manifest,
  changed: ReadonlySet<string>,
  source: string | ((path: string) => string),
  candidateRoot: string,
  seed?: Map<string, KnownHash>,
): Promise<{ linked: number; copied: number }> {
  mkdirSync(payload, { mode: 0o700 });
  const dirs = [payload];
  let linked = 0;
  let copied = 0;
  let n = 0;
  for (const e of manifest.entries) {
    if (++n % 512 === 0) await new Promise((r) => setImmediate(r));
    const to = join(payload, e.path);
    if (e.type !== 'file' || changed.has(e.path)) {
      writeEntry(to, e, candidateRoot);
      if (e.type === 'dir') dirs.push(to);
      else if (e.type === 'file') copied++;
    } else {
      linkSync(typeof source === 'string' ? join(source, e.path) : source(e.path), to); // the base inode: its owners and mode are already the entry's
      if (seed && e.sha256 !== undefined) {
        const st = lstatSync(to, { bigint: true });
        seed.set(`${st.dev}:${st.ino}`, { size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, sha256: e.sha256 });
      }
      linked++;
    }
  }
  if (manifest.root) setOwnerAndMode(payload, manifest.root);
  for (const d of dirs) syncPath(d);
  return { linked, copied };
}
