// The controller's collapse grant, as the node-agent takes it (issue 13, items 4 and 5). When the node's
// trust policy pins a collapse-grant signer for this node, an authorized Collapse is not exchanged on the
// node's own authorization: it waits for the grant the controller signs after verifying the evidence
// graph (controller/evidence/grant-issuer.ts), and the grant must
//   - verify under a key the trust policy (read afresh) trusts for collapse grants on this node, now and
//     over the grant's whole interval;
//   - be about exactly this transaction (Collapse uid, transaction id), World, node, mode and candidate;
//   - require the roster this node's decision kernel required (the controller and the node read the
//     Policy independently; a disagreement refuses);
//   - name only statements this node produced (a waiver aside): each is read back from its evidence store, within one
//     resolution budget, verified against its digest.
// It is then spent like the node's own grant (collapse-grant.ts): once, at the commit boundary, where the
// check runs it names (read from this node's own statements) are the only ones the decision may rely on.
import { decodeCanonicalBase64, DsseError, IN_TOTO_PAYLOAD_TYPE, parseEnvelope, verifyEnvelope } from '../../core/evidence/dsse.js';
import type { CheckExecution } from '../../core/evidence/check-execution.js';
import type { CollapseGrantPredicate } from '../../core/evidence/collapse-grant.js';
import { PREDICATE_TYPES, parseStatement, StatementError } from '../../core/evidence/statement.js';
import { trustedKeys, type TrustMemory, type TrustPolicy } from '../../core/evidence/trust-policy.js';
import { readTrustPolicyFile } from '../../kube/trust-policy-file.js';
import type { CollapseGrant } from './collapse-grant.js';
import { EvidenceError, type EvidenceStore } from './evidence-store.js';

export type ControllerGrantRefusal = 'GRANT_MISSING' | 'GRANT_UNTRUSTED' | 'GRANT_INVALID' | 'GRANT_MISMATCH' | 'GRANT_EVIDENCE_UNKNOWN';

export class ControllerGrantRefused extends Error {
  constructor(
    readonly code: ControllerGrantRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'ControllerGrantRefused';
  }
}

/** What the grant must be about, from this node's own transaction. */
export interface GrantExpectation {
  collapse: { namespace: string; name: string; uid: string };
  transaction: string;
  world: { uid: string };
  mode: 'Candidate' | 'CheckpointReturn';
  candidate: string | null;
  roster: readonly string[];
}

export interface ControllerGrantsOptions {
  trustPolicyPath?: string;
  nodeName: string;
  now: () => Date;
  evidence: Pick<EvidenceStore, 'session'>;
  /** How long an authorized Collapse waits for the grant. */
  waitMs: number;
}

const EVIDENCE_BUDGET = { maxBytes: 4 << 20 };

/** A check run the controller verified, as this node's own stored statement records it. */
export interface VerifiedRun {
  checkUid: string;
  checkName: string;
  verdict: CheckExecution['verdict'];
  requirementHash: string;
  subject: string;
}

export interface VerifiedGrant {
  grant: CollapseGrant;
  /** The check runs among the statements it names: what the decision kernel may rely on. */
  runs: VerifiedRun[];
}

export class ControllerGrants {
  private memory: TrustMemory = {};

  constructor(readonly o: ControllerGrantsOptions) {}

  /**
   * Whether Collapses on this node need the controller's grant: the trust policy pins a collapse-grant
   * signer for the node. A policy that cannot be read requires it (and then no grant verifies).
   */
  required(): boolean {
    if (this.o.trustPolicyPath === undefined) return false;
    let policy: TrustPolicy;
    try {
      policy = readTrustPolicyFile(this.o.trustPolicyPath);
    } catch {
      return true;
    }
    return policy.signers.some((r) => r.predicateTypes.includes(PREDICATE_TYPES.collapseGrant) && (!r.nodes || r.nodes.includes(this.o.nodeName)));
  }

  /** Verifies the controller's grant envelope for `e` (see the file comment); the grant to spend and the runs it names, or ControllerGrantRefused. */
  verify(envelope: string, e: GrantExpectation): VerifiedGrant {
    const bytes = Buffer.from(envelope, 'utf8');
    let policy: TrustPolicy;
    try {
      policy = readTrustPolicyFile(this.o.trustPolicyPath ?? '');
    } catch (err) {
      throw new ControllerGrantRefused('GRANT_UNTRUSTED', `no grant verifies: ${(err as Error).message}`);
    }
    const under = (run: { start: Date; end: Date }): Uint8Array => {
      const now = this.o.now();
      const answer = trustedKeys(policy, { predicateType: PREDICATE_TYPES.collapseGrant, node: this.o.nodeName, run, now }, this.memory);
      if (!answer.ok) throw new ControllerGrantRefused('GRANT_UNTRUSTED', `${answer.reason}: ${answer.message}`);
      this.memory = answer.memory;
      try {
        return verifyEnvelope(bytes, { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: answer.keys }).payload;
      } catch (err) {
        if (!(err instanceof DsseError)) throw err;
        throw new ControllerGrantRefused(err.code === 'NO_TRUSTED_SIGNATURE' || err.code === 'TOO_FEW_SIGNERS' ? 'GRANT_UNTRUSTED' : 'GRANT_INVALID', `${err.code}: ${err.message}`);
      }
    };
    const now = this.o.now();
    const payload = under({ start: now, end: now });
    let g: CollapseGrantPredicate;
    try {
      g = parseStatement<CollapseGrantPredicate>(payload, PREDICATE_TYPES.collapseGrant).predicate;
    } catch (err) {
      if (err instanceof StatementError) throw new ControllerGrantRefused('GRANT_INVALID', `${err.code}: ${err.message}`);
      throw err;
    }
    const mismatch = (what: string, got: unknown, want: unknown): never => {
      throw new ControllerGrantRefused('GRANT_MISMATCH', `the grant is for ${what} ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
    };
    const c = g.about.collapse;
    if (c.uid !== e.collapse.uid || c.namespace !== e.collapse.namespace || c.name !== e.collapse.name) mismatch('Collapse', c, e.collapse);
    if (g.about.transaction !== e.transaction) mismatch('transaction', g.about.transaction, e.transaction);
    if (g.grantId !== e.transaction) mismatch('grant id', g.grantId, e.transaction);
    if (g.world.uid !== e.world.uid) mismatch('World', g.world.uid, e.world.uid);
    if (g.node !== this.o.nodeName) mismatch('node', g.node, this.o.nodeName);
    if (g.mode !== e.mode) mismatch('mode', g.mode, e.mode);
    if (g.candidate !== e.candidate) mismatch('candidate', g.candidate, e.candidate);
    const roster = [...g.roster].sort();
    const mine = [...e.roster].sort();
    if (roster.length !== mine.length || roster.some((x, i) => x !== mine[i])) mismatch('roster', roster, mine);
    // The signer must be trusted over the grant's whole interval, too.
    const notBefore = new Date(g.notBefore);
    const notAfter = new Date(g.notAfter);
    under({ start: notBefore, end: new Date(notAfter.getTime() - 1) });
    // Every statement the controller verified is one this node made, byte for byte (a waiver is the
    // issuer's, spent at launch in the grant store, and is not in the evidence store).
    const made = g.evidence.filter((n) => n.role !== 'isolation-waiver');
    const session = this.o.evidence.session({ maxObjects: Math.max(1, made.length), ...EVIDENCE_BUDGET });
    const runs: VerifiedRun[] = [];
    for (const n of made) {
      let stored: Buffer;
      try {
        stored = session.read(n.digest);
      } catch (err) {
        if (err instanceof EvidenceError) throw new ControllerGrantRefused('GRANT_EVIDENCE_UNKNOWN', `the grant names ${n.role} ${n.digest}, which this node's evidence store does not hold as such: ${err.code}: ${err.message}`);
        throw err;
      }
      if (n.role === 'check-execution') runs.push(runOf(stored, n.digest));
    }
    return { grant: { id: g.grantId, bytes: Buffer.from(payload), notBefore, notAfter }, runs };
  }
}

/** The run a check-execution statement of this node's store records (its own bytes, already checked against their digest). */
function runOf(stored: Buffer, digest: string): VerifiedRun {
  try {
    const env = parseEnvelope(stored);
    const r = parseStatement<CheckExecution>(decodeCanonicalBase64(env.payload, 'payload'), PREDICATE_TYPES.checkExecution).predicate;
    return { checkUid: r.check.uid, checkName: r.checkName, verdict: r.verdict, requirementHash: r.requirementHash, subject: r.subject };
  } catch (err) {
    if (err instanceof DsseError || err instanceof StatementError) throw new ControllerGrantRefused('GRANT_MISMATCH', `the grant names ${digest} as a check run, which it is not: ${err.code}: ${err.message}`);
    throw err;
  }
}
