// A world's candidate: the changes of every Root, identified by a digest over each Root's base
// generation and its delta, and copied into store-owned storage (so later checks and collapse read
// bytes no world can reach any more).
import { chown, copyFile, lchown, mkdir, rename, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { digestOf } from '../../core/digest.js';
import { diffManifests, manifestDigest, measuredEntry, type Manifest, type ManifestDiff } from '../../core/manifest.js';
import type { CaptureProblem, LayerCapture } from './capture-layer.js';

export interface RootChange {
  root: string;
  rootKey: string;
  baseGeneration: number;
  baseDigest: string;
  base: Manifest;
  capture: LayerCapture;
  upperDir: string;
}

export interface Candidate {
  digest: string;
  dir: string;
  added: number;
  modified: number;
  deleted: number;
  roots: { root: string; baseDigest: string; nextDigest: string; diff: ManifestDiff }[];
}

export class CaptureRefused extends Error {
  constructor(readonly problem: CaptureProblem) {
    super(problem.message);
    this.name = 'CaptureRefused';
  }
}

/** The identity of a candidate: per Root (sorted by name), its base digest and its delta. */
export function candidateIdentity(changes: readonly RootChange[]): { value: unknown; diffs: Map<string, ManifestDiff> } {
  const diffs = new Map<string, ManifestDiff>();
  const roots = [...changes]
    .sort((a, b) => (a.root < b.root ? -1 : a.root > b.root ? 1 : 0))
    .map((c) => {
      const diff = diffManifests(c.base, c.capture.next);
      diffs.set(c.root, diff);
      const byPath = new Map(c.capture.next.entries.map((e) => [e.path, e]));
      const upsert = [...diff.added, ...diff.modified].sort().map((p) => measuredEntry(byPath.get(p)!));
      const rootChanged = JSON.stringify(c.base.root ?? null) !== JSON.stringify(c.capture.next.root ?? null);
      return { root: c.root, base: c.baseDigest, deleted: diff.deleted, upsert, ...(rootChanged ? { rootAttributes: c.capture.next.root } : {}) };
    });
  return { value: { format: 'worldline.candidate/v1', roots }, diffs };
}

/** Builds the candidate in `<candidatesDir>/<hex>`; refuses on the first capture problem. Idempotent. */
export async function storeCandidate(candidatesDir: string, changes: readonly RootChange[]): Promise<Candidate> {
  for (const c of changes) {
    const p = c.capture.problems[0];
    if (p) throw new CaptureRefused(p);
  }
  const { value, diffs } = candidateIdentity(changes);
  const digest = digestOf(value);
  const dir = join(candidatesDir, digest.slice('sha256:'.length));
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { mode: 0o700 });
  for (const c of changes) {
    const diff = diffs.get(c.root)!;
    const changed = new Set([...diff.added, ...diff.modified]);
    const byPath = new Map(c.capture.next.entries.map((e) => [e.path, e]));
    const payload = join(tmp, 'roots', c.rootKey);
    await mkdir(payload, { recursive: true, mode: 0o700 });
    for (const path of [...changed].sort()) {
      const e = byPath.get(path)!;
      const to = join(payload, path);
      await mkdir(dirname(to), { recursive: true, mode: 0o700 });
      if (e.type === 'dir') {
        await mkdir(to, { recursive: true });
        await chmod(to, e.mode);
        await chown(to, e.uid, e.gid);
      } else if (e.type === 'file') {
        await copyFile(join(c.upperDir, path), to);
        await chown(to, e.uid, e.gid);
        await chmod(to, e.mode);
      } else {
        await symlink(e.target ?? '', to);
        await lchown(to, e.uid, e.gid);
      }
    }
    await writeFile(join(tmp, 'roots', `${c.rootKey}.manifest.json`), JSON.stringify(c.capture.next), { mode: 0o600 });
  }
  await writeFile(join(tmp, 'candidate.json'), JSON.stringify(value), { mode: 0o600 });
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  let added = 0;
  let modified = 0;
  let deleted = 0;
  for (const d of diffs.values()) {
    added += d.added.length;
    modified += d.modified.length;
    deleted += d.deleted.length;
  }
  return {
    digest,
    dir,
    added,
    modified,
    deleted,
    roots: changes.map((c) => ({ root: c.root, baseDigest: c.baseDigest, nextDigest: manifestDigest(c.capture.next), diff: diffs.get(c.root)! })),
  };
}
