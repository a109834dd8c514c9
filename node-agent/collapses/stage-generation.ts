// Staging the next generation of a root: its payload built from the base payload and the candidate's
// delta for that root, then walked and required to have exactly the digest the delta gives.
//
// Cost: O(entries of the next manifest) metadata operations — every unchanged file is one link(2) to the
// base payload's inode (no bytes copied; generations share them inside the store), every directory and
// symlink is re-created, and only the changed files' bytes are copied (from the candidate) — plus one
// walk of the staged payload that hashes only the copied files (linked inodes carry the base manifest's
// hash; the commit boundary re-hashes PRIME, which they are, for real). An O(change) version would clone
// directories lazily; not done here.
//
// Sharing inodes has two consequences: a walk of one payload sees files with more links than it finds
// (collapse-walk.ts accepts that), and a file changed in place in PRIME changes the same file in every
// older generation that shares it (so an older generation is history, not a verified backup).
import { chmodSync, chownSync, closeSync, copyFileSync, fsyncSync, lchownSync, linkSync, lstatSync, mkdirSync, openSync, symlinkSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { applyDelta, manifestDigest, validateManifest, type Manifest, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import { generationIdFor } from '../../core/root-key.js';
import type { Store } from '../store/open-store.js';
import { payloadDir } from '../store/store-layout.js';
import { getGeneration, getGenerationManifest, getRoot } from '../store/store-records.js';
import type { KnownHash } from '../store/walk-tree-sync.js';
import type { StoredDelta } from '../store/candidates.js';
import { CollapseError } from './collapse-errors.js';
import type { CollapseHooks } from './collapse-intent.js';
import { cleanDigest, collapseWalkDigest } from '../store/store-walk.js';

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
  /** The staging directory (it holds `payload`); removed once the payload moves into generations/. */
  stagingDir: string;
  payloadPath: string;
  /** Files linked to the base payload and files copied from the candidate. */
  linked: number;
  copied: number;
}

export interface StageOptions {
  /** Where to build (default staging/collapse-<random>); collapseRoot passes the one its intent names. */
  stagingDir?: string;
  hooks?: CollapseHooks;
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

export async function stageGeneration(store: Store, rootName: string, candidateDir: string, baseGeneration: number, options: StageOptions = {}): Promise<StagedGeneration> {
  const root = getRoot(store.db, rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
  const base = getGeneration(store.db, root.rootKey, baseGeneration);
  const baseManifest = base && getGenerationManifest(store.db, base.id);
  if (!base || !baseManifest) throw new CollapseError('CANDIDATE_INVALID', `root ${rootName} has no recorded generation ${baseGeneration}`);
  const delta = await readStoredDelta(candidateDir, root.rootKey);
  if (delta.root !== rootName || delta.baseGeneration !== baseGeneration || delta.baseDigest !== base.digest) {
    throw new CollapseError('CANDIDATE_INVALID', `the candidate's delta for ${rootName} is based on generation ${delta.baseGeneration} (${delta.baseDigest}), not ${baseGeneration} (${base.digest})`);
  }
  const manifest = applyDelta(baseManifest, delta);
  const problem = validateManifest(manifest)[0];
  if (problem) throw new CollapseError('CANDIDATE_INVALID', `the delta makes an invalid manifest: ${problem.path}: ${problem.message}`);
  const digest = manifestDigest(manifest);
  const generation = baseGeneration + 1;
  const generationId = generationIdFor(root.rootKey, generation, digest);

  const stagingDir = options.stagingDir ?? join(store.layout.staging, `collapse-${randomUUID()}`);
  const payloadPath = join(stagingDir, 'payload');
  const basePayload = payloadDir(store.layout, base.id);
  await rm(stagingDir, { recursive: true, force: true });
  mkdirSync(stagingDir, { mode: 0o700 });
  let counts: { linked: number; copied: number };
  const seed = new Map<string, KnownHash>();
  try {
    counts = await buildPayload(payloadPath, manifest, new Set(delta.upsert.map((e) => e.path)), basePayload, join(candidateDir, 'roots', root.rootKey), seed);
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
  return {
    rootName,
    rootKey: root.rootKey,
    baseGeneration,
    baseGenerationId: base.id,
    baseDigest: base.digest,
    generation,
    generationId,
    digest,
    manifest,
    stagingDir,
    payloadPath,
    ...counts,
  };
}

/** Entries in byte order, so each parent directory exists before what it holds. */
export async function buildPayload(
  payload: string,
  manifest: Manifest,
  changed: ReadonlySet<string>,
  basePayload: string,
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
    if (e.type === 'dir') {
      mkdirSync(to, { mode: 0o700 });
      setOwnerAndMode(to, e);
      dirs.push(to);
    } else if (e.type === 'symlink') {
      symlinkSync(e.target ?? '', to);
      lchownSync(to, e.uid, e.gid);
    } else if (changed.has(e.path)) {
      copyFileSync(join(candidateRoot, e.path), to);
      setOwnerAndMode(to, e);
      syncFile(to);
      copied++;
    } else {
      linkSync(join(basePayload, e.path), to); // the base inode: its owners and mode are already the entry's
      if (seed && e.sha256 !== undefined) {
        const st = lstatSync(to, { bigint: true });
        seed.set(`${st.dev}:${st.ino}`, { size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, sha256: e.sha256 });
      }
      linked++;
    }
  }
  if (manifest.root) setOwnerAndMode(payload, manifest.root);
  for (const d of dirs) syncFile(d);
  return { linked, copied };
}

function setOwnerAndMode(path: string, a: ManifestEntry | RootAttributes): void {
  chownSync(path, a.uid, a.gid);
  chmodSync(path, a.mode); // after chown, which clears setuid and setgid bits
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
