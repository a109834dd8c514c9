// A world's candidate: the changes of every Root, identified by a digest over each Root's base
// generation and its delta, and copied into store-owned storage (so later checks and collapse read
// bytes no world can reach any more). Only the delta is built and stored — never the next manifest,
// which is O(root size): the collapse computes the next generation's manifest (and its digest) when it
// stages it, by applying the delta to the base generation.
import { chown, copyFile, lchown, mkdir, rename, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { digestOf } from '../../core/digest.js';
import { measuredEntry, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import type { CaptureProblem, LayerDelta } from './capture-layer.js';

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

export class CaptureRefused extends Error {
  constructor(readonly problem: CaptureProblem) {
    super(problem.message);
    this.name = 'CaptureRefused';
  }
}

const byName = (a: RootChange, b: RootChange): number => (a.root < b.root ? -1 : a.root > b.root ? 1 : 0);

/**
 * The identity of a candidate: per Root (sorted by name), its base digest and its delta —
 * `{ root, base, deleted (byte order), upsert (measured entries), rootAttributes when changed }`. The
 * upsert paths are ordered by JavaScript's default sort, as the identity has always been defined.
 */
export function candidateIdentity(changes: readonly RootChange[]): unknown {
  const roots = [...changes].sort(byName).map((c) => {
    const d = c.capture;
    const byPath = new Map(d.upsert.map((e) => [e.path, e]));
    const upsert = [...byPath.keys()].sort().map((p) => measuredEntry(byPath.get(p)!));
    return { root: c.root, base: c.baseDigest, deleted: d.deleted, upsert, ...(d.rootChanged ? { rootAttributes: d.rootAttributes } : {}) };
  });
  return { format: 'worldline.candidate/v1', roots };
}

/** Builds the candidate in `<candidatesDir>/<hex>`; refuses on the first capture problem. Idempotent. */
export async function storeCandidate(candidatesDir: string, changes: readonly RootChange[]): Promise<Candidate> {
  for (const c of changes) {
    const p = c.capture.problems[0];
    if (p) throw new CaptureRefused(p);
  }
  const value = candidateIdentity(changes);
  const digest = digestOf(value);
  const dir = join(candidatesDir, digest.slice('sha256:'.length));
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { mode: 0o700 });
  for (const c of changes) {
    const d = c.capture;
    const payload = join(tmp, 'roots', c.rootKey);
    await mkdir(payload, { recursive: true, mode: 0o700 });
    const made = new Set<string>(['']);
    const parentOf = async (to: string): Promise<void> => {
      const parent = dirname(to);
      if (made.has(parent)) return;
      await mkdir(parent, { recursive: true, mode: 0o700 });
      made.add(parent);
    };
    made.add(payload);
    // Parents sort before their children, so a changed directory exists before what it holds.
    for (const e of [...d.upsert].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      const to = join(payload, e.path);
      await parentOf(to);
      if (e.type === 'dir') {
        await mkdir(to, { recursive: true });
        made.add(to);
        await chmod(to, e.mode);
        await chown(to, e.uid, e.gid);
      } else if (e.type === 'file') {
        await copyFile(join(c.upperDir, e.path), to);
        await chown(to, e.uid, e.gid);
        await chmod(to, e.mode);
      } else {
        await symlink(e.target ?? '', to);
        await lchown(to, e.uid, e.gid);
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
    await writeFile(join(tmp, 'roots', `${c.rootKey}.delta.json`), JSON.stringify(stored), { mode: 0o600 });
  }
  await writeFile(join(tmp, 'candidate.json'), JSON.stringify(value), { mode: 0o600 });
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
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
