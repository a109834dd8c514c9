// What the controller hands the evidence graph verifier (core/evidence/evidence-graph.ts) for one
// Collapse, read from its own caches: the expectations from sources other than the statements' producer
// (the World's namespace, name, uid and base, and its node, as the API server holds them; the candidate
// the Collapse promotes; the roster of the Policy that governs the World's Roots, as the controller reads
// that Policy) and the statements the objects show (the World's signed isolation observation and
// decision, its waiver, and the signed run of each of its Checks on that candidate). Pure.
import type { Check, Collapse, World } from '../../crds/index.js';
import type { GraphExpectations, ShownStatement } from '../../core/evidence/evidence-graph.js';
import { requiredChecks, type PolicyChecksView } from '../world-checks.js';

export type GraphInputs = { expect: GraphExpectations; statements: ShownStatement[] } | { refused: { reason: string; message: string } };

export function collapseGraphInputs(c: Collapse, world: World | undefined, checks: readonly Check[], policies: readonly PolicyChecksView[]): GraphInputs {
  const ns = c.metadata.namespace ?? '';
  if (!world?.metadata.uid || world.metadata.uid !== c.spec.worldUID) {
    return { refused: { reason: 'EVIDENCE_WORLD_MISMATCH', message: `World ${ns}/${c.spec.worldRef} is not the one this Collapse is bound to (${c.spec.worldUID ?? 'unbound'})` } };
  }
  const node = world.status?.nodeName;
  if (!node) return { refused: { reason: 'EVIDENCE_MISSING', message: `World ${ns}/${c.spec.worldRef} is bound to no node` } };
  const candidate = c.spec.mode === 'Candidate' ? (c.status?.rebase?.candidate ?? world.status?.candidate?.digest ?? null) : null;
  const roster = c.spec.mode === 'Candidate' ? requiredChecks(policies, world.spec.roots) : [];
  const expect: GraphExpectations = {
    world: { namespace: ns, name: world.metadata.name ?? '', uid: world.metadata.uid },
    node,
    base: (world.status?.base ?? []).map((b) => ({ root: b.root, generation: b.generation, digest: b.digest })),
    mode: c.spec.mode,
    candidate,
    roster,
  };
  const statements: ShownStatement[] = [];
  if (c.spec.mode === 'Candidate') {
    const shownBy = { kind: 'World' as const, namespace: ns, name: world.metadata.name ?? '', uid: world.metadata.uid };
    const att = world.status?.isolation?.attestations;
    if (att?.observation) statements.push({ role: 'isolation-observation', shownBy, envelope: att.observation.envelope, digest: att.observation.digest });
    if (att?.decision) statements.push({ role: 'isolation-decision', shownBy, envelope: att.decision.envelope, digest: att.decision.digest });
    const waiver = world.spec.isolation?.waiver;
    if (waiver !== undefined) statements.push({ role: 'isolation-waiver', shownBy, envelope: waiver });
    // The runs each Check shows on the promoted candidate (status.subject narrows what is read; the signed
    // subject decides what belongs to the graph).
    for (const k of checks) {
      const a = k.status?.attestation;
      if (!a || k.spec.worldRef !== c.spec.worldRef || k.status?.subject !== candidate) continue;
      statements.push({ role: 'check-execution', shownBy: { kind: 'Check', namespace: ns, name: k.metadata.name ?? '', uid: k.metadata.uid ?? '', check: k.spec.name }, envelope: a.envelope, digest: a.digest });
    }
  }
  return { expect, statements };
}
