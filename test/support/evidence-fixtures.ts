// Signed evidence for tests and benchmarks: an Ed25519 key with its issuer label, and the record of one
// passing check run (check-execution/v1) of World u-1's check `verify`, finished five minutes before `at`.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { digestOf } from '../../core/digest.js';
import type { CheckExecution } from '../../core/evidence/check-execution.js';

export interface NamedKey {
  issuer: string;
  privateKey: KeyObject;
  /** The raw public key as 64 hex characters (what a trust policy signer rule takes). */
  hex: string;
}

export function namedKey(issuer: string): NamedKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { issuer, privateKey, hex: Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex') };
}

/** A PASS run of check `verify` (Check default/w1-verify, uid c-1) of World u-1 on `subject`, 10 to 5 minutes before `at`. */
export function passingRun(at: Date, subject: string, over: Partial<CheckExecution> = {}): CheckExecution {
  const minute = 60_000;
  return {
    check: { namespace: 'default', name: 'w1-verify', uid: 'c-1' },
    world: { uid: 'u-1' },
    checkName: 'verify',
    subject,
    requirementHash: digestOf({ requirement: 'verify' }),
    verifierIdentity: digestOf({ verifier: 'npm test' }),
    executedVerifierIdentity: digestOf({ verifier: 'npm test' }),
    verdict: 'PASS',
    exit: { code: 0, signal: null, reason: 'exited' },
    startedAt: new Date(at.getTime() - 10 * minute).toISOString(),
    finishedAt: new Date(at.getTime() - 5 * minute).toISOString(),
    ...over,
  };
}
