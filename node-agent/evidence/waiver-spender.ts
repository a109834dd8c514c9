// Spending an isolation waiver at launch (issue 13, item 6). The waiver's envelope comes from the World
// (spec.isolation.waiver); the keys that may sign one come only from the node's trust policy file, read
// afresh for every waiver so an edited revocation snapshot counts at once. In order: the signature under
// a key trusted now for isolation waivers on this node; the statement's closed form and its subject; the
// World and node it names; the signer trusted over the waiver's whole interval; the decision covered
// (missing controls only, each named); then the grant spent in the node's SQLite grant store, where its
// validity and revocation are checked before and after. Any step that fails refuses by name, and only the
// last one spends.
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf } from '../../core/digest.js';
import { DsseError, IN_TOTO_PAYLOAD_TYPE, verifyEnvelope, type TrustedKey } from '../../core/evidence/dsse.js';
import { waiverCovers, type IsolationWaiver } from '../../core/evidence/isolation-waiver.js';
import { PREDICATE_TYPES, parseStatement, StatementError } from '../../core/evidence/statement.js';
import { trustedKeys, type TrustMemory, type TrustPolicy } from '../../core/evidence/trust-policy.js';
import { readTrustPolicyFile, TrustPolicyFileError } from '../../kube/trust-policy-file.js';
import type { IsolationDecision } from '../../core/isolation/records.js';
import type { IsolationControl } from '../../core/isolation/vocabulary.js';
import { GrantError, GrantStore, type GrantRefusal } from './grant-store.js';

export type WaiverRefusal = 'GRANT_INVALID' | 'GRANT_UNTRUSTED' | 'GRANT_WORLD_MISMATCH' | 'GRANT_NODE_MISMATCH' | 'GRANT_INSUFFICIENT' | GrantRefusal;

export class WaiverRefused extends Error {
  constructor(
    readonly code: WaiverRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'WaiverRefused';
  }
}

/** What the World's status records of a waiver that was spent. */
export interface SpentWaiver {
  grantId: string;
  /** The controls this run goes without (the decision's missing ones, all named by the waiver). */
  waivedControls: IsolationControl[];
  /** Issuer labels of the distinct trusted keys that signed it. */
  signers: string[];
  reason: string;
  notAfter: string;
  spentAt: string;
}

export interface WaiverSpenderOptions {
  /** The trust policy file (JSON, core/evidence/trust-policy.ts); without one no waiver verifies. */
  trustPolicyPath?: string;
  /** The node's grant store (lazyGrantStore), shared with collapse grants. */
  grants: () => GrantStore;
  nodeName: string;
  now: () => Date;
}

export class WaiverSpender {
  private memory: TrustMemory = {};

  constructor(private readonly o: WaiverSpenderOptions) {}

  /** Spends `envelope` for the World `world` whose decision is `decision`, or refuses by name. */
  spend(envelope: string, world: { namespace: string; name: string; uid: string }, decision: IsolationDecision): SpentWaiver {
    const bytes = Buffer.from(envelope, 'utf8');
    const policy = this.policy();
    const verifyUnder = (run: { start: Date; end: Date }, now: Date): { keyIds: string[]; payload: Uint8Array } => {
      const answer = trustedKeys(policy, { predicateType: PREDICATE_TYPES.isolationWaiver, node: this.o.nodeName, run, now }, this.memory);
      if (!answer.ok) throw new WaiverRefused('GRANT_UNTRUSTED', `${answer.reason}: ${answer.message}`);
      this.memory = answer.memory;
      return verify(bytes, answer.keys);
    };
    const now = this.o.now();
    const first = verifyUnder({ start: now, end: now }, now);
    let waiver: IsolationWaiver;
    try {
      waiver = parseStatement<IsolationWaiver>(first.payload, PREDICATE_TYPES.isolationWaiver).predicate;
    } catch (e) {
      if (e instanceof StatementError) throw new WaiverRefused('GRANT_INVALID', `${e.code}: ${e.message}`);
      throw e;
    }
    if (waiver.world.namespace !== world.namespace || waiver.world.name !== world.name) {
      throw new WaiverRefused('GRANT_WORLD_MISMATCH', `waiver ${waiver.grantId} is for World ${waiver.world.namespace}/${waiver.world.name}, not ${world.namespace}/${world.name}`);
    }
    if (waiver.node !== undefined && waiver.node !== this.o.nodeName) throw new WaiverRefused('GRANT_NODE_MISMATCH', `waiver ${waiver.grantId} may be spent on node ${waiver.node} only, not ${this.o.nodeName}`);
    // The signer must be trusted for the waiver's whole interval, not only at this moment.
    const notBefore = new Date(waiver.notBefore);
    const notAfter = new Date(waiver.notAfter);
    const whole = verifyUnder({ start: notBefore, end: new Date(notAfter.getTime() - 1) }, this.o.now());
    const covered = waiverCovers(decision, waiver);
    if (!covered.ok) throw new WaiverRefused('GRANT_INSUFFICIENT', `waiver ${waiver.grantId}: ${covered.message}`);
    const request = canonicalJson({ format: 'worldline.waiver-request/v1', world: { ...world }, node: this.o.nodeName, decision: digestOf(decision), waived: covered.waived });
    const revoked = new Set(policy.revocations.revokedGrants ?? []);
    let spentAt: Date;
    try {
      spentAt = this.o.grants().spend({ id: waiver.grantId, bytes, request, notBefore, notAfter }, { now: this.o.now, revoked: (id) => revoked.has(id) });
    } catch (e) {
      if (e instanceof GrantError) throw new WaiverRefused(e.code, e.message);
      throw e;
    }
    return { grantId: waiver.grantId, waivedControls: covered.waived, signers: whole.keyIds, reason: waiver.reason, notAfter: notAfter.toISOString(), spentAt: spentAt.toISOString() };
  }

  private policy(): TrustPolicy {
    const path = this.o.trustPolicyPath;
    if (path === undefined) throw new WaiverRefused('GRANT_UNTRUSTED', 'this node-agent has no trust policy (--trust-policy): no waiver can be verified');
    try {
      return readTrustPolicyFile(path);
    } catch (e) {
      if (e instanceof TrustPolicyFileError) throw new WaiverRefused('GRANT_UNTRUSTED', e.message);
      throw e;
    }
  }
}

function verify(bytes: Uint8Array, keys: TrustedKey[]): { keyIds: string[]; payload: Uint8Array } {
  try {
    const v = verifyEnvelope(bytes, { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: keys });
    return { keyIds: v.keyIds, payload: v.payload };
  } catch (e) {
    if (e instanceof DsseError) throw new WaiverRefused(e.code === 'NO_TRUSTED_SIGNATURE' || e.code === 'TOO_FEW_SIGNERS' ? 'GRANT_UNTRUSTED' : 'GRANT_INVALID', `${e.code}: ${e.message}`);
    throw e;
  }
}
