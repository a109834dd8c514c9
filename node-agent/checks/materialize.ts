// A check's view of a candidate. Per Root, an overlay whose read-only lower layers are, top to bottom:
//   staging — the bound verifier files copied out of PRIME (the base generation for a first check, the
//             current PRIME for a revalidation), so a candidate can neither rewrite nor shadow them;
//   delta   — the candidate's changed entries, with each deleted path as an overlay whiteout;
//   base    — the base generation's payload;
// each seen through an idmapped mount (as a world sees its Root), with a scratch upper layer. The check
// thus sees exactly the candidate's bytes, except that bound verifiers are PRIME's.
//
// The delta layer is rebuilt from the stored candidate (never used in place: the candidate's directory
// holds parent directories with store-private modes), and every file's bytes are re-hashed against the
// candidate's entry before they are used.
import { execFile } from 'node:child_process';
import {
  chmodSync, chownSync, closeSync, constants as fsc, copyFileSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync,
  readlinkSync, symlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Refusal } from '../../core/errors.js';
import { qualifiedVerifierPath, verifierIdentity, type VerifierFile } from '../../core/evidence/requirement.js';
import { compareBytes, isCleanRelativePath, parentOf } from '../../core/relative-path.js';
import type { ManifestEntry } from '../../core/manifest.js';
import * as native from '../../native/index.js';
import { hashOpenFile } from '../store/hash-file.js';
import type { StoredDelta } from '../store/candidates.js';
import { mountLowers, upperTopOwner, type RootMount } from '../sandbox/rootfs.js';
import { layerPaths, type LayerPaths, type WorldPaths } from '../sandbox/run-paths.js';

const run = promisify(execFile);
const OVERLAY_OPTIONS = ['redirect_dir=off', 'metacopy=off', 'index=off'];

export class CheckSetupError extends Refusal {
  constructor(override readonly code: 'CANDIDATE_INVALID' | 'VERIFIER_STAGING_FAILED' | 'CHECK_VIEW_FAILED', message: string) {
    super(code, message);
    this.name = 'CheckSetupError';
  }
}

/** One Root as a check sees it. */
export interface CheckRoot {
  /** Root name (qualifies verifier paths). */
  name: string;
  rootKey: string;
  /** Where the Root appears inside the check's sandbox. */
  path: string;
  /** The candidate's base generation payload (read through the store). */
  basePayload: string;
  /** The base generation's layers, topmost first (store/generation-stack.ts); absent: basePayload alone. */
  baseLayers?: string[];
  /** Where bound verifiers are staged from: the base generation (first check) or the current PRIME (revalidation). */
  primePayload: string;
  /** Root-relative paths of the verifiers bound in this Root (regular files of the PRIME manifest). */
  bound: readonly string[];
  /** The candidate's delta for this Root; null when the candidate did not change it. */
  delta: StoredDelta | null;
}

/** The host-side directories of one Root's view (all under the check's directory). */
export interface CheckRootLayers extends LayerPaths {
  /** Staged verifier files (plain directory) and its idmapped mount. */
  stagingDir: string;
  stagingMount: string;
  /** The rebuilt delta layer (plain directory) and its idmapped mount. */
  deltaDir: string;
  deltaMount: string;
}

/** Creates `rel`'s missing parent directories under `top`, each with the attributes `attrsOf` gives. */
function ensureParents(top: string, rel: string, attrsOf: (dir: string) => { mode: number; uid: number; gid: number }, made: Set<string>): void {
  const chain: string[] = [];
  for (let a = parentOf(rel); a !== '' && !made.has(a); a = parentOf(a)) chain.push(a);
  for (const a of chain.reverse()) {
    const abs = join(top, a);
    const at = attrsOf(a);
    mkdirSync(abs, { mode: 0o700 });
    chownSync(abs, at.uid, at.gid);
    chmodSync(abs, at.mode & 0o7777);
    made.add(a);
  }
}

function statAttrs(abs: string): { mode: number; uid: number; gid: number } | undefined {
  try {
    const st = lstatSync(abs);
    return st.isDirectory() ? { mode: st.mode, uid: st.uid, gid: st.gid } : undefined;
  } catch {
    return undefined;
  }
}

function hashFile(abs: string): string {
  const fd = openSync(abs, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    return hashOpenFile(fd, Buffer.allocUnsafe(1 << 16)).sha256;
  } finally {
    closeSync(fd);
  }
}

/** Directory attributes in the candidate's next tree: its upserted entry, else the base's directory. */
function candidateDirAttrs(root: CheckRoot): (dir: string) => { mode: number; uid: number; gid: number } {
  const dirs = new Map<string, ManifestEntry>();
  for (const e of root.delta?.upsert ?? []) if (e.type === 'dir') dirs.set(e.path, e);
  return (dir) => {
    const e = dirs.get(dir);
    if (e) return { mode: e.mode, uid: e.uid, gid: e.gid };
    const st = statAttrs(join(root.basePayload, dir)) ?? statAttrs(join(root.primePayload, dir));
    if (!st) throw new CheckSetupError('CHECK_VIEW_FAILED', `directory ${dir} of root ${root.name} is in neither the candidate nor its base`);
    return st;
  };
}

/**
 * Builds the delta layer of one Root in `layerDir` (which must not exist): upserted entries with their
 * owners and modes, file bytes copied from the candidate and checked against the entry's hash, and a
 * whiteout (character device 0:0) at every deleted path whose parent survives.
 */
export async function buildDeltaLayer(root: CheckRoot, candidateDir: string, layerDir: string): Promise<void> {
  mkdirSync(layerDir, { mode: 0o700 });
  const delta = root.delta;
  if (!delta) return;
  const from = join(candidateDir, 'roots', root.rootKey);
  const attrs = candidateDirAttrs(root);
  const made = new Set<string>();
  for (const e of [...delta.upsert].sort((a, b) => compareBytes(a.path, b.path))) {
    if (!isCleanRelativePath(e.path)) throw new CheckSetupError('CANDIDATE_INVALID', `delta path ${JSON.stringify(e.path)} is not a clean relative path`);
    ensureParents(layerDir, e.path, attrs, made);
    const to = join(layerDir, e.path);
    if (e.type === 'dir') {
      mkdirSync(to, { mode: 0o700 });
      chownSync(to, e.uid, e.gid);
      chmodSync(to, e.mode & 0o7777);
      made.add(e.path);
    } else if (e.type === 'file') {
      const src = join(from, e.path);
      const st = lstatSync(src);
      if (!st.isFile()) throw new CheckSetupError('CANDIDATE_INVALID', `candidate file ${e.path} of root ${root.name} is not a regular file`);
      copyFileSync(src, to, fsc.COPYFILE_FICLONE);
      if (hashFile(to) !== e.sha256) throw new CheckSetupError('CANDIDATE_INVALID', `candidate file ${e.path} of root ${root.name} does not match its recorded hash`);
      chownSync(to, e.uid, e.gid);
      chmodSync(to, e.mode & 0o7777);
    } else {
      symlinkSync(e.target ?? '', to);
      lchownSync(to, e.uid, e.gid);
    }
  }
  const deleted = new Set(delta.deleted);
  const upserted = new Map(delta.upsert.map((e) => [e.path, e.type]));
  const hiddenByAncestor = (p: string): boolean => {
    for (let a = parentOf(p); a !== ''; a = parentOf(a)) {
      const t = upserted.get(a);
      if ((deleted.has(a) && t === undefined) || (t !== undefined && t !== 'dir')) return true;
    }
    return false;
  };
  for (const p of [...delta.deleted].sort(compareBytes)) {
    if (!isCleanRelativePath(p)) throw new CheckSetupError('CANDIDATE_INVALID', `deleted path ${JSON.stringify(p)} is not a clean relative path`);
    // An entry upserted at the same path replaces it (a directory over a base directory merges with it,
    // and that directory's deleted children get their own whiteouts); a whiteout or non-directory above
    // it already hides it.
    if (upserted.has(p) || hiddenByAncestor(p)) continue;
    ensureParents(layerDir, p, attrs, made);
    await run('mknod', [join(layerDir, p), 'c', '0', '0']);
  }
}

/**
 * Copies the bound verifier files of one Root out of `root.primePayload` into `stagingDir` (which must
 * not exist), with PRIME's owners and modes; returns what was staged (Root-qualified paths).
 */
export function stageVerifiers(root: CheckRoot, stagingDir: string): VerifierFile[] {
  mkdirSync(stagingDir, { mode: 0o700 });
  const attrs = candidateDirAttrs(root);
  const made = new Set<string>();
  const staged: VerifierFile[] = [];
  for (const p of [...root.bound].sort(compareBytes)) {
    if (!isCleanRelativePath(p)) throw new CheckSetupError('VERIFIER_STAGING_FAILED', `verifier path ${JSON.stringify(p)} is not a clean relative path`);
    const src = join(root.primePayload, p);
    const st = lstatSync(src, { throwIfNoEntry: false });
    if (!st?.isFile()) throw new CheckSetupError('VERIFIER_STAGING_FAILED', `verifier ${p} is not a regular file in PRIME of root ${root.name}`);
    // Parent directories take the candidate's attributes where it has them, so staging changes no
    // directory the check sees; a directory PRIME has and the candidate does not comes from PRIME.
    ensureParents(stagingDir, p, (d) => {
      try {
        return attrs(d);
      } catch {
        const s = statAttrs(join(root.primePayload, d));
        if (!s) throw new CheckSetupError('VERIFIER_STAGING_FAILED', `directory ${d} is missing in PRIME of root ${root.name}`);
        return s;
      }
    }, made);
    const to = join(stagingDir, p);
    copyFileSync(src, to, fsc.COPYFILE_FICLONE);
    chownSync(to, st.uid, st.gid);
    chmodSync(to, st.mode & 0o7777);
    staged.push({ path: qualifiedVerifierPath(root.name, p), sha256: hashFile(to) });
  }
  return staged;
}

/** Where one Root's view lives under the check's directory. */
export function checkRootLayers(paths: WorldPaths, rootKey: string): CheckRootLayers {
  const l = layerPaths(paths, rootKey);
  return { ...l, stagingDir: join(paths.dir, 'staging', rootKey), stagingMount: join(l.dir, 'staging'), deltaDir: join(paths.dir, 'delta', rootKey), deltaMount: join(l.dir, 'delta') };
}

/** Builds the staging and delta directories of every Root (no mounts yet); returns the staged verifiers. */
export async function prepareCheckLayers(paths: WorldPaths, roots: readonly CheckRoot[], candidateDir: string): Promise<VerifierFile[]> {
  mkdirSync(paths.dir, { recursive: true, mode: 0o711 });
  mkdirSync(join(paths.dir, 'staging'), { mode: 0o700 });
  mkdirSync(join(paths.dir, 'delta'), { mode: 0o700 });
  const staged: VerifierFile[] = [];
  for (const r of roots) {
    const l = checkRootLayers(paths, r.rootKey);
    staged.push(...stageVerifiers(r, l.stagingDir));
    await buildDeltaLayer(r, candidateDir, l.deltaDir);
  }
  return staged;
}

/**
 * Mounts one Root's view (for assembleRootfs's mountRoot): the three idmapped lower layers and the
 * overlay with a scratch upper. The merged root directory takes the candidate's root attributes.
 */
export function mountCheckRoot(roots: readonly CheckRoot[]): (paths: WorldPaths, root: RootMount, usernsFd: number, idBase: number) => LayerPaths {
  return (paths, mount, usernsFd, idBase) => {
    const root = roots.find((r) => r.rootKey === mount.rootKey);
    if (!root) throw new CheckSetupError('CHECK_VIEW_FAILED', `no check root for key ${mount.rootKey}`);
    const l = checkRootLayers(paths, root.rootKey);
    for (const d of [l.lower, l.stagingMount, l.deltaMount, l.upper, l.work, l.merged]) mkdirSync(d, { recursive: true, mode: 0o700 });
    const top = root.delta?.rootAttributes ?? (() => {
      const st = lstatSync(root.basePayload);
      return { mode: st.mode, uid: st.uid, gid: st.gid };
    })();
    chownSync(l.upper, upperTopOwner(top.uid, idBase), upperTopOwner(top.gid, idBase));
    chmodSync(l.upper, top.mode & 0o7777);
    native.mountIdmapped(l.stagingDir, l.stagingMount, usernsFd, { readonly: true, recursive: false });
    native.mountIdmapped(l.deltaDir, l.deltaMount, usernsFd, { readonly: true, recursive: false });
    const lowers = mountLowers(l.lower, root.baseLayers ?? [root.basePayload], usernsFd);
    native.mountOverlay(l.merged, { lower: [l.stagingMount, l.deltaMount, ...lowers], upper: l.upper, work: l.work, extra: OVERLAY_OPTIONS, nosuid: true, nodev: true });
    return l;
  };
}

/**
 * The identity of the verifier bytes the check will actually execute: every file of each Root's
 * mounted staging layer, read through the Root's merged view (what the sandbox sees), Root-qualified.
 */
export function executedVerifierIdentity(paths: WorldPaths, roots: readonly CheckRoot[]): { identity: string; files: VerifierFile[] } {
  const files: VerifierFile[] = [];
  for (const r of roots) {
    const l = checkRootLayers(paths, r.rootKey);
    const walk = (rel: string): void => {
      for (const name of readdirSync(rel === '' ? l.stagingMount : join(l.stagingMount, rel))) {
        const p = rel === '' ? name : `${rel}/${name}`;
        const st = lstatSync(join(l.stagingMount, p));
        if (st.isDirectory()) walk(p);
        else if (st.isFile()) files.push({ path: qualifiedVerifierPath(r.name, p), sha256: hashFile(join(l.merged, p)) });
        else throw new CheckSetupError('VERIFIER_STAGING_FAILED', `staged entry ${p} of root ${r.name} is not a regular file (${readlinkSafe(join(l.stagingMount, p))})`);
      }
    };
    walk('');
  }
  return { identity: verifierIdentity(files), files };
}

function readlinkSafe(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return 'not a link';
  }
}

/** Directory of a Root's merged view (for callers that mount views without a sandbox rootfs). */
export function mergedDirOf(paths: WorldPaths, rootKey: string): string {
  return checkRootLayers(paths, rootKey).merged;
}

/**
 * Mounts every Root's view without a sandbox root filesystem (for inspection and tests): staging and
 * delta directories must have been prepared. Undo with unmountLayers(paths).
 */
export function mountCheckViews(paths: WorldPaths, roots: readonly CheckRoot[], idBase: number, idCount: number): LayerPaths[] {
  const map = [{ inside: 0, outside: idBase, count: idCount }];
  const userns = native.createUserNamespace(map, map);
  try {
    const mountOne = mountCheckRoot(roots);
    return roots.map((r) => mountOne(paths, { rootKey: r.rootKey, payload: r.basePayload, path: r.path }, userns, idBase));
  } finally {
    closeSync(userns);
  }
}
