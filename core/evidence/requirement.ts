// The requirement a candidate's evidence is bound to, and the verifier files a check binds. Pure: no I/O.
//
// requirementHash names everything a check result depends on besides the candidate itself: the checks
// (in policy order, with their commands, verifier globs, timeouts, profiles, a private check's report
// format and forwarded env names),
// the identity of the verifier bytes (staged from PRIME), the engine version and the execution
// configuration (no network, the isolation rules). Evidence produced under another requirement is stale.
import { compareBytes, isCleanRelativePath } from '../relative-path.js';
import { digestOf } from '../digest.js';
import { firstAtOrAfter } from '../manifest.js';

export const REQUIREMENT_FORMAT = 'worldline.requirement/v2';
export const VERIFIER_IDENTITY_FORMAT = 'worldline.verifiers/v1';

export type CheckProfile = 'legacy' | 'private-evaluator-v1';

/** One check as the Policy declares it (spec.checks[]). */
export interface CheckDefinition {
  name: string;
  command: readonly string[];
  /** Globs relative to the Root; files matching them are verifiers. */
  verifiers?: readonly string[];
  /** Wall-time limit as the policy writes it (a Go duration, e.g. "10m"). */
  timeout: string;
  profile: CheckProfile;
  /** The report's format, for a private-evaluator-v1 check (how its examiner's report is read). */
  reportFormat?: string;
  /** Names of the environment variables forwarded into the check. */
  env?: readonly string[];
}

/** A verifier file: its path (as the caller qualifies it) and the SHA-256 (hex) of its bytes. */
export interface VerifierFile {
  path: string;
  sha256: string;
}

/** The resources a check runs with on the node (its admission's per-run defaults; the wall time is the check's timeout). */
export interface CheckResources {
  cpuMillis: number;
  memoryBytes: number;
  pids: number;
  outputBytes: number;
  ephemeralStorageBytes: number;
}

export interface RequirementInput {
  checks: readonly CheckDefinition[];
  verifierIdentity: string;
  engineVersion: string;
  /** The isolation rules the check stage must meet (a JSON value, hashed canonically). */
  isolation: unknown;
  /** The resource policy checks run under (null: none known, as on a node whose admission policy is invalid). */
  resources: CheckResources | null;
}

/** The value requirementHash digests; exported so tests and records can show what was hashed. */
export function requirementValue(input: RequirementInput): unknown {
  return {
    format: REQUIREMENT_FORMAT,
    checks: input.checks.map((c) => ({
      name: c.name,
      command: [...c.command],
      verifiers: [...(c.verifiers ?? [])],
      timeout: c.timeout,
      profile: c.profile,
      // Only a private-evaluator check reads a report: a legacy check's requirement is as it was.
      ...(c.profile === 'private-evaluator-v1' ? { reportFormat: c.reportFormat ?? null } : {}),
      env: [...(c.env ?? [])],
    })),
    verifierIdentity: input.verifierIdentity,
    engineVersion: input.engineVersion,
    execution: {
      network: 'none',
      isolation: input.isolation ?? null,
      resources: input.resources
        ? { cpuMillis: input.resources.cpuMillis, memoryBytes: input.resources.memoryBytes, pids: input.resources.pids, outputBytes: input.resources.outputBytes, ephemeralStorageBytes: input.resources.ephemeralStorageBytes }
        : null,
    },
  };
}

export function requirementHash(input: RequirementInput): string {
  return digestOf(requirementValue(input));
}

/**
 * The identity of a set of verifier files: the digest of the list sorted by path (byte order). The order
 * the caller lists them in does not matter; a path listed twice is refused (it would make two identities
 * for one set).
 */
export function verifierIdentity(files: readonly VerifierFile[]): string {
  const sorted = [...files].sort((a, b) => compareBytes(a.path, b.path));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.path === sorted[i - 1]!.path) throw new Error(`verifier ${sorted[i]!.path} is listed twice`);
  }
  return digestOf({ format: VERIFIER_IDENTITY_FORMAT, files: sorted.map((f) => ({ path: f.path, sha256: f.sha256 })) });
}

/** Qualifies a Root-relative verifier path with its Root's name, the form verifierIdentity is computed over. */
export function qualifiedVerifierPath(root: string, path: string): string {
  return `${root}/${path}`;
}

/**
 * A small glob over clean relative paths: `*` matches any run of characters within one segment, `?`
 * one character within a segment, and a `**` segment any number (zero included) of whole segments.
 * Every other character matches itself.
 */
export function globToRegExp(glob: string): RegExp {
  const segments = glob.split('/');
  let re = '';
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1;
    if (seg === '**') {
      re += last ? '.*' : '(?:[^/]+/)*';
      return;
    }
    for (const ch of seg) {
      if (ch === '*') re += '[^/]*';
      else if (ch === '?') re += '[^/]';
      else re += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
    if (!last) re += '/';
  });
  return new RegExp(`^${re}$`, 'u');
}

export function globMatches(glob: string, path: string): boolean {
  return globToRegExp(glob).test(path);
}

/** An argv element as a Root-relative path, when it is written as one (`./a/b` and `a/b`); else null. */
export function argvPath(arg: string): string | null {
  let p = arg;
  while (p.startsWith('./')) p = p.slice(2);
  // Stryker: `p.length >= 0` and `true` for `p.length > 0` survive as equivalent; isCleanRelativePath('') is false too.
  return p.length > 0 && isCleanRelativePath(p) ? p : null;
}

/** A manifest entry as far as binding needs it. */
export interface BindableEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink';
}

/**
 * boundVerifierPaths over a manifest's entries, which are in strict byte order of their paths (a
 * validated manifest's are): each argv path is found by binary search, and each glob is tested only on
 * the run of paths that start with its literal part (the segments before its first wildcard), so a check
 * whose globs name a directory reads that directory's entries, not the Root's. A glob that starts with a
 * wildcard still reads every path. Same result as boundVerifierPaths (property-tested).
 */
export function boundVerifierPathsSorted(check: Pick<CheckDefinition, 'command' | 'verifiers'>, entries: readonly BindableEntry[]): string[] {
  const bound = new Set<string>();
  const fileAt = (path: string): boolean => {
    const e = entries[firstAtOrAfter(entries, path)];
    return e !== undefined && e.path === path && e.type === 'file';
  };
  for (const arg of check.command) {
    const p = argvPath(arg);
    if (p !== null && fileAt(p)) bound.add(p);
  }
  for (const glob of check.verifiers ?? []) {
    const re = globToRegExp(glob);
    const prefix = literalPrefix(glob);
    for (let i = firstAtOrAfter(entries, prefix); i < entries.length && entries[i]!.path.startsWith(prefix); i++) {
      const e = entries[i]!;
      if (e.type === 'file' && re.test(e.path)) bound.add(e.path);
    }
  }
  return [...bound].sort(compareBytes);
}

/** The segments of a glob before its first wildcard, with their '/': every path it matches starts so. */
function literalPrefix(glob: string): string {
  const segments = glob.split('/');
  let prefix = '';
  for (const seg of segments.slice(0, -1)) {
    if (seg.includes('*') || seg.includes('?')) break;
    prefix += `${seg}/`;
  }
  return prefix;
}

/**
 * The files (Root-relative, byte order, unique) a check binds in PRIME's manifest: every argv element
 * that names a regular file present in the manifest (the file itself), and every regular file matching
 * one of the declared `verifiers` globs. Directories and symlinks are never bound (a symlink would let
 * content outside the staged bytes decide what runs).
 */
export function boundVerifierPaths(check: Pick<CheckDefinition, 'command' | 'verifiers'>, entries: Iterable<BindableEntry>): string[] {
  const files = new Set<string>();
  for (const e of entries) if (e.type === 'file') files.add(e.path);
  const bound = new Set<string>();
  for (const arg of check.command) {
    const p = argvPath(arg);
    if (p !== null && files.has(p)) bound.add(p);
  }
  // Stryker disable next-line ArrayDeclaration: a default glob list of ["Stryker was here"] only differs for a file of that exact name.
  const globs = (check.verifiers ?? []).map(globToRegExp);
  // Stryker: `globs.length >= 0` and `true` survive as equivalent; with no globs the loop binds nothing.
  if (globs.length > 0) {
    for (const p of files) if (globs.some((g) => g.test(p))) bound.add(p);
  }
  return [...bound].sort(compareBytes);
}
