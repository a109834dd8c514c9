// Isolation waivers for tests: an issuer key pair, a trust policy file that trusts it for waivers, and
// waivers it signs (as `worldline waiver sign` does), for World namespace/name.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../../core/evidence/dsse.js';
import { worldRefSubject, type IsolationWaiver } from '../../core/evidence/isolation-waiver.js';
import { PREDICATE_TYPES, statementBytes } from '../../core/evidence/statement.js';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';

export const HOUR_MS = 3_600_000;
export const iso = (ms: number): string => new Date(ms).toISOString();

export interface IssuerKey {
  privateKey: KeyObject;
  /** The raw public key as 64 hex characters (what a signer rule takes). */
  publicHex: string;
}

export function issuerKey(): IssuerKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicHex: Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex') };
}

/** A signer rule valid from a day ago to a day ahead. */
export function signerRule(issuer: string, key: IssuerKey, predicateType: string = PREDICATE_TYPES.isolationWaiver): TrustPolicy['signers'][number] {
  const now = Date.now();
  return { issuer, publicKey: key.publicHex, predicateTypes: [predicateType], validFrom: iso(now - 24 * HOUR_MS), validUntil: iso(now + 24 * HOUR_MS) };
}

/** Writes a trust policy with these signer rules and a fresh revocation snapshot. */
export function writeTrustPolicy(path: string, signers: TrustPolicy['signers'], revokedGrants: string[] = []): void {
  const policy: TrustPolicy = { signers, revocations: { issuedAt: iso(Date.now() - 1000), maxAgeSeconds: 3600, revokedPublicKeys: [], revokedGrants } };
  writeFileSync(path, JSON.stringify(policy));
}

/** A signed waiver (the envelope's JSON text) for World default/`name`, waiving network-denied for an hour. */
export function signWaiver(name: string, key: KeyObject, over: Partial<IsolationWaiver> = {}, subjectOf: IsolationWaiver['world'] = over.world ?? { namespace: 'default', name }): string {
  const now = Date.now();
  const w: IsolationWaiver = {
    grantId: `grant-${name}-${now}`,
    world: { namespace: 'default', name },
    stage: 'agent',
    waivedControls: ['network-denied'],
    notBefore: iso(now - 60_000),
    notAfter: iso(now + HOUR_MS),
    reason: `the ${name} job needs the host network`,
    ...over,
  };
  return JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(worldRefSubject(subjectOf), PREDICATE_TYPES.isolationWaiver, w), { keyId: 'any-name', privateKey: key }));
}
