// Signed statements on a real stack (issue 13, item 1): the node-agent signs each World's isolation
// observation and decision, each Check run's execution record and each Collapse's receipt, as in-toto statements in DSSE
// envelopes with its node key, keeps them in its evidence store under their digests, and shows them on
// status, where anyone re-verifies them offline (`worldline evidence verify`) with keys from a trust
// policy — not from the node. A policy that does not trust the node's key, a status that says otherwise
// than what was signed, a swapped statement or a base that is not the one observed each fail by name.
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
import { collapseManifest, waitCollapse } from '../support/collapses.js';

const NODE = 'attest-node';
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));

describe('signed isolation statements', () => {
  let s: Stack;
  let world: Record<string, any>;

  before(async () => {
    s = await startStack({ nodeName: NODE });
    await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name: 'vm-only' }, spec: { roots: ['vm-root'], checks: [], isolation: { agent: { minimumLevel: 'vm-isolated', controls: ['network-denied'] } } } }));
    await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Policy', metadata: { name: 'checked' }, spec: { roots: ['chk-root'], checks: [{ name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' }], isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } } } }));
    for (const name of ['att-root', 'vm-root', 'chk-root']) {
      const p = join(s.scratch, name);
      mkdirSync(p, { mode: 0o755 });
      writeFileSync(join(p, 'a.txt'), 'alpha\n');
      chownSync(p, 1000, 1000);
      chownSync(join(p, 'a.txt'), 1000, 1000);
      if (name === 'chk-root') {
        mkdirSync(join(p, 'checks'));
        writeFileSync(join(p, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
        for (const f of ['checks', 'checks/verify.sh']) chownSync(join(p, f), 1000, 1000);
      }
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
  function verify(w: Record<string, any>, policy: string, kind: 'world' | 'check' | 'collapse' = 'world'): { code: number | null; out: string } {
    const file = join(s.scratch, `${kind}-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(w));
    const r = spawnSync(process.execPath, [CLI, 'evidence', 'verify', `--${kind}`, file, '--trust-policy', policy], { encoding: 'utf8' });
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

  test('a Check run\'s execution record is signed about its candidate and verifies offline; a status that says otherwise does not', async () => {
    const w = await runWorld(s, 'checked-w', shWorld(['chk-root'], 'echo ok > README.md'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    const check = await s.waitFor('Check checked-w-verify finished', async () => {
      const c = await getJson(s.cp, ['get', 'check', 'checked-w-verify', '-n', 'default', '-o', 'json']);
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 60_000);
    assert.equal(check.status.phase, 'Passed', JSON.stringify(check.status));
    const att = check.status.attestation;
    assert.match(att.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(readFileSync(join(s.storeDir, 'evidence', 'sha256', att.digest.slice('sha256:'.length)), 'utf8'), att.envelope);
    const policy = policyFile('checks', [{ key: nodeKeyHex(), types: [PREDICATE_TYPES.checkExecution] }]);
    const ok = verify(check, policy, 'check');
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /^OK checks\/default\/checked-w-verify: the execution record \(PASS\) is signed by node-key-0, trusted for node attest-node, about the candidate on status/);
    const tampered = (edit: (c: Record<string, any>) => void): Record<string, any> => {
      const c = JSON.parse(JSON.stringify(check)) as Record<string, any>;
      edit(c);
      return c;
    };
    const cases: [string, Record<string, any>, string, RegExp][] = [
      ['status says FAIL', tampered((c) => (c.status.verdict = 'FAIL')), policy, /STATUS_MISMATCH: status says verdict "FAIL"/],
      ['another candidate', tampered((c) => (c.status.subject = `sha256:${'0'.repeat(64)}`)), policy, /SUBJECT_MISMATCH: the record is about/],
      ['another requirement', tampered((c) => (c.status.requirementHash = `sha256:${'1'.repeat(64)}`)), policy, /STATUS_MISMATCH: status says requirementHash/],
      ['the key trusted for isolation statements only', check, policyFile('iso-only', [{ key: nodeKeyHex(), types: BOTH }]), /NO_TRUSTED_SIGNER: no key is trusted for the check execution record/],
    ];
    for (const [what, c, p, expected] of cases) {
      const r = verify(c, p, 'check');
      assert.equal(r.code, 1, `${what}: ${r.out}`);
      assert.match(r.out, expected, what);
    }
  });

  test('a Collapse\'s receipt is signed as a statement about itself and verifies offline against the status', async () => {
    await s.apply(collapseManifest('attested-c', 'attested'));
    assert.equal((await waitCollapse(s, 'attested-c', 30_000)).status.phase, 'Committed');
    const c = (await getJson(s.cp, ['get', 'collapse', 'attested-c', '-n', 'default', '-o', 'json']))!;
    assert.match(c.status.attestation.digest, /^sha256:[0-9a-f]{64}$/);
    const policy = policyFile('receipts', [{ key: nodeKeyHex(), types: [PREDICATE_TYPES.collapseReceipt] }]);
    const ok = verify(c, policy, 'collapse');
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /^OK collapses\/default\/attested-c: the receipt \(COMMITTED\) is signed by node-key-0, trusted for node attest-node, is the receipt on status/);
    const tampered = (edit: (x: Record<string, any>) => void): Record<string, any> => {
      const x = JSON.parse(JSON.stringify(c)) as Record<string, any>;
      edit(x);
      return x;
    };
    const denied = verify(tampered((x) => (x.status.decision = { authorized: false, reasons: ['CONFLICT'] })), policy, 'collapse');
    assert.equal(denied.code, 1, denied.out);
    assert.match(denied.out, /STATUS_MISMATCH: decision: status/);
    const other = verify(tampered((x) => (x.status.receipt.id = `sha256:${'2'.repeat(64)}`)), policy, 'collapse');
    assert.equal(other.code, 1, other.out);
    assert.match(other.out, /SUBJECT_MISMATCH: the signed receipt is sha256:[0-9a-f]{64}, not the receipt/);
  });
});
