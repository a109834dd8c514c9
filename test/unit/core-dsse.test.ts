// DSSE envelopes as evidence: signed and verified with real Ed25519 keys; trust only from the keys the
// verifier brings; every malformed, oversize, relabelled, substituted or alias-inflated envelope refused
// with its own code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { DsseError, IN_TOTO_PAYLOAD_TYPE, pae, signEnvelope, verifyEnvelope, type Envelope, type TrustedKey } from '../../core/evidence/dsse.js';
import { outcomeOf } from '../support/error-code.js';

function keyPair(keyId: string): { keyId: string; privateKey: KeyObject; trusted: TrustedKey } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
  return { keyId, privateKey, trusted: { keyId, publicKey: Buffer.from(x, 'base64url') } };
}

const alice = keyPair('alice');
const bob = keyPair('bob');
const mallory = keyPair('mallory');
const payload = Buffer.from('{"_type":"https://in-toto.io/Statement/v1"}');
const bytes = (e: unknown): Buffer => Buffer.from(JSON.stringify(e));
const codeOf = (f: () => unknown): string => outcomeOf(f, DsseError);
const verify = (e: unknown, trusted: TrustedKey[] = [alice.trusted], more: { threshold?: number } = {}) => verifyEnvelope(Buffer.isBuffer(e) ? e : bytes(e), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted, ...more });

test('PAE is the DSSE v1 encoding (the specification\'s example)', () => {
  assert.equal(pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString(), 'DSSEv1 29 http://example.com/HelloWorld 11 hello world');
});

test('a signed envelope verifies to its exact payload bytes and the verifier\'s name for the key, not the envelope\'s', () => {
  const env = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: 'whatever-the-signer-says', privateKey: alice.privateKey });
  const v = verify(env);
  assert.deepEqual(Buffer.from(v.payload), payload);
  assert.deepEqual(v.keyIds, ['alice']);
});

test('trust comes only from the verifier\'s keys: a keyid naming a trusted key does not make an untrusted signature count', () => {
  const forged = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: 'alice', privateKey: mallory.privateKey });
  assert.equal(codeOf(() => verify(forged)), 'NO_TRUSTED_SIGNATURE');
  // Mallory's signature next to Alice's is ignored; Alice's still counts.
  const both: Envelope = { ...forged, signatures: [...forged.signatures, ...signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, alice).signatures] };
  assert.deepEqual(verify(both).keyIds, ['alice']);
});

test('payload type confusion, a substituted payload and truncation are refused', () => {
  const env = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, alice);
  assert.equal(codeOf(() => verifyEnvelope(bytes(env), { payloadType: 'application/json', trusted: [alice.trusted] })), 'PAYLOAD_TYPE_MISMATCH');
  // Relabelled to what the verifier expects: the PAE binds the type, so the signature no longer holds.
  const signedAsOther = signEnvelope('application/json', payload, alice);
  assert.equal(codeOf(() => verify({ ...signedAsOther, payloadType: IN_TOTO_PAYLOAD_TYPE })), 'NO_TRUSTED_SIGNATURE');
  assert.equal(codeOf(() => verify({ ...env, payload: Buffer.from('{"_type":"other"}').toString('base64') })), 'NO_TRUSTED_SIGNATURE');
  const whole = bytes(env);
  assert.equal(codeOf(() => verify(whole.subarray(0, whole.length - 3))), 'ENVELOPE_INVALID');
});

test('non-canonical base64, unknown or duplicate fields, a bad signature length, oversize input are refused by name', () => {
  const env = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, alice);
  const sig = env.signatures[0]!.sig;
  assert.ok(env.payload.endsWith('='), 'the payload\'s length makes padding');
  assert.equal(codeOf(() => verify({ ...env, payload: env.payload.replace(/=+$/, '') })), 'BASE64_NON_CANONICAL');
  assert.equal(codeOf(() => verify({ ...env, payload: `${env.payload}\n` })), 'BASE64_NON_CANONICAL');
  assert.equal(codeOf(() => verify({ ...env, signatures: [{ sig: sig.replace(/=+$/, '') }] })), 'BASE64_NON_CANONICAL');
  // The same 64 bytes, spelled with non-zero trailing bits in the last character before the padding.
  const last = sig.slice(-3, -2);
  const sibling = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.indexOf(last) ^ 1;
  const respelled = `${sig.slice(0, -3)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'[sibling]}${sig.slice(-2)}`;
  assert.deepEqual(Buffer.from(respelled, 'base64'), Buffer.from(sig, 'base64'));
  assert.equal(codeOf(() => verify({ ...env, signatures: [{ sig: respelled }] })), 'BASE64_NON_CANONICAL');
  assert.equal(codeOf(() => verify({ ...env, extension: { trust: 'me' } })), 'ENVELOPE_INVALID');
  assert.equal(codeOf(() => verify({ ...env, signatures: [{ sig, keyid: 'alice', cert: 'x' }] })), 'ENVELOPE_INVALID');
  const dup = Buffer.from(`{"payloadType":"${IN_TOTO_PAYLOAD_TYPE}","payload":"${env.payload}","payload":"e30=","signatures":[{"sig":"${sig}"}]}`);
  assert.equal(codeOf(() => verify(dup)), 'ENVELOPE_INVALID');
  assert.equal(codeOf(() => verify({ ...env, signatures: [{ sig: Buffer.alloc(63).toString('base64') }] })), 'ENVELOPE_INVALID');
  assert.equal(codeOf(() => verifyEnvelope(bytes(env), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: [alice.trusted], limits: { maxEnvelopeBytes: 64, maxPayloadBytes: 64, maxSignatures: 8, maxDepth: 4 } })), 'ENVELOPE_TOO_LARGE');
  assert.equal(codeOf(() => verifyEnvelope(bytes(env), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: [alice.trusted], limits: { maxEnvelopeBytes: 4096, maxPayloadBytes: 8, maxSignatures: 8, maxDepth: 4 } })), 'PAYLOAD_TOO_LARGE');
  assert.equal(codeOf(() => verify({ ...env, signatures: Array.from({ length: 9 }, () => ({ sig })) })), 'ENVELOPE_INVALID');
});

test('distinct signers: an alias of one key cannot count twice toward a threshold; two keys can', () => {
  const a = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, alice);
  const twice: Envelope = { ...a, signatures: [a.signatures[0]!, { keyid: 'alice-again', sig: a.signatures[0]!.sig }] };
  const aliased = [alice.trusted, { keyId: 'alice-again', publicKey: alice.trusted.publicKey }];
  assert.equal(codeOf(() => verify(twice, aliased, { threshold: 2 })), 'TOO_FEW_SIGNERS');
  assert.deepEqual(verify(twice, aliased).keyIds, ['alice']);
  const ab: Envelope = { ...a, signatures: [...a.signatures, ...signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, bob).signatures] };
  assert.deepEqual(verify(ab, [alice.trusted, bob.trusted], { threshold: 2 }).keyIds, ['alice', 'bob']);
});
