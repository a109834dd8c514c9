// Which Policy governs a set of Roots: the one rule the controller (the Checks a World needs) and the
// node-agent (isolation, checks and collapses) both follow. A Policy governs the Roots it names; when two
// Policies name the same Root the older one governs (creation time, then name) and the controller refuses
// the newer one with PolicyRootConflict, so both processes agree on the winner whatever their cache order.

/** What the rule reads of a Policy. */
export interface GoverningCandidate {
  metadata: { name?: string; creationTimestamp?: string | Date };
  spec: { roots: readonly string[] };
}

function createdAt(p: GoverningCandidate): number {
  const t = p.metadata.creationTimestamp;
  const ms = t === undefined ? NaN : new Date(t).getTime();
  return Number.isFinite(ms) ? ms : Number.MAX_SAFE_INTEGER;
}

/** Older Policies first (by creationTimestamp; none sorts last), then by name. */
export function olderPolicyFirst(a: GoverningCandidate, b: GoverningCandidate): number {
  const ta = createdAt(a);
  const tb = createdAt(b);
  if (ta !== tb) return ta - tb;
  return (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

/** Whether the Policy names any of the Roots. */
export function governsAny(policy: GoverningCandidate, roots: readonly string[]): boolean {
  return policy.spec.roots.some((r) => roots.includes(r));
}

/** The Policy governing any of `roots`: the oldest of those naming one of them; undefined when none does. */
export function governingPolicy<P extends GoverningCandidate>(policies: readonly P[], roots: readonly string[]): P | undefined {
  let best: P | undefined;
  for (const p of policies) {
    if (governsAny(p, roots) && (best === undefined || olderPolicyFirst(p, best) < 0)) best = p;
  }
  return best;
}
