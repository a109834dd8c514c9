// A candidate rebased onto the generations PRIME holds now (issue 15, the promotion queue): the same
// change — the same deltas and the same stored bytes — measured against a newer base, so a new content
// identity (the identity names each Root's base). Formed only when the rule in core/collapse/rebase.ts
// finds no path where the candidate's change and PRIME's change since the candidate's base meet;
// otherwise refused CONFLICT naming them. The stored bytes are hard links to the original candidate's
// (both are store-owned and never written again); rebase.json records what it was rebased from and onto,
// for the receipt. Checks must run on the rebased candidate: evidence about the original never counts.
import { linkSync, lchownSync, lstatSync, mkdirSync, chmodSync, chownSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { rebase } from '../../core/collapse/rebase.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf } from '../../core/digest.js';
import { Refusal } from '../../core/errors.js';
import type { Manifest } from '../../core/manifest.js';
import { identityOfDeltas, readCandidate, type StoredDelta } from './candidates.js';

/** Where one Root of the candidate is rebased to: PRIME's generation now, and the manifests the rule compares. */
export interface RebaseTarget {
  generation: number;
  digest: string;
  /** The manifest of the candidate's base generation (what its delta was measured against). */
  base: Manifest;
  /** The manifest of `generation` (PRIME now). */
  prime: Manifest;
}

export interface RebasedCandidate {
  digest: string;
  dir: string;
  /** The candidate it was formed from. */
  from: string;
  onto: { root: string; generation: number; digest: string }[];
}

/** How many conflicting paths a refusal names before it counts the rest. */
const NAMED_CONFLICTS = 20;

/** Hard-links a stored payload tree: directories made with their mode and owner, files linked, symlinks re-made. */
function linkTree(from: string, to: string): void {
  const st = lstatSync(from);
  mkdirSync(to, { mode: 0o700 });
  chownSync(to, st.uid, st.gid);
  chmodSync(to, st.mode & 0o7777);
  for (const name of readdirSync(from)) {
    const a = join(from, name);
    const b = join(to, name);
    const e = lstatSync(a);
    if (e.isDirectory()) linkTree(a, b);
    else if (e.isSymbolicLink()) {
      symlinkSync(readlinkSync(a), b);
      lchownSync(b, e.uid, e.gid);
    } else linkSync(a, b);
  }
}

/**
 * Forms the candidate `from` rebased onto `targets` (by root key) in `candidatesDir`, or refuses
 * CONFLICT. A Root whose target is its own base is carried unchanged. Idempotent: the same rebase
 * yields the same digest and directory.
 */
export function storeRebasedCandidate(candidatesDir: string, from: string, targets: ReadonlyMap<string, RebaseTarget>): RebasedCandidate {
  const original = join(candidatesDir, from.slice('sha256:'.length));
  const { deltas } = readCandidate(original);
  const conflicts: string[] = [];
  const next = new Map<string, StoredDelta>();
  for (const [rootKey, d] of deltas) {
    const t = targets.get(rootKey);
    if (!t) throw new Refusal('CANDIDATE_INVALID', `no generation to rebase Root ${d.root} onto`);
    if (t.generation !== d.baseGeneration) {
      const r = rebase(t.base, t.prime, { upsert: d.upsert, deleted: d.deleted, rootAttributes: d.rootAttributes });
      if (r.outcome === 'conflict') conflicts.push(...r.paths.map((p) => `${d.root}/${p}`));
    }
    next.set(rootKey, { ...d, baseGeneration: t.generation, baseDigest: t.digest });
  }
  if (conflicts.length > 0) {
    const named = conflicts.slice(0, NAMED_CONFLICTS).join(', ');
    const more = conflicts.length > NAMED_CONFLICTS ? ` and ${conflicts.length - NAMED_CONFLICTS} more` : '';
    throw new Refusal('CONFLICT', `PRIME changed what the candidate changed since its base: ${named}${more}`);
  }
  const value = identityOfDeltas([...next.values()]);
  const digest = digestOf(value);
  const dir = join(candidatesDir, digest.slice('sha256:'.length));
  const onto = [...next.values()].map((d) => ({ root: d.root, generation: d.baseGeneration, digest: d.baseDigest })).sort((a, b) => (a.root < b.root ? -1 : 1));
  const result = { digest, dir, from, onto };
  if (existsSync(join(dir, 'candidate.json'))) return result;
  // One name, not one per process: what a killed agent left half-written is removed by the next attempt.
  const tmp = `${dir}.rebasing`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, 'roots'), { recursive: true, mode: 0o700 });
  for (const [rootKey, d] of next) {
    const payload = join(original, 'roots', rootKey);
    if (existsSync(payload)) linkTree(payload, join(tmp, 'roots', rootKey));
    writeFileSync(join(tmp, 'roots', `${rootKey}.delta.json`), JSON.stringify(d), { mode: 0o600 });
  }
  writeFileSync(join(tmp, 'rebase.json'), JSON.stringify({ format: 'worldline.rebase/v1', from, onto }), { mode: 0o600 });
  writeFileSync(join(tmp, 'candidate.json'), JSON.stringify(value), { mode: 0o600 });
  renameSync(tmp, dir);
  return result;
}

/** A delta without what a rebase changes (its base), as canonical text: two candidates carry the same change exactly when these agree. */
function changeOf(d: StoredDelta): string {
  return canonicalJson({ root: d.root, upsert: d.upsert, deleted: d.deleted, rootAttributes: d.rootAttributes ?? null });
}

/**
 * Whether the stored candidate `rebased` carries exactly the change of the stored candidate `original`
 * (the same Roots, entries, deletions and root attributes; only the bases differ): the generations it was
 * rebased onto, by root key, or undefined. Read from the deltas both candidates' identities bind, never from
 * rebase.json, so a candidate that merely claims to be a rebase is not one.
 */
export function rebaseOnto(candidatesDir: string, rebased: string, original: string): Map<string, { root: string; generation: number; digest: string }> | undefined {
  let a: ReturnType<typeof readCandidate>;
  let b: ReturnType<typeof readCandidate>;
  try {
    a = readCandidate(join(candidatesDir, rebased.slice('sha256:'.length)));
    b = readCandidate(join(candidatesDir, original.slice('sha256:'.length)));
  } catch {
    return undefined;
  }
  if (a.digest === b.digest || a.deltas.size !== b.deltas.size) return undefined;
  const onto = new Map<string, { root: string; generation: number; digest: string }>();
  for (const [rootKey, d] of a.deltas) {
    const o = b.deltas.get(rootKey);
    if (!o || changeOf(o) !== changeOf(d)) return undefined;
    onto.set(rootKey, { root: d.root, generation: d.baseGeneration, digest: d.baseDigest });
  }
  return onto;
}
