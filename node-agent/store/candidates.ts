// A world's candidate: the changes of every Root, identified by a digest over each Root's base
// generation and its delta, and copied into store-owned storage (so later checks and collapse read
// bytes no world can reach any more). Only the delta is built and stored — never the next manifest,
// which is O(root size): the collapse computes the next generation's manifest (and its digest) when it
// stages it, by applying the delta to the base generation.
import { chmodSync, chownSync, copyFileSync, existsSync, lchownSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Refusal } from '../../core/errors.js';
import { digestOf, isDigest } from '../../core/digest.js';
import { measuredEntry, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import { breather } from './breather.js';
import type { CaptureProblem, LayerDelta } from './layer-delta.js';

export interface RootChange {
  root: string;
  rootKey: string;
  baseGeneration: number;
  baseDigest: string;
  capture: LayerDelta;
  upperDir: string;
}

/** What `roots/<rootKey>.delta.json` holds: the Root's base and its delta, entries in full. */
export interface StoredDelta {
  format: 'worldline.delta/v1';
  root: string;
  baseGeneration: number;
  baseDigest: string;
  /** New or changed entries, in byte order of paths. */
  upsert: ManifestEntry[];
  /** Base paths gone, in byte order. */
  deleted: string[];
  rootAttributes?: RootAttributes;
}

export interface Candidate {
  digest: string;
  dir: string;
  added: number;
  modified: number;
  deleted: number;
  roots: { root: string; rootKey: string; baseGeneration: number; baseDigest: string; added: number; modified: number; deleted: number }[];
}

export class CaptureRefused extends Refusal {
  constructor(readonly problem: CaptureProblem) {
    super(problem.code, problem.message);
    this.name = 'CaptureRefused';
  }
}

/** Files above this size are copied on the thread pool rather than on the event loop. */
const LARGE_FILE = 1 << 20;

/**
 * The identity of a candidate: per Root (sorted by name), its base digest and its delta —
 * `{ root, base, deleted (byte order), upsert (measured entries), rootAttributes when changed }`. The
 * upsert paths are ordered by JavaScript's default sort, as the identity has always been defined.
 */
export function candidateIdentity(changes: readonly RootChange[]): unknown {
  return identityOfDeltas(changes.map((c) => ({ root: c.root, baseDigest: c.baseDigest, upsert: c.capture.upsert, deleted: c.capture.deleted, ...(c.capture.rootChanged ? { rootAttributes: c.capture.rootAttributes } : {}) })));
}

/** The same identity from stored deltas (a rebased candidate's: its deltas on another base). */
export function identityOfDeltas(deltas: readonly Pick<StoredDelta, 'root' | 'baseDigest' | 'upsert' | 'deleted' | 'rootAttributes'>[]): unknown {
  const roots = [...deltas]
    .sort((a, b) => (a.root < b.root ? -1 : a.root > b.root ? 1 : 0))
    .map((d) => {
      const byPath = new Map(d.upsert.map((e) => [e.path, e]));
      const upsert = [...byPath.keys()].sort().map((p) => measuredEntry(byPath.get(p)!));
      return { root: d.root, base: d.baseDigest, deleted: d.deleted, upsert, ...('rootAttributes' in d ? { rootAttributes: d.rootAttributes } : {}) };
    });
  return { format: 'worldline.candidate/v1', roots };
}

/** Builds the candidate in `<candidatesDir>/<hex>`; refuses on the first capture problem. Idempotent. */
export async function storeCandidate(candidatesDir: string, changes: readonly RootChange[]): Promise<Candidate> {
  for (const c of changes) {
    const p = c.capture.problems[0];
    if (p) throw new CaptureRefused(p);
  }
  const breathe = breather(10);
  const value = candidateIdentity(changes);
  const digest = digestOf(value);
  const dir = join(candidatesDir, digest.slice('sha256:'.length));
  const tmp = `${dir}.tmp-${process.pid}`;
  // Synchronous calls for the many small steps (as capture-layer.ts); large files are copied on the
  // thread pool, and the event loop gets a turn between entries.
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { mode: 0o700 });
  for (const c of changes) {
    const d = c.capture;
    const payload = join(tmp, 'roots', c.rootKey);
    mkdirSync(payload, { recursive: true, mode: 0o700 });
    const made = new Set<string>([payload]);
    // Parents sort before their children, so a changed directory exists before what it holds.
    for (const e of [...d.upsert].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      await breathe();
      const to = join(payload, e.path);
      const parent = dirname(to);
      if (!made.has(parent)) {
        mkdirSync(parent, { recursive: true, mode: 0o700 });
        made.add(parent);
      }
      if (e.type === 'dir') {
        mkdirSync(to, { recursive: true });
        made.add(to);
        chmodSync(to, e.mode);
        chownSync(to, e.uid, e.gid);
      } else if (e.type === 'file') {
        const from = join(c.upperDir, e.path);
        if ((e.size ?? 0) > LARGE_FILE) await copyFile(from, to);
        else copyFileSync(from, to);
        chownSync(to, e.uid, e.gid);
        chmodSync(to, e.mode);
      } else {
        symlinkSync(e.target ?? '', to);
        lchownSync(to, e.uid, e.gid);
      }
    }
    const stored: StoredDelta = {
      format: 'worldline.delta/v1',
      root: c.root,
      baseGeneration: c.baseGeneration,
      baseDigest: c.baseDigest,
      upsert: d.upsert,
      deleted: d.deleted,
      ...(d.rootChanged && d.rootAttributes ? { rootAttributes: d.rootAttributes } : {}),
    };
    writeFileSync(join(tmp, 'roots', `${c.rootKey}.delta.json`), JSON.stringify(stored), { mode: 0o600 });
  }
  writeFileSync(join(tmp, 'candidate.json'), JSON.stringify(value), { mode: 0o600 });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  const roots = changes.map((c) => ({
    root: c.root,
    rootKey: c.rootKey,
    baseGeneration: c.baseGeneration,
    baseDigest: c.baseDigest,
    added: c.capture.added,
    modified: c.capture.modified,
    deleted: c.capture.deleted.length,
  }));
  return {
    digest,
    dir,
    added: roots.reduce((n, r) => n + r.added, 0),
    modified: roots.reduce((n, r) => n + r.modified, 0),
    deleted: roots.reduce((n, r) => n + r.deleted, 0),
    roots,
  };
}

/** Reads candidate.json and the Root deltas of a stored candidate, refusing one whose name is not its digest. */
export function readCandidate(candidateDir: string): { digest: string; deltas: Map<string, StoredDelta> } {
  const digest = `sha256:${basename(candidateDir)}`;
  if (!isDigest(digest)) throw new Refusal('CANDIDATE_INVALID', `${candidateDir} is not named by a candidate digest`);
  const value: unknown = JSON.parse(readFileSync(join(candidateDir, 'candidate.json'), 'utf8'));
  if (digestOf(value) !== digest) throw new Refusal('CANDIDATE_INVALID', `candidate.json in ${candidateDir} does not hash to its name`);
  const deltas = new Map<string, StoredDelta>();
  const rootsDir = join(candidateDir, 'roots');
  if (existsSync(rootsDir)) {
    for (const f of readdirSync(rootsDir)) {
      if (!f.endsWith('.delta.json')) continue;
      const d = JSON.parse(readFileSync(join(rootsDir, f), 'utf8')) as StoredDelta;
      if (d.format !== 'worldline.delta/v1') throw new Refusal('CANDIDATE_INVALID', `${f}: unknown delta format`);
      deltas.set(f.slice(0, -'.delta.json'.length), d);
    }
  }
  return { digest, deltas };
}
