// The controller's collapse grant key: an Ed25519 private key in PKCS#8 PEM (the chart mounts it from a
// Secret only the controller reads). Its public key must be pinned in the trust policy for the predicate
// https://worldline.dev/attestations/collapse-grant/v1, or no node-agent accepts what it signs.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface GrantKey {
  issuer: string;
  privateKey: KeyObject;
  /** The raw public key as 64 lowercase hex characters (what a trust policy signer rule takes). */
  publicHex: string;
}

export function loadGrantKey(path: string, issuer: string): GrantKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(readFileSync(path));
  } catch (e) {
    throw new Error(`the grant key ${path} cannot be read as a PEM private key: ${(e as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`the grant key ${path} is a ${privateKey.asymmetricKeyType ?? 'unknown'} key, not Ed25519`);
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x ?? '';
  return { issuer, privateKey, publicHex: Buffer.from(x, 'base64url').toString('hex') };
}
