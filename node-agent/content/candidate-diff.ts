// A candidate's change against its base, as a reviewer reads it: a unified diff for text files, one line
// for a binary or too-large file, mode and owner changes, deletions, and directories and symlinks by what
// they are; renames show as a deletion and an addition. Built from the stored candidate (its delta and
// payload) and the base generation's payload, read beneath their store directories without following a
// link. Output is bounded: past the limit the rest is named, never silently dropped.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { structuredPatch } from 'diff';
import { sha256Hex } from '../../core/digest.js';
import type { ManifestEntry } from '../../core/manifest.js';
import { compareBytes } from '../../core/relative-path.js';
import { closeFd, openBeneath } from '../../native/index.js';
import type { StoredDelta } from '../store/candidates.js';
import { changedPaths } from '../store/change-summary.js';

export type DiffFormat = 'patch' | 'stat' | 'name-only';

export interface DiffLimits {
  /** Bytes of output at most; past it the remaining paths are counted and named as left out. */
  maxOutputBytes: number;
  /** A file larger than this (either side) is shown by size, not by lines. */
  maxFileBytes: number;
  /** Edits at most per file before the line diff gives up (Myers is O(N·D)); such a file is shown by size. */
  maxEditLength: number;
}

export const DEFAULT_DIFF_LIMITS: DiffLimits = { maxOutputBytes: 4 << 20, maxFileBytes: 1 << 20, maxEditLength: 20_000 };

/** One Root of a candidate: its stored delta, where its new bytes are, and its base. */
export interface DiffSource {
  root: string;
  delta: StoredDelta;
  /** The candidate's payload directory for this Root (roots/<rootKey>). */
  candidatePayload: string;
  /** The base generation's payload directory; undefined when this store no longer holds it. */
  basePayload: string | undefined;
  /** The base generation's entry at a path. */
  baseEntry: (path: string) => ManifestEntry | undefined;
}

export interface DiffResult {
  text: string;
  /** Paths changed in all (every Root). */
  paths: number;
  /** True when the output limit left paths out (the text ends by saying how many). */
  truncated: boolean;
}

interface PathDiff {
  name: string;
  was: ManifestEntry | undefined;
  now: ManifestEntry | undefined;
}

/** File content as the diff sees it: text, binary, too large, or unreadable (with why). */
type Content =
  | { kind: 'none' }
  | { kind: 'bytes'; bytes: Buffer; binary: boolean }
  | { kind: 'large'; size: number }
  | { kind: 'unavailable'; why: string };

function gitMode(e: ManifestEntry): string {
  const type = e.type === 'dir' ? 0o040000 : e.type === 'symlink' ? 0o120000 : 0o100000;
  return (type | (e.mode & 0o7777)).toString(8).padStart(6, '0');
}

/** Reads a regular file beneath `dir` (never through a link), up to limit + 1 bytes. */
function readBeneath(dir: string, path: string, limit: number): Content {
  let dirFd: number | undefined;
  let fd: number | undefined;
  try {
    dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fd = openBeneath(dirFd, path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: 'unavailable', why: 'not a regular file in the store' };
    if (st.size > limit) return { kind: 'large', size: st.size };
    const bytes = Buffer.alloc(st.size);
    let off = 0;
    while (off < bytes.length) {
      const n = readSync(fd, bytes, off, bytes.length - off, off);
      if (n === 0) break;
      off += n;
    }
    const b = bytes.subarray(0, off);
    // git's rule: a NUL in the first 8000 bytes makes a file binary.
    return { kind: 'bytes', bytes: b, binary: b.subarray(0, 8000).includes(0) };
  } catch (err) {
    return { kind: 'unavailable', why: (err as NodeJS.ErrnoException).code ?? String(err) };
  } finally {
    if (fd !== undefined) closeFd(fd);
    if (dirFd !== undefined) closeSync(dirFd);
  }
}

function fileContent(dir: string | undefined, e: ManifestEntry | undefined, limit: number, side: 'base' | 'candidate'): Content {
  if (!e || e.type !== 'file') return { kind: 'none' };
  if (dir === undefined) return { kind: 'unavailable', why: `the ${side} generation is no longer in this store` };
  const c = readBeneath(dir, e.path, limit);
  // The base generation shares unchanged files with PRIME by hard link, so a write made in place since
  // could have changed them: bytes that no longer hash to the base manifest are not the base.
  if (side === 'base' && c.kind === 'bytes' && e.sha256 && sha256Hex(c.bytes) !== e.sha256) {
    return { kind: 'unavailable', why: 'the base file changed since the candidate was forked (its bytes no longer match the base manifest)' };
  }
  return c;
}

function asLines(c: Content): string | undefined {
  return c.kind === 'bytes' && !c.binary ? c.bytes.toString('utf8') : c.kind === 'none' ? '' : undefined;
}

/** The headers git would print for a path, plus owner lines (git has none; a candidate can change owners). */
function headers(p: PathDiff): string[] {
  const { was, now } = p;
  const out = [`diff --worldline a/${p.name} b/${p.name}`];
  if (!was && now) out.push(`new ${now.type === 'dir' ? 'directory' : 'file'} mode ${gitMode(now)}`);
  else if (was && !now) out.push(`deleted ${was.type === 'dir' ? 'directory' : 'file'} mode ${gitMode(was)}`);
  else if (was && now) {
    if (gitMode(was) !== gitMode(now)) out.push(`old mode ${gitMode(was)}`, `new mode ${gitMode(now)}`);
    if (was.uid !== now.uid || was.gid !== now.gid) out.push(`old owner ${was.uid}:${was.gid}`, `new owner ${now.uid}:${now.gid}`);
  }
  return out;
}

function describe(c: Content): string {
  return c.kind === 'large' ? `${c.size} bytes` : c.kind === 'bytes' ? `${c.bytes.length} bytes` : c.kind === 'unavailable' ? `unavailable: ${c.why}` : 'none';
}

/** The body of one path's diff: hunks, or one line saying why there are none. Counts lines added and removed. */
function body(p: PathDiff, src: DiffSource, limits: DiffLimits): { lines: string[]; added: number; removed: number; note?: string } {
  const { was, now } = p;
  const oldText = was?.type === 'symlink' ? `${was.target ?? ''}\n` : undefined;
  const newText = now?.type === 'symlink' ? `${now.target ?? ''}\n` : undefined;
  const oldC: Content = oldText !== undefined ? { kind: 'bytes', bytes: Buffer.from(oldText), binary: false } : fileContent(src.basePayload, was, limits.maxFileBytes, 'base');
  const newC: Content = newText !== undefined ? { kind: 'bytes', bytes: Buffer.from(newText), binary: false } : fileContent(src.candidatePayload, now, limits.maxFileBytes, 'candidate');
  if (oldC.kind === 'none' && newC.kind === 'none') return { lines: [], added: 0, removed: 0 };
  const a = asLines(oldC);
  const b = asLines(newC);
  const sides = `${was ? `a/${p.name}` : '/dev/null'} and ${now ? `b/${p.name}` : '/dev/null'}`;
  if (a === undefined || b === undefined) {
    const binary = (oldC.kind === 'bytes' && oldC.binary) || (newC.kind === 'bytes' && newC.binary);
    const why = binary ? 'Binary files' : oldC.kind === 'large' || newC.kind === 'large' ? 'Files too large to diff' : 'Files not diffable';
    const note = `${why}: ${sides} differ (${describe(oldC)} -> ${describe(newC)})`;
    return { lines: [note], added: 0, removed: 0, note: binary ? 'Bin' : 'Large' };
  }
  if (a === b) return { lines: [], added: 0, removed: 0 };
  const patch = structuredPatch(`a/${p.name}`, `b/${p.name}`, a, b, undefined, undefined, { context: 3, maxEditLength: limits.maxEditLength });
  if (!patch) {
    return { lines: [`Files too different to diff line by line: ${sides} (${describe(oldC)} -> ${describe(newC)})`], added: 0, removed: 0, note: 'Large' };
  }
  const lines = [`--- ${was && oldC.kind !== 'none' ? `a/${p.name}` : '/dev/null'}`, `+++ ${now && newC.kind !== 'none' ? `b/${p.name}` : '/dev/null'}`];
  let added = 0;
  let removed = 0;
  for (const h of patch.hunks) {
    lines.push(`@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@`);
    for (const l of h.lines) {
      if (l.startsWith('+')) added++;
      else if (l.startsWith('-')) removed++;
      lines.push(l);
    }
  }
  return { lines, added, removed };
}

/** A hunk's range as git writes it: an empty range starts at the line before it, a count of 1 is left out. */
function range(start: number, count: number): string {
  if (count === 0) return `${start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}

/** Every changed path of one Root, in byte order: the delta's upserts merged with its deletions. */
function pathsOf(src: DiffSource): PathDiff[] {
  const { paths, upserted } = changedPaths(src.delta.upsert, src.delta.deleted);
  return paths.map((path) => ({ name: `${src.root}/${path}`, was: src.baseEntry(path), now: upserted.get(path) }));
}

/**
 * A type change (a file that became a directory, say) is two changes, as git shows it: the old entry
 * deleted and the new one added.
 */
function split(p: PathDiff): PathDiff[] {
  if (p.was && p.now && p.was.type !== p.now.type) return [{ ...p, now: undefined }, { ...p, was: undefined }];
  return [p];
}

/** The candidate's change in the format asked for, bounded by `limits.maxOutputBytes`. */
export function renderDiff(sources: readonly DiffSource[], format: DiffFormat, limits: DiffLimits = DEFAULT_DIFF_LIMITS): DiffResult {
  const ordered = [...sources].sort((x, y) => compareBytes(x.root, y.root));
  const all = ordered.flatMap((src) => pathsOf(src).map((p) => ({ p, src })));
  const out: string[] = [];
  let bytes = 0;
  let shown = 0;
  let truncated = false;
  let files = 0;
  let insertions = 0;
  let deletions = 0;
  const stat: { name: string; text: string; index: number }[] = [];
  for (const [index, { p, src }] of all.entries()) {
    const piece: string[] = [];
    for (const part of split(p)) {
      if (format === 'name-only') break;
      const b = body(part, src, limits);
      if (format === 'patch') piece.push(...headers(part), ...b.lines);
      else {
        const bar = `${'+'.repeat(Math.min(b.added, 40))}${'-'.repeat(Math.min(b.removed, 40))}`;
        const what = b.note === 'Bin' ? 'Bin' : b.note === 'Large' ? 'Large' : `${b.added + b.removed}${bar ? ` ${bar}` : ''}`;
        const kind = part.now?.type === 'dir' || part.was?.type === 'dir' ? `${part.now ? (part.was ? 'dir changed' : 'dir added') : 'dir deleted'}` : what;
        stat.push({ name: part.name, text: kind, index });
        insertions += b.added;
        deletions += b.removed;
      }
    }
    if (format === 'name-only') piece.push(p.name);
    if (format === 'stat') {
      files++;
      continue;
    }
    const text = piece.join('\n') + '\n';
    if (bytes + Buffer.byteLength(text) > limits.maxOutputBytes) {
      truncated = true;
      break;
    }
    out.push(text);
    bytes += Buffer.byteLength(text);
    shown++;
  }
  if (format === 'stat') {
    const width = Math.max(0, ...stat.map((s) => s.name.length));
    for (const s of stat) {
      const line = ` ${s.name.padEnd(width)} | ${s.text}\n`;
      if (bytes + Buffer.byteLength(line) > limits.maxOutputBytes) {
        truncated = true;
        shown = s.index;
        break;
      }
      out.push(line);
      bytes += Buffer.byteLength(line);
    }
    out.push(` ${files} path${files === 1 ? '' : 's'} changed, ${insertions} insertion${insertions === 1 ? '' : 's'}(+), ${deletions} deletion${deletions === 1 ? '' : 's'}(-)\n`);
  }
  if (truncated) out.push(`... truncated: ${all.length - shown} of ${all.length} changed paths not shown (output limit ${limits.maxOutputBytes} bytes)\n`);
  return { text: out.join(''), paths: all.length, truncated };
}
