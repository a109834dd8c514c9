// Benchmark: what a controller-issued collapse grant costs in CPU. For a World with N required checks, the
// controller verifies its evidence graph (verifyEvidenceGraph: the observation, the decision and N check
// runs, each signature checked under the keys trusted now and again over the run it asserts, trust read
// again afterwards) and signs the grant; the node-agent verifies the grant (ControllerGrants.verify on a
// real evidence store: the signature twice, the bindings, each named statement read back and hashed).
// Next to it, in the same run: Node crypto Ed25519 verify of one signature, times the signatures the graph
// holds. The round trip through the API (the Authorized status, the grant written back) is not here: it is
// one status write and one watch event each way, which the controller benchmark's raw API write measures.
import { generateKeyPairSync, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIGEST_PREFIX, digestOf, sha256Hex } from '../../core/digest.js';
import { COLLAPSE_GRANT_VALID_MS, transactionRefSubject, type CollapseGrantPredicate } from '../../core/evidence/collapse-grant.js';
import { IN_TOTO_PAYLOAD_TYPE, pae, signEnvelope } from '../../core/evidence/dsse.js';
import { verifyEvidenceGraph, type GraphExpectations, type ShownStatement } from '../../core/evidence/evidence-graph.js';
import { CANDIDATE_MEDIA_TYPE, type CheckExecution } from '../../core/evidence/check-execution.js';
import { observationSubject, worldBaseSubject } from '../../core/evidence/isolation-attestation.js';
import { PREDICATE_TYPES, statementBytes, type PredicateType, type Subject } from '../../core/evidence/statement.js';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { evaluate } from '../../core/isolation/evaluate.js';
import { ControllerGrants } from '../../node-agent/evidence/controller-grant.js';
import { EvidenceStore } from '../../node-agent/evidence/evidence-store.js';
import { observation, policy, request, rule } from '../unit/core-isolation-fixtures.js';
import { namedKey, type NamedKey } from '../support/evidence-fixtures.js';
import { median, percentile } from './stats.js';

export interface EvidenceBenchRow {
  checks: number;
  statements: number;
  graphUs: { median: number; p99: number };
  signGrantUs: number;
  nodeVerifyUs: { median: number; p99: number };
  /** Node crypto verify of one signature, times the graph's signatures checked twice (now and over the run). */
  rawVerifyUs: number;
}

type Key = NamedKey;
const key = namedKey;

const NODE = 'bench-node';
const WORLD = { namespace: 'default', name: 'w', uid: 'world-uid-1' };

function signText(k: Key, subject: Subject, type: PredicateType, predicate: unknown): string {
  return JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(subject, type, predicate), { keyId: k.issuer, privateKey: k.privateKey }));
}

/** A valid graph of a World with `checks` required checks, shown as the controller reads it. */
function graph(nodeKey: Key, checks: number, now: Date): { expect: GraphExpectations; statements: ShownStatement[] } {
  const ref = `worlds/${WORLD.namespace}/${WORLD.name}`;
  const base = [{ root: 'repo', generation: 7, digest: `sha256:${'e'.repeat(64)}` }];
  const baseSubject = worldBaseSubject(ref, base);
  const iso = policy(rule());
  const req = request({ subject: baseSubject.digest });
  const obs = observation(iso, req, { executionId: WORLD.uid });
  const dec = evaluate(iso, req, obs);
  const candidate = digestOf({ candidate: 'bench' });
  const show = (role: ShownStatement['role'], envelope: string, shownBy: ShownStatement['shownBy']): ShownStatement => ({ role, shownBy, envelope, digest: DIGEST_PREFIX + sha256Hex(envelope) });
  const byWorld = { kind: 'World' as const, ...WORLD };
  const statements = [show('isolation-observation', signText(nodeKey, baseSubject, PREDICATE_TYPES.isolationObservation, obs), byWorld), show('isolation-decision', signText(nodeKey, observationSubject(ref, obs), PREDICATE_TYPES.isolationDecision, dec), byWorld)];
  const roster: string[] = [];
  for (let i = 0; i < checks; i++) {
    const name = `check-${i}`;
    roster.push(name);
    const run: CheckExecution = {
      check: { namespace: WORLD.namespace, name: `w-${name}`, uid: `check-uid-${i}` },
      world: { uid: WORLD.uid },
      checkName: name,
      subject: candidate,
      requirementHash: digestOf({ requirement: name }),
      verifierIdentity: digestOf({ verifier: name }),
      executedVerifierIdentity: digestOf({ verifier: name }),
      verdict: 'PASS',
      exit: { code: 0, signal: null, reason: 'exited' },
      startedAt: new Date(now.getTime() - 60_000).toISOString(),
      finishedAt: new Date(now.getTime() - 30_000).toISOString(),
    };
    const subject: Subject = { name: `candidates/${candidate}`, digest: candidate, size: 600, mediaType: CANDIDATE_MEDIA_TYPE };
    statements.push(show('check-execution', signText(nodeKey, subject, PREDICATE_TYPES.checkExecution, run), { kind: 'Check', namespace: WORLD.namespace, name: run.check.name, uid: run.check.uid, check: name }));
  }
  return { expect: { world: WORLD, node: NODE, base, mode: 'Candidate', candidate, roster }, statements };
}

export function benchEvidence(o: { dir: string; checks: readonly number[]; rounds: number }): EvidenceBenchRow[] {
  const nodeKey = key('node');
  const controller = key('controller');
  const now = new Date();
  const day = 86_400_000;
  const window = { validFrom: new Date(now.getTime() - day).toISOString(), validUntil: new Date(now.getTime() + day).toISOString() };
  const trust: TrustPolicy = {
    signers: [
      { issuer: 'node', publicKey: nodeKey.hex, predicateTypes: [PREDICATE_TYPES.isolationObservation, PREDICATE_TYPES.isolationDecision, PREDICATE_TYPES.checkExecution], nodes: [NODE], ...window },
      { issuer: 'controller', publicKey: controller.hex, predicateTypes: [PREDICATE_TYPES.collapseGrant], nodes: [NODE], ...window },
    ],
    revocations: { issuedAt: new Date(now.getTime() - 1000).toISOString(), maxAgeSeconds: 3600, revokedPublicKeys: [] },
  };
  const dir = mkdtempSync(join(o.dir, 'wl-evidence-bench-'));
  try {
    const policyPath = join(dir, 'policy.json');
    writeFileSync(policyPath, JSON.stringify(trust));
    const store = new EvidenceStore(dir);
    const rows: EvidenceBenchRow[] = [];
    for (const checks of o.checks) {
      const g = graph(nodeKey, checks, now);
      for (const s of g.statements) store.put(Buffer.from(s.envelope));
      const graphUs: number[] = [];
      const nodeUs: number[] = [];
      let signUs = 0;
      const grants = new ControllerGrants({ trustPolicyPath: policyPath, nodeName: NODE, now: () => new Date(), evidence: store, waitMs: 1000 });
      for (let r = 0; r < o.rounds; r++) {
        const t0 = process.hrtime.bigint();
        const result = verifyEvidenceGraph({ expect: g.expect, statements: g.statements, policy: trust, now: new Date(), memory: {}, refresh: () => ({ policy: trust, now: new Date() }) });
        const t1 = process.hrtime.bigint();
        if (!result.ok) throw new Error(`the bench graph did not verify: ${result.reason}: ${result.message}`);
        const about = { collapse: { namespace: WORLD.namespace, name: 'c', uid: `collapse-${r}` }, transaction: `transaction-${checks}-${r}` };
        const at = new Date();
        const predicate: CollapseGrantPredicate = { grantId: about.transaction, about, world: WORLD, node: NODE, mode: 'Candidate', candidate: g.expect.candidate, roster: [...g.expect.roster], evidence: result.nodes, notBefore: at.toISOString(), notAfter: new Date(at.getTime() + COLLAPSE_GRANT_VALID_MS).toISOString() };
        const envelope = JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(transactionRefSubject(about), PREDICATE_TYPES.collapseGrant, predicate), { keyId: 'controller', privateKey: controller.privateKey }));
        const t2 = process.hrtime.bigint();
        grants.verify(envelope, { collapse: about.collapse, transaction: about.transaction, world: { uid: WORLD.uid }, mode: 'Candidate', candidate: g.expect.candidate, roster: g.expect.roster });
        const t3 = process.hrtime.bigint();
        graphUs.push(Number(t1 - t0) / 1000);
        signUs += Number(t2 - t1) / 1000;
        nodeUs.push(Number(t3 - t2) / 1000);
      }
      // The baseline: one raw verify, as many times as the graph checks signatures (each statement twice).
      const msg = pae(IN_TOTO_PAYLOAD_TYPE, Buffer.from('x'.repeat(1200)));
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const sig = nodeSign(null, msg, privateKey);
      const n = 2000;
      const b0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) nodeVerify(null, msg, publicKey, sig);
      const perVerifyUs = Number(process.hrtime.bigint() - b0) / 1000 / n;
      rows.push({
        checks,
        statements: g.statements.length,
        graphUs: { median: median(graphUs), p99: percentile(graphUs, 99) },
        signGrantUs: signUs / o.rounds,
        nodeVerifyUs: { median: median(nodeUs), p99: percentile(nodeUs, 99) },
        rawVerifyUs: perVerifyUs * g.statements.length * 2,
      });
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
