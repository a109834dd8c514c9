// Manifests: the measured shape of a directory tree, and the digest that names it.
//
// What the digest measures, per entry: path, type, permission bits (mode & 0o7777, so setuid, setgid and
// sticky count), owner uid and gid, and for files size and SHA-256 of the content, for symlinks the
// target. Ownership IS measured (the predecessor did not): a chown is a change a collapse must carry and
// a check must see, so two trees that differ only in owners have different digests. The root
// directory's own mode and owners are measured too, under `root`, when the walker supplies them.
// Not measured: timestamps, xattrs, hardlink identity (two links to one inode are two file entries).
import { canonicalJson, CanonicalJsonError } from './canonical-json.js';
import { digestOfText } from './digest.js';
import { compareBytes, isCleanRelativePath, parentOf } from './relative-path.js';

export type EntryType = 'file' | 'dir' | 'symlink';

export interface ManifestEntry {
  path: string;
  type: EntryType;
  mode: number;
  uid: number;
  gid: number;
  size?: number;
  sha256?: string;
  target?: string;
}

export interface RootAttributes {
  mode: number;
  uid: number;
  gid: number;
}

export interface Manifest {
  entries: ManifestEntry[];
  root?: RootAttributes;
}

export const MANIFEST_FORMAT = 'worldline.manifest/v1';
export const PERMISSION_MASK = 0o7777;

export function compareEntries(a: ManifestEntry, b: ManifestEntry): number {
  return compareBytes(a.path, b.path);
}

/** A copy of the manifest with entries in byte order of their paths. */
export function sortManifest(m: Manifest): Manifest {
  return { ...m, entries: [...m.entries].sort(compareEntries) };
}

/** The fields of an entry that the digest and the diff measure, and nothing else. */
export function measuredEntry(e: ManifestEntry): Record<string, string | number> {
  const out: Record<string, string | number> = { path: e.path, type: e.type, mode: e.mode & PERMISSION_MASK, uid: e.uid, gid: e.gid };
  if (e.type === 'file') {
    out.size = e.size ?? -1;
    out.sha256 = e.sha256 ?? '';
  } else if (e.type === 'symlink') {
    out.target = e.target ?? '';
  }
  return out;
}

/**
 * canonicalJson(measuredEntry(e)), written directly: the keys of a measured entry are fixed, so their
 * sorted order is too (gid, mode, path, sha256, size, target, type, uid). Half the time of the generic
 * writer (a 100k-entry manifest digests in ~0.2 s instead of ~0.37 s here), which a collapse pays several
 * times over. Equal to it byte for byte, refusals included (same error, same message, numbers checked in
 * the same order), for every entry: property-tested. An entry whose fields are not the types a manifest
 * holds (only reachable past the type system) is left to the generic writer.
 */
export function measuredEntryJson(e: ManifestEntry): string {
  // Stryker: `if (true)` survives as equivalent: every entry to the generic writer gives the same text, only slower.
  if (!plainEntry(e)) return canonicalJson(measuredEntry(e));
  const num = (key: string, v: number): string => {
    if (!Number.isFinite(v)) throw new CanonicalJsonError(`$.${key}`, `non-finite number ${String(v)}`);
    return JSON.stringify(v);
  };
  const gid = num('gid', e.gid);
  let typed: string;
  if (e.type === 'file') {
    const sha256 = JSON.stringify(e.sha256 ?? '');
    typed = `,"sha256":${sha256},"size":${num('size', e.size ?? -1)},"type":"file"`;
  } else if (e.type === 'symlink') {
    typed = `,"target":${JSON.stringify(e.target ?? '')},"type":"symlink"`;
  } else {
    typed = ',"type":"dir"';
  }
  return `{"gid":${gid},"mode":${e.mode & PERMISSION_MASK},"path":${JSON.stringify(e.path)}${typed},"uid":${num('uid', e.uid)}}`;
}

/**
 * True when every field measuredEntryJson writes directly has the type a manifest entry declares (the
 * mode needs no check: both writers mask it into a number).
 * Stryker: the 9 mutants that survive here only send more entries to the generic writer (a condition or
 * a return forced to false, `?? -1` → `?? +1`, `?? ''` → `?? "Stryker was here!"`, both still the type
 * checked): the text is the same, only slower.
 */
function plainEntry(e: ManifestEntry): boolean {
  if (typeof e.path !== 'string' || typeof e.uid !== 'number' || typeof e.gid !== 'number') return false;
  if (e.type === 'file') return typeof (e.size ?? -1) === 'number' && typeof (e.sha256 ?? '') === 'string';
  if (e.type === 'symlink') return typeof (e.target ?? '') === 'string';
  return e.type === 'dir';
}

/**
 * `sha256:` digest of the manifest (which must be valid, see validateManifest): the digest of the
 * canonical JSON of `{ format, root, entries: measured entries }`, produced piece by piece so a 100k-entry
 * manifest is never one string. Equal to manifestDigestValue's digestOf by construction (tested).
 */
export function manifestDigest(m: Manifest): string {
  const value = manifestDigestValue({ root: m.root, entries: [] });
  const tail = canonicalJson(value).slice('{"entries":['.length); // '],"format":…}' (keys sort entries < format < root)
  return digestOfText(manifestDigestParts(m.entries, tail));
}

function* manifestDigestParts(entries: readonly ManifestEntry[], tail: string): Generator<string | Buffer> {
  yield '{"entries":[';
  let start = 0;
  while (start < entries.length) {
    if (start > 0) yield ',';
    // A kept chunk that ended by the rule (not at its manifest's end) ends here too: the same entries from
    // the same first one meet the same path, or MAX_CHUNK, at the same place; no path of it is looked at
    // again. (Any split hashes the same bytes; keeping to the rule's split keeps the chunks reusable.)
    const kept = keptChunk(entries, start);
    if (kept?.closed === true) {
      yield kept.bytes;
      start += kept.entries.length;
      continue;
    }
    let end = start + 1;
    while (end < entries.length && end - start < MAX_CHUNK && !endsChunk(entries[end - 1]!.path)) end++;
    yield chunkText(entries, start, end, kept);
    start = end;
  }
  yield tail;
}

/**
 * The digest's text is written in chunks that end after an entry whose path hashes to 0 mod 64 (and at
 * MAX_CHUNK entries at most), so where a chunk ends depends on the paths, not on positions: a manifest
 * made from another by a small delta has the same chunks except around the change. A chunk of frozen
 * entries keeps its UTF-8 text, keyed by its first entry and valid only for the very same entry objects
 * in the same order; a collapse at 100k entries then hashes ~19 MB of kept text instead of writing it.
 * The bytes hashed are the same whatever the chunks (property-tested against the canonical value).
 * Chunks average ~64 entries: a touched entry sits in a chunk of ~128 on average (a larger chunk is more
 * likely to hold it), which is what a collapse writes again per touched path. At 256 that was ~512, and
 * a 10-path collapse at 100k entries spent ~23 ms in the digest instead of ~15.
 */
const MAX_CHUNK = 2048;
interface ChunkText {
  entries: readonly ManifestEntry[];
  bytes: Buffer;
  /** It ended by the rule (endsChunk of its last path, or MAX_CHUNK entries), not at the end of its manifest. */
  closed: boolean;
}
const chunkTexts = new WeakMap<ManifestEntry, ChunkText>();

function endsChunk(path: string): boolean {
  // FNV-1a over the last 16 UTF-16 units and the length: cheap, and spread enough over generated names.
  let h = 0x811c9dc5 ^ path.length;
  for (let k = Math.max(0, path.length - 16); k < path.length; k++) h = Math.imul(h ^ path.charCodeAt(k), 0x01000193);
  return ((h ^ (h >>> 16)) & 0x3f) === 0;
}

/** The chunk kept for entries[from] when `entries` holds its very entries from there on. */
function keptChunk(entries: readonly ManifestEntry[], from: number): ChunkText | undefined {
  const kept = chunkTexts.get(entries[from]!);
  if (!kept || from + kept.entries.length > entries.length) return undefined;
  for (let k = 0; k < kept.entries.length; k++) if (kept.entries[k] !== entries[from + k]) return undefined;
  return kept;
}

function chunkText(entries: readonly ManifestEntry[], from: number, to: number, kept: ChunkText | undefined): string | Buffer {
  if (kept && kept.entries.length === to - from) return kept.bytes;
  const chunk = entries.slice(from, to);
  const text = chunk.map(measuredEntryJson).join(',');
  if (!chunk.every((e) => Object.isFrozen(e))) return text;
  const bytes = Buffer.from(text, 'utf8');
  chunkTexts.set(entries[from]!, { entries: chunk, bytes, closed: to - from === MAX_CHUNK || endsChunk(entries[to - 1]!.path) });
  return bytes;
}

/** The value whose canonical JSON manifestDigest hashes. */
export function manifestDigestValue(m: Manifest): { format: string; root?: RootAttributes; entries: Record<string, string | number>[] } {
  const root = m.root ? { mode: m.root.mode & PERMISSION_MASK, uid: m.root.uid, gid: m.root.gid } : undefined;
  return { format: MANIFEST_FORMAT, root, entries: m.entries.map(measuredEntry) };
}

export interface ManifestDiff {
  added: string[];
  modified: string[];
  deleted: string[];
}

/** True when two root attributes are both absent, or both present with the same mode, uid and gid. */
export function sameRootAttributes(a: RootAttributes | undefined, b: RootAttributes | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.mode === b.mode && a.uid === b.uid && a.gid === b.gid;
}

/** True when every measured field of the two entries is equal (what diffManifests calls unmodified). */
export function sameEntry(a: ManifestEntry, b: ManifestEntry): boolean {
  const x = measuredEntry(a);
  const y = measuredEntry(b);
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) if (x[k] !== y[k]) return false;
  return true;
}

/** Paths added, modified (any measured field, including a type change) and deleted, each in byte order. */
export function diffManifests(base: Manifest, next: Manifest): ManifestDiff {
  const diff: ManifestDiff = { added: [], modified: [], deleted: [] };
  const a = base.entries;
  const b = next.entries;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    const order = x === undefined ? 1 : y === undefined ? -1 : compareEntries(x, y);
    if (order < 0) {
      diff.deleted.push(x!.path);
      i++;
    } else if (order > 0) {
      diff.added.push(y!.path);
      j++;
    } else {
      if (!sameEntry(x!, y!)) diff.modified.push(x!.path);
      i++;
      j++;
    }
  }
  return diff;
}

/** A change to a manifest: entries put (new or replacing the entry of their path), paths removed. */
export interface ManifestDelta {
  upsert: readonly ManifestEntry[];
  deleted: readonly string[];
  /** The next root attributes, when they change. */
  rootAttributes?: RootAttributes;
}

/** The index of the first of `entries` (in byte order of paths) at or after `from` whose path is >= `key`. */
export function firstAtOrAfter(entries: readonly { readonly path: string }[], key: string, from = 0): number {
  let lo = from;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(entries[mid]!.path, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The manifest `delta` makes of `base`: its deleted paths removed, then its entries put (a later upsert
 * of a path wins). When the base is in strict byte order, as a recorded manifest is (checked, or known
 * from validateManifest), the untouched runs are copied between the touched paths; any other base takes
 * the general path (applyDeltaBySorting), which gives the same result.
 */
export function applyDelta(base: Manifest, delta: ManifestDelta): Manifest {
  return applied(base, delta, false);
}

/**
 * freezeManifest(applyDelta(base, delta)), in one pass when `base` is deep-frozen: its entries are shared
 * as they are (already frozen), only the delta's own entries are copied and frozen, and no entry is
 * looked at again to learn that the result is deep-frozen. At 100k entries that second look cost about
 * as much as the application itself.
 */
export function applyDeltaFrozen(base: Manifest, delta: ManifestDelta): Manifest {
  return isDeepFrozen(base) ? applied(base, delta, true) : freezeManifest(applyDelta(base, delta));
}

function applied(base: Manifest, delta: ManifestDelta, freeze: boolean): Manifest {
  const b = base.entries;
  if (!knownValid.has(base)) for (let i = 1; i < b.length; i++) if (compareEntries(b[i - 1]!, b[i]!) >= 0) return applyDeltaBySorting(base, delta);
  const put = new Map<string, ManifestEntry>();
  for (const e of delta.upsert) put.set(e.path, e);
  const touched = [...new Set([...delta.deleted, ...put.keys()])].sort(compareBytes);
  // Runs of untouched base entries are copied between the touched paths, each found by binary search, into
  // one array of the largest size the result can have (a copy loop: slicing a frozen array and joining
  // the slices took three times as long).
  const entries: ManifestEntry[] = new Array<ManifestEntry>(b.length + put.size);
  let n = 0;
  let i = 0;
  for (const path of touched) {
    const hi = firstAtOrAfter(b, path, i);
    while (i < hi) entries[n++] = b[i++]!;
    if (i < b.length && b[i]!.path === path) i++; // replaced or deleted
    const e = put.get(path);
    if (e) entries[n++] = freeze ? frozenCopy(e) : e;
  }
  while (i < b.length) entries[n++] = b[i++]!;
  entries.length = n;
  const root = delta.rootAttributes ?? base.root;
  return freeze ? frozenManifest(entries, root) : { entries, ...(root ? { root } : {}) };
}

/** applyDelta for any base: every entry into a map, the delta applied, sorted again (O(N log N)). */
export function applyDeltaBySorting(base: Manifest, delta: ManifestDelta): Manifest {
  const entries = new Map(base.entries.map((e) => [e.path, e]));
  for (const p of delta.deleted) entries.delete(p);
  for (const e of delta.upsert) entries.set(e.path, e);
  const root = delta.rootAttributes ?? base.root;
  return { entries: [...entries.values()].sort(compareEntries), ...(root ? { root } : {}) };
}

export interface ManifestProblem {
  code: 'MANIFEST_PATH_INVALID' | 'MANIFEST_UNSORTED' | 'MANIFEST_DUPLICATE' | 'MANIFEST_PARENT_MISSING' | 'MANIFEST_ENTRY_INVALID';
  path: string;
  message: string;
}

/**
 * Manifests found valid that cannot change: frozen, their entries array and every entry too. validateManifest
 * answers for them at once, and validateApplied can check only the change made to one.
 */
const knownValid = new WeakSet<Manifest>();

/** Manifests found deep-frozen (what is frozen stays frozen): each is looked through once. */
const deepFrozen = new WeakSet<Manifest>();

/** True when `m`, its entries array, its root attributes and every entry are frozen: nothing of it can change. */
export function isDeepFrozen(m: Manifest): boolean {
  if (deepFrozen.has(m)) return true;
  const frozen = Object.isFrozen(m) && Object.isFrozen(m.entries) && (m.root === undefined || Object.isFrozen(m.root)) && m.entries.every((e) => Object.isFrozen(e));
  if (frozen) deepFrozen.add(m);
  return frozen;
}

/** `m` frozen, entries and root included (entries already frozen are shared, not copied), and known to be. */
export function freezeManifest(m: Manifest): Manifest {
  return isDeepFrozen(m) ? m : frozenManifest(m.entries.map(frozenCopy), m.root);
}

/** `x` when frozen, else a frozen shallow copy (the caller's object is never frozen in its hands). */
function frozenCopy<T extends object>(x: T): T {
  return Object.isFrozen(x) ? x : Object.freeze({ ...x });
}

/** The manifest of `entries` (frozen entries, in a new array it takes over) and `root`, frozen and known to be. */
function frozenManifest(entries: ManifestEntry[], root: RootAttributes | undefined): Manifest {
  const frozen: Manifest = Object.freeze({ entries: Object.freeze(entries) as Manifest['entries'], ...(root ? { root: frozenCopy(root) } : {}) });
  deepFrozen.add(frozen);
  return frozen;
}

/**
 * The problems of `next`, which must be applyDelta(base, delta). When `base` is a known-valid (frozen,
 * validated) manifest, only what the delta touches can be wrong, and that alone is checked: each put
 * entry's path, shape and parent, and no entry left below a path that stopped being a directory. Any
 * doubt goes to validateManifest(next), so the answer is always validateManifest's (property-tested).
 */
export function validateApplied(base: Manifest, delta: ManifestDelta, next: Manifest): ManifestProblem[] {
  if (!knownValid.has(base) || !appliedLooksValid(delta, next)) return validateManifest(next);
  if (isDeepFrozen(next)) knownValid.add(next);
  return [];
}

/** True only when `next` is valid, given `base` valid and next = applyDelta(base, delta). */
function appliedLooksValid(delta: ManifestDelta, next: Manifest): boolean {
  const entries = next.entries;
  const at = (path: string): ManifestEntry | undefined => {
    const e = entries[firstAtOrAfter(entries, path)];
    return e && e.path === path ? e : undefined;
  };
  const hasChildren = (dir: string): boolean => {
    const e = entries[firstAtOrAfter(entries, `${dir}/`)];
    return e !== undefined && e.path.startsWith(`${dir}/`);
  };
  for (const { path } of delta.upsert) {
    const e = at(path); // the entry next holds (the last upsert of the path, possibly a frozen copy)
    if (!e || !isCleanRelativePath(e.path) || entryShapeProblem(e) !== null) return false;
    const parent = parentOf(e.path);
    if (parent !== '' && at(parent)?.type !== 'dir') return false;
    if (e.type !== 'dir' && hasChildren(e.path)) return false;
  }
  for (const p of delta.deleted) if (at(p) === undefined && hasChildren(p)) return false;
  return true;
}

/** Every problem of a manifest (empty when valid): clean paths, strict byte order, parents present as dirs. */
export function validateManifest(m: Manifest): ManifestProblem[] {
  if (knownValid.has(m)) return [];
  const problems = manifestProblems(m);
  if (problems.length === 0 && isDeepFrozen(m)) knownValid.add(m);
  return problems;
}

function manifestProblems(m: Manifest): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const dirs = new Set<string>();
  let previous: string | undefined;
  for (const e of m.entries) {
    if (!isCleanRelativePath(e.path)) {
      problems.push({ code: 'MANIFEST_PATH_INVALID', path: e.path, message: 'path must be relative, /-separated, without ., .. or empty segments' });
      continue;
    }
    if (previous !== undefined) {
      const order = compareBytes(previous, e.path);
      if (order === 0) problems.push({ code: 'MANIFEST_DUPLICATE', path: e.path, message: 'path appears twice' });
      // Stryker: `order >= 0` survives as equivalent; order 0 (a duplicate) is taken by the branch above.
      else if (order > 0) problems.push({ code: 'MANIFEST_UNSORTED', path: e.path, message: `sorts before ${previous}` });
    }
    previous = e.path;
    const parent = parentOf(e.path);
    if (parent !== '' && !dirs.has(parent)) {
      problems.push({ code: 'MANIFEST_PARENT_MISSING', path: e.path, message: `parent ${parent} is not a directory entry before it` });
    }
    const entryProblem = entryShapeProblem(e);
    if (entryProblem) problems.push({ code: 'MANIFEST_ENTRY_INVALID', path: e.path, message: entryProblem });
    if (e.type === 'dir') dirs.add(e.path);
  }
  return problems;
}

function isId(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= 0xffffffff;
}

function entryShapeProblem(e: ManifestEntry): string | null {
  // A range check, not a bitwise one: bitwise operators see only the low 32 bits (2**32 + 0o644 would pass them).
  if (!Number.isInteger(e.mode) || e.mode < 0 || e.mode > PERMISSION_MASK) return 'mode must hold permission bits only';
  if (!isId(e.uid) || !isId(e.gid)) return 'uid and gid must be 32-bit unsigned integers';
  switch (e.type) {
    case 'file':
      if (e.size === undefined || !Number.isSafeInteger(e.size) || e.size < 0) return 'file needs a size';
      if (e.sha256 === undefined || !/^[0-9a-f]{64}$/.test(e.sha256)) return 'file needs a sha256';
      if (e.target !== undefined) return 'file has a target';
      return null;
    case 'symlink':
      if (e.target === undefined) return 'symlink needs a target';
      if (e.sha256 !== undefined || e.size !== undefined) return 'symlink has content fields';
      return null;
    case 'dir':
      if (e.sha256 !== undefined || e.size !== undefined || e.target !== undefined) return 'dir has file or symlink fields';
      return null;
    default:
      return 'unknown type';
  }
}
