// The controller's grant key flags: absent by default; an absolute path, and only with a trust policy
// (the evidence graph is verified against it); the issuer label is a plain name; the key file must hold an
// Ed25519 private key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../controller/config.js';
import { loadGrantKey } from '../../controller/evidence/grant-key.js';

test('--grant-key: off by default, needs an absolute path and --trust-policy; --grant-issuer labels it', () => {
  const none = parseConfig([], {});
  assert.equal(none.grantKey, undefined);
  assert.equal(none.grantIssuer, 'worldline-controller');
  const on = parseConfig(['--trust-policy', '/etc/t/policy.json', '--grant-key', '/etc/g/grant-key.pem', '--grant-issuer', 'ctl-2026'], {});
  assert.equal(on.grantKey, '/etc/g/grant-key.pem');
  assert.equal(on.grantIssuer, 'ctl-2026');
  assert.equal(parseConfig(['--trust-policy', '/t.json'], { WORLDLINE_GRANT_KEY: '/k.pem' }).grantKey, '/k.pem');
  assert.throws(() => parseConfig(['--grant-key', '/etc/g/grant-key.pem'], {}), /--grant-key needs --trust-policy/);
  assert.throws(() => parseConfig(['--trust-policy', '/t.json', '--grant-key', 'relative.pem'], {}), /--grant-key must be an absolute file path/);
  assert.throws(() => parseConfig(['--grant-issuer', 'a b'], {}), /--grant-issuer must be/);
});

test('the grant key file: an Ed25519 PKCS#8 PEM key loads with its raw public key; another kind of key or a non-key is refused by name', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-grant-key-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const good = join(dir, 'ed.pem');
  writeFileSync(good, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const k = loadGrantKey(good, 'ctl');
  assert.equal(k.issuer, 'ctl');
  assert.equal(k.publicHex, Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex'));
  const rsa = join(dir, 'rsa.pem');
  writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
  assert.throws(() => loadGrantKey(rsa, 'ctl'), /is a rsa key, not Ed25519/);
  const junk = join(dir, 'junk.pem');
  writeFileSync(junk, 'not a key\n');
  assert.throws(() => loadGrantKey(junk, 'ctl'), /cannot be read as a PEM private key/);
});
