// Trust policy as data (issue 13, item 2): which public keys may sign which evidence. Each signer rule
// binds an issuer label to one explicit Ed25519 public key, scoped by predicate type and optionally by
// node and Root, and valid over a half-open interval [validFrom, validUntil) that must cover both the
// moment of verification and the whole run the evidence asserts. A revocation snapshot lists revoked
// keys (by key, so no other name brings one back) and is trusted only while younger than its maximum age;
// a stale snapshot, or a clock or snapshot older than one already seen, refuses every key. The same key
// under several issuer labels is one signer: the keys returned are distinct public keys.
// Pure: the policy and the moment in, the trusted keys for one question out.
import { z } from 'zod';
import type { TrustedKey } from './dsse.js';

const instant = z.iso.datetime({ offset: true });

export const SignerRuleSchema = z.strictObject({
  issuer: z.string().min(1).max(253),
  /** Raw Ed25519 public key, 32 bytes as lowercase hex. */
  publicKey: z.string().regex(/^[0-9a-f]{64}$/, 'a raw Ed25519 public key as 64 lowercase hex characters'),
  predicateTypes: z.array(z.string().min(1)).min(1),
  nodes: z.array(z.string().min(1)).min(1).optional(),
  roots: z.array(z.string().min(1)).min(1).optional(),
  validFrom: instant,
  validUntil: instant,
});

export const RevocationSnapshotSchema = z.strictObject({
  issuedAt: instant,
  maxAgeSeconds: z.int().min(1).max(7 * 24 * 3600),
  revokedPublicKeys: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
  /** Grant ids (of waivers and collapse grants) that may no longer be spent. */
  revokedGrants: z.array(z.string().min(1).max(128)).max(4096).optional(),
});

export const TrustPolicySchema = z.strictObject({
  signers: z.array(SignerRuleSchema).max(1024),
  revocations: RevocationSnapshotSchema,
});

export type TrustPolicy = z.infer<typeof TrustPolicySchema>;

export interface TrustQuestion {
  predicateType: string;
  node: string;
  root?: string;
  /**
   * The interval the evidence asserts (its run), which every key's validity must cover. Absent only for
   * a first look at evidence judged over its own interval later (with `validNow: false`): scope and
   * revocation alone then.
   */
  run?: { start: Date; end: Date };
  now: Date;
  /**
   * Whether a key must also be valid now (default true: fresh evidence). False for a record made in the
   * past — a receipt signed before its key was rotated out stays verifiable; revocation and the
   * snapshot's age are still judged now.
   */
  validNow?: boolean;
}

/** What the verifier has already seen; a later question may not go back on it. */
export interface TrustMemory {
  latestNow?: Date;
  latestSnapshot?: Date;
}

export type TrustAnswer =
  | { ok: true; keys: TrustedKey[]; memory: TrustMemory }
  | { ok: false; reason: 'CLOCK_ROLLBACK' | 'REVOCATION_ROLLBACK' | 'REVOCATION_STALE' | 'NO_TRUSTED_SIGNER'; message: string };

/** The keys trusted to sign evidence answering `q`, or why none can be. */
export function trustedKeys(policy: TrustPolicy, q: TrustQuestion, memory: TrustMemory = {}): TrustAnswer {
  const now = q.now.getTime();
  const issued = Date.parse(policy.revocations.issuedAt);
  if (memory.latestNow && now < memory.latestNow.getTime()) return { ok: false, reason: 'CLOCK_ROLLBACK', message: `the clock reads ${q.now.toISOString()}, before ${memory.latestNow.toISOString()} already seen` };
  if (memory.latestSnapshot && issued < memory.latestSnapshot.getTime()) {
    return { ok: false, reason: 'REVOCATION_ROLLBACK', message: `the revocation snapshot of ${policy.revocations.issuedAt} is older than one already seen (${memory.latestSnapshot.toISOString()})` };
  }
  if (issued > now || now - issued > policy.revocations.maxAgeSeconds * 1000) {
    return { ok: false, reason: 'REVOCATION_STALE', message: `the revocation snapshot of ${policy.revocations.issuedAt} is not within ${policy.revocations.maxAgeSeconds} s before ${q.now.toISOString()}` };
  }
  const revoked = new Set(policy.revocations.revokedPublicKeys);
  const covers = (r: TrustPolicy['signers'][number]): boolean => {
    const from = Date.parse(r.validFrom);
    const until = Date.parse(r.validUntil);
    return (q.validNow === false || (from <= now && now < until)) && (q.run === undefined || (from <= q.run.start.getTime() && q.run.end.getTime() < until));
  };
  const keys = new Map<string, TrustedKey>();
  for (const r of policy.signers) {
    if (!r.predicateTypes.includes(q.predicateType)) continue;
    if (r.nodes && !r.nodes.includes(q.node)) continue;
    if (r.roots && (q.root === undefined || !r.roots.includes(q.root))) continue;
    if (revoked.has(r.publicKey) || !covers(r)) continue;
    if (!keys.has(r.publicKey)) keys.set(r.publicKey, { keyId: r.issuer, publicKey: Buffer.from(r.publicKey, 'hex') });
  }
  const latest = (a: Date | undefined, b: Date): Date => (a && a.getTime() > b.getTime() ? a : b);
  const nextMemory = { latestNow: latest(memory.latestNow, q.now), latestSnapshot: latest(memory.latestSnapshot, new Date(issued)) };
  if (keys.size === 0) return { ok: false, reason: 'NO_TRUSTED_SIGNER', message: `no signer rule trusts a key for ${q.predicateType} on node ${q.node}${q.root ? `, Root ${q.root}` : ''} over the asserted run` };
  return { ok: true, keys: [...keys.values()], memory: nextMemory };
}
