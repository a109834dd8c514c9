// Trust policy as data: which keys may sign which evidence, when; revocation by key with a bounded age;
// no going back on a clock or snapshot already seen; an alias never a second signer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope, verifyEnvelope, DsseError } from '../../core/evidence/dsse.js';
import { TrustPolicySchema, trustedKeys, type TrustPolicy, type TrustQuestion } from '../../core/evidence/trust-policy.js';

const OBS = 'https://worldline.dev/attestations/isolation-observation/v1';
const DEC = 'https://worldline.dev/attestations/isolation-decision/v1';
const t = (h: number): Date => new Date(Date.UTC(2026, 11, 1, h));
function key() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, hex: Buffer.from((publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url').toString('hex') };
}
const a = key();
const b = key();
const rule = (issuer: string, hex: string, over: Partial<TrustPolicy['signers'][number]> = {}) => ({ issuer, publicKey: hex, predicateTypes: [OBS], validFrom: t(0).toISOString(), validUntil: t(10).toISOString(), ...over });
const policy = (signers: TrustPolicy['signers'], revoked: string[] = [], issuedAt = t(4)): TrustPolicy => ({ signers, revocations: { issuedAt: issuedAt.toISOString(), maxAgeSeconds: 3600, revokedPublicKeys: revoked } });
const q = (over: Partial<TrustQuestion> = {}): TrustQuestion => ({ predicateType: OBS, node: 'node-a', root: 'repo', run: { start: t(2), end: t(3) }, now: t(4), ...over });
const names = (r: ReturnType<typeof trustedKeys>): string[] | string => (r.ok ? r.keys.map((k) => k.keyId).sort() : r.reason);

test('scope: predicate type, node and Root select the rules', () => {
  const p = policy([rule('any-node', a.hex), rule('node-b-only', b.hex, { nodes: ['node-b'] })]);
  assert.deepEqual(names(trustedKeys(p, q())), ['any-node']);
  assert.deepEqual(names(trustedKeys(p, q({ node: 'node-b' }))), ['any-node', 'node-b-only']);
  assert.equal(names(trustedKeys(p, q({ predicateType: DEC }))), 'NO_TRUSTED_SIGNER');
  const rooted = policy([rule('repo-only', a.hex, { roots: ['repo'] })]);
  assert.deepEqual(names(trustedKeys(rooted, q())), ['repo-only']);
  assert.equal(names(trustedKeys(rooted, q({ root: 'other' }))), 'NO_TRUSTED_SIGNER');
  const { root: _unused, ...noRoot } = q();
  assert.equal(names(trustedKeys(rooted, noRoot)), 'NO_TRUSTED_SIGNER', 'a Root-scoped key does not sign evidence about no Root');
});

test('validity is half-open and must cover both now and the whole asserted run', () => {
  const p = policy([rule('k', a.hex, { validFrom: t(2).toISOString(), validUntil: t(5).toISOString() })]);
  assert.deepEqual(names(trustedKeys(p, q())), ['k'], 'validFrom equal to the run start is inside');
  assert.equal(names(trustedKeys(p, q({ run: { start: t(1), end: t(3) } }))), 'NO_TRUSTED_SIGNER', 'the run began before the key was valid');
  assert.equal(names(trustedKeys(p, q({ run: { start: t(2), end: t(5) } }))), 'NO_TRUSTED_SIGNER', 'validUntil itself is outside');
  assert.equal(names(trustedKeys(policy([rule('k', a.hex, { validUntil: t(4).toISOString() })]), q())), 'NO_TRUSTED_SIGNER', 'expired now, though valid over the run');
});

test('revocation is by key (an alias does not bring it back), and only a fresh snapshot is trusted', () => {
  const p = policy([rule('old-name', a.hex), rule('new-name', a.hex), rule('other', b.hex)], [a.hex]);
  assert.deepEqual(names(trustedKeys(p, q())), ['other']);
  assert.equal(names(trustedKeys(policy([rule('k', a.hex)], [], t(2)), q())), 'REVOCATION_STALE', 'two hours old, one hour allowed');
  assert.equal(names(trustedKeys(policy([rule('k', a.hex)], [], t(5)), q())), 'REVOCATION_STALE', 'a snapshot from the future');
});

test('no going back: an earlier clock or an older snapshot than already seen refuses', () => {
  const p = policy([rule('k', a.hex)]);
  const first = trustedKeys(p, q());
  assert.ok(first.ok);
  assert.equal(names(trustedKeys(p, q({ now: new Date(t(4).getTime() - 1000) }), first.memory)), 'CLOCK_ROLLBACK');
  const newer = trustedKeys(policy([rule('k', a.hex)], [], new Date(t(4).getTime() + 60_000)), q({ now: new Date(t(4).getTime() + 120_000) }), first.memory);
  assert.ok(newer.ok);
  assert.equal(names(trustedKeys(p, q({ now: new Date(t(4).getTime() + 180_000) }), newer.memory)), 'REVOCATION_ROLLBACK');
});

test('one key under two issuer labels is one signer: it cannot meet a threshold of two', () => {
  const p = policy([rule('alice', a.hex), rule('alice-alias', a.hex), rule('bob', b.hex)]);
  const r = trustedKeys(p, q());
  assert.ok(r.ok);
  assert.equal(r.keys.length, 2);
  const payload = Buffer.from('{}');
  const env = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: 'alice', privateKey: a.privateKey });
  const twice = { ...env, signatures: [env.signatures[0]!, { keyid: 'alice-alias', sig: env.signatures[0]!.sig }] };
  assert.throws(() => verifyEnvelope(Buffer.from(JSON.stringify(twice)), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: r.keys, threshold: 2 }), (e: unknown) => e instanceof DsseError && e.code === 'TOO_FEW_SIGNERS');
});

test('the policy is closed data: unknown fields and malformed keys are refused', () => {
  assert.equal(TrustPolicySchema.safeParse(policy([rule('k', a.hex)])).success, true);
  assert.equal(TrustPolicySchema.safeParse({ ...policy([rule('k', a.hex)]), trustEverything: true }).success, false);
  const withHint: unknown = { ...policy([]), signers: [{ ...rule('k', a.hex), keyIdHint: 'x' }] };
  assert.equal(TrustPolicySchema.safeParse(withHint).success, false);
  assert.equal(TrustPolicySchema.safeParse(policy([rule('k', a.hex.toUpperCase())])).success, false);
  assert.equal(TrustPolicySchema.safeParse(policy([rule('k', a.hex, { predicateTypes: [] })])).success, false);
});
