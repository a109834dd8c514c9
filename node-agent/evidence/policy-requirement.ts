// The requirement a Policy imposes on a World's candidate, resolved against a given generation of each
// Root (the World's base for a first check, the current PRIME for a revalidation or a collapse). The
// check runner and the collapse both call this, so the identity a check records and the identity a
// collapse demands are computed by the same code from the same kind of records.
//
// One requirement covers the whole Policy: every check (in Policy order), the verifier files ALL checks
// bind (so every check stages and executes the same verifier set), the engine version, the check
// stage's isolation rules and the resources a check runs with on this node. Changing any check, the
// bytes of any bound verifier in PRIME, or the node's per-run resources for checks, changes it.
import {
  boundVerifierPathsSorted,
  qualifiedVerifierPath,
  requirementHash,
  verifierIdentity,
  type CheckDefinition,
  type CheckResources,
  type VerifierFile,
} from '../../core/evidence/requirement.js';
import { compareBytes } from '../../core/relative-path.js';
import type { Manifest } from '../../core/manifest.js';
import type { PolicySpec } from '../../crds/index.js';
import { AGENT_VERSION } from '../version.js';

/** A Policy as far as checks go (parsed: spec.checks[] with the schema's defaults applied). */
export interface PolicyChecksView {
  spec: Pick<PolicySpec, 'checks' | 'isolation'>;
}

export interface ResolvedRequirement {
  /** The Policy's checks with defaults applied, in Policy order. */
  definitions: CheckDefinition[];
  /** Per Root: the Root-relative paths every check together binds in the given generation (byte order). */
  bound: Map<string, string[]>;
  /** The bound files, qualified with their Root's name, with their bytes' SHA-256 from the manifest. */
  files: VerifierFile[];
  /** verifierIdentity(files): what the Policy declares must be executed. */
  declaredVerifier: string;
  requirementHash: string;
}

/** spec.checks[] as definitions (the schema applied timeout 10m and profile legacy; no verifiers, no env). */
export function checkDefinitions(policy: PolicyChecksView | undefined): CheckDefinition[] {
  return (policy?.spec.checks ?? []).map((c) => ({
    name: c.name,
    command: [...c.command],
    verifiers: [...(c.verifiers ?? [])],
    timeout: c.timeout,
    profile: c.profile,
    ...(c.profile === 'private-evaluator-v1' && c.reportFormat !== undefined ? { reportFormat: c.reportFormat } : {}),
    env: [...(c.env ?? [])],
  }));
}

/**
 * Resolves the requirement of `policy` over `roots`, each read in `manifestOf(root)` (a generation's
 * manifest). Returns null when a Root's manifest is not available: an unresolvable requirement is absent,
 * never "no requirement".
 */
export function resolveRequirement(
  policy: PolicyChecksView | undefined,
  roots: readonly string[],
  manifestOf: (root: string) => Manifest | undefined,
  resources: CheckResources | null,
): ResolvedRequirement | null {
  const definitions = checkDefinitions(policy);
  const bound = new Map<string, string[]>();
  const files: VerifierFile[] = [];
  for (const root of roots) {
    const manifest = manifestOf(root);
    if (!manifest) return null;
    const paths = new Set<string>();
    for (const d of definitions) for (const p of boundVerifierPathsSorted(d, manifest.entries)) paths.add(p); // a recorded manifest is in byte order
    const sorted = [...paths].sort(compareBytes);
    bound.set(root, sorted);
    if (sorted.length === 0) continue; // nothing bound: the manifest's entries are not read (O(Root) at 100k files)
    const wanted = new Set(sorted);
    const sums = new Map<string, string | undefined>();
    for (const e of manifest.entries) if (wanted.has(e.path)) sums.set(e.path, e.sha256);
    for (const p of sorted) files.push({ path: qualifiedVerifierPath(root, p), sha256: sums.get(p) ?? '' });
  }
  const declaredVerifier = verifierIdentity(files);
  const hash = requirementHash({ checks: definitions, verifierIdentity: declaredVerifier, engineVersion: AGENT_VERSION, isolation: policy?.spec.isolation?.check ?? null, resources });
  return { definitions, bound, files, declaredVerifier, requirementHash: hash };
}
