// Signed isolation statements on a real stack (issue 13, item 1): the node-agent signs each World's
// isolation observation and decision as in-toto statements in DSSE envelopes with its node key, keeps
// them in its evidence store under their digests, and shows them on the World's status, where anyone
// re-verifies them offline (`worldline evidence verify`) with keys from a trust policy — not from the
// node. A policy that does not trust the node's key, a status that says otherwise than what was signed,
// a swapped statement or a base that is not the one observed each fail by name.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREDICATE_TYPES } from '../../core/evidence/statement.js';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson } from '../support/wait.js';
import { issuerKey } from '../support/waivers.js';
import { applyRoot, describeRun, runWorld, shWorld } from '../support/worlds.js';

const NODE = 'attest-node';
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));

describe('signed isolation statements', () => {
  let s: Stack;
  let world: Record<string, any>;

  before(async () => {
    s = await startStack({ nodeName: NODE });
    await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name: 'vm-only' }, spec: { roots: ['vm-root'], checks: [], isolation: { agent: { minimumLevel: 'vm-isolated', controls: ['network-denied'] } } } }));
    for (const name of ['att-root', 'vm-root']) {
      const p = join(s.scratch, name);
      mkdirSync(p, { mode: 0o755 });
      writeFileSync(join(p, 'a.txt'), 'alpha\n');
      chownSync(p, 1000, 1000);
      chownSync(join(p, 'a.txt'), 1000, 1000);
      assert.equal((await applyRoot(s, name, p)).status.phase, 'Ready');
    }
    const r = await runWorld(s, 'attested', shWorld(['att-root'], 'echo ran'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    world = (await getJson(s.cp, ['get', 'world', 'attested', '-n', 'default', '-o', 'json']))!;
  });
  after(async () => {
    await s?.stop();
  });

  const nodeKeyHex = (): string => Buffer.from(createPublicKey(readFileSync(join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem'), 'utf8')).export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex');
  function policyFile(name: string, rules: { key: string; types: string[]; nodes?: string[] }[]): string {
    const now = Date.now();
    const policy: TrustPolicy = {
      signers: rules.map((r, i) => ({ issuer: `node-key-${i}`, publicKey: r.key, predicateTypes: r.types, nodes: r.nodes ?? [NODE], validFrom: new Date(now - 86_400_000).toISOString(), validUntil: new Date(now + 86_400_000).toISOString() })),
      revocations: { issuedAt: new Date(now - 1000).toISOString(), maxAgeSeconds: 3600, revokedPublicKeys: [] },
    };
    const path = join(s.scratch, `${name}.json`);
    writeFileSync(path, JSON.stringify(policy));
    return path;
  }
  const BOTH = [PREDICATE_TYPES.isolationObservation, PREDICATE_TYPES.isolationDecision];
  function verify(w: Record<string, any>, policy: string): { code: number | null; out: string } {
    const file = join(s.scratch, `world-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(w));
    const r = spawnSync(process.execPath, [CLI, 'evidence', 'verify', '--world', file, '--trust-policy', policy], { encoding: 'utf8' });
    return { code: r.status, out: r.stdout + r.stderr };
  }
  const edited = (edit: (w: Record<string, any>) => void): Record<string, any> => {
    const w = JSON.parse(JSON.stringify(world)) as Record<string, any>;
    edit(w);
    return w;
  };

  test('the observation and decision are on status, signed, and kept in the evidence store under their digests', () => {
    const att = world.status.isolation.attestations;
    for (const which of ['observation', 'decision']) {
      assert.match(att[which].digest, /^sha256:[0-9a-f]{64}$/);
      const stored = readFileSync(join(s.storeDir, 'evidence', 'sha256', att[which].digest.slice('sha256:'.length)), 'utf8');
      assert.equal(stored, att[which].envelope, `the stored ${which} is not the one on status`);
      assert.equal(JSON.parse(att[which].envelope).payloadType, 'application/vnd.in-toto+json');
    }
  });

  test('with the node key trusted for both predicate types, the World verifies offline; a refused World\'s decision verifies too', async () => {
    const policy = policyFile('trusted', [{ key: nodeKeyHex(), types: BOTH }]);
    const ok = verify(world, policy);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /^OK worlds\/default\/attested: the isolation observation and decision \(reported-sufficient\) are signed by node-key-0, trusted for node attest-node/);
    const refused = await runWorld(s, 'vm-refused', shWorld(['vm-root'], 'echo ran'));
    assert.equal(refused.status.reason, 'ISOLATION_INSUFFICIENT', describeRun(refused));
    const r = verify((await getJson(s.cp, ['get', 'world', 'vm-refused', '-n', 'default', '-o', 'json']))!, policy);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\(rejected\)/);
  });

  test('keys from elsewhere, a status that says otherwise, a swapped statement or another base fail by name', () => {
    const trusted = policyFile('trusted2', [{ key: nodeKeyHex(), types: BOTH }]);
    const cases: [string, Record<string, any>, string, RegExp][] = [
      ['another key trusted', world, policyFile('other-key', [{ key: issuerKey().publicHex, types: BOTH }]), /FAIL default\/attested: NO_TRUSTED_SIGNATURE: the observation/],
      ['the key trusted for observations only', world, policyFile('obs-only', [{ key: nodeKeyHex(), types: [PREDICATE_TYPES.isolationObservation] }]), /NO_TRUSTED_SIGNER: no key is trusted for the decision/],
      ['the key trusted for another node', world, policyFile('other-node', [{ key: nodeKeyHex(), types: BOTH, nodes: ['other-node'] }]), /NO_TRUSTED_SIGNER: no key is trusted for the observation on node attest-node/],
      ['status claims another outcome', edited((w) => (w.status.isolation.decision.outcome = 'rejected')), trusted, /STATUS_MISMATCH: status says rejected/],
      ['status claims other controls', edited((w) => w.status.isolation.observation.enforcedControls.pop()), trusted, /STATUS_MISMATCH: status says level/],
      ['the decision in the observation\'s place', edited((w) => (w.status.isolation.attestations.observation = w.status.isolation.attestations.decision)), trusted, /PREDICATE_TYPE_MISMATCH/],
      ['another base on status', edited((w) => (w.status.base[0].generation = 7)), trusted, /SUBJECT_MISMATCH: the observation is about/],
      ['no statements', edited((w) => delete w.status.isolation.attestations), trusted, /ATTESTATION_MISSING/],
    ];
    for (const [what, w, policy, expected] of cases) {
      const r = verify(w, policy);
      assert.equal(r.code, 1, `${what}: ${r.out}`);
      assert.match(r.out, expected, what);
    }
  });
});
