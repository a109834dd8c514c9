// Collapse grants issued by the controller, on a real stack (issue 13, items 4 and 5): the trust policy
// pins a collapse-grant key for the node, so every authorized Collapse waits for the controller, which
// verifies the evidence graph (the World's signed observation and decision, the signed run of each check
// the Policy requires, on the candidate promoted) and signs a grant for that one transaction; the node-agent
// verifies the grant and spends it before the exchange. A graph the controller cannot verify, and a grant
// the node cannot verify, and a check run that lands after the grant (which the decision may then not rely
// on), each deny the Collapse by name with PRIME left as it was.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sha256Hex } from '../../core/digest.js';
import { IN_TOTO_PAYLOAD_TYPE, verifyEnvelope } from '../../core/evidence/dsse.js';
import type { CollapseGrantPredicate } from '../../core/evidence/collapse-grant.js';
import { PREDICATE_TYPES, parseStatement } from '../../core/evidence/statement.js';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startController } from '../support/controller-process.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson } from '../support/wait.js';
import { HOUR_MS, iso, issuerKey, writeTrustPolicy, type IssuerKey } from '../support/waivers.js';
import { applyRoot, describeRun, listTree, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

const NODE = 'grants-node';
const CHECK = { name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' };
const NODE_EVIDENCE = [PREDICATE_TYPES.isolationObservation, PREDICATE_TYPES.isolationDecision, PREDICATE_TYPES.checkExecution];

function policyManifest(name: string, root: string): string {
  return JSON.stringify({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'Policy',
    metadata: { name },
    spec: { roots: [root], checks: [CHECK], isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } } },
  });
}

/**
 * PRIME's bytes: each path with its type, mode, owner and content. Not its times or link counts: a check
 * run stages its verifiers from PRIME by hard link, which changes those without changing PRIME.
 */
function primeBytes(top: string): string {
  const h = createHash('sha256');
  for (const rel of listTree(top)) {
    const abs = join(top, rel);
    const st = lstatSync(abs);
    h.update(`${rel}\0${st.isDirectory() ? 'd' : st.isFile() ? 'f' : 'o'}\0${st.mode}\0${st.uid}:${st.gid}\0`);
    if (st.isFile()) h.update(readFileSync(abs));
    h.update('\n');
  }
  return h.digest('hex');
}

describe('collapse grants issued by the controller', () => {
  let s: Stack;
  const dir = mkdtempSync(join(tmpdir(), 'worldline-grants-'));
  const trustPath = join(dir, 'policy.json');
  const keyPath = join(dir, 'grant-key.pem');
  const grantKey = issuerKey();
  const rule = (issuer: string, publicKey: string, predicateTypes: string[]): TrustPolicy['signers'][number] => ({ issuer, publicKey, predicateTypes, nodes: [NODE], validFrom: iso(Date.now() - HOUR_MS), validUntil: iso(Date.now() + HOUR_MS) });
  const nodeKeyHex = (): string => Buffer.from(createPublicKey(readFileSync(join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem'), 'utf8')).export({ format: 'jwk' }).x ?? '', 'base64url').toString('hex');
  /** The node's key for its evidence (those predicate types), and `grants` for collapse grants. */
  const trust = (nodeTypes: string[] = NODE_EVIDENCE, grants: IssuerKey = grantKey): void => {
    writeTrustPolicy(trustPath, [rule('node', nodeKeyHex(), nodeTypes), rule('controller', grants.publicHex, [PREDICATE_TYPES.collapseGrant])]);
  };

  before(async () => {
    writeFileSync(keyPath, grantKey.privateKey.export({ format: 'pem', type: 'pkcs8' }));
    // Until the node's key exists, the policy pins the grant key only: collapses already need a grant.
    writeTrustPolicy(trustPath, [rule('controller', grantKey.publicHex, [PREDICATE_TYPES.collapseGrant])]);
    s = await startStack({ nodeName: NODE, agentArgs: ['--trust-policy', trustPath, '--grant-wait-seconds', '10'], controllerArgs: ['--trust-policy', trustPath, '--grant-key', keyPath] });
    trust();
  });
  after(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A Root under a Policy requiring check `verify` (passes when README.md says ok), and a World whose candidate passes it. */
  const checkedWorld = async (name: string): Promise<{ path: string; before: string }> => {
    const path = join(s.scratch, name);
    ownedDir(path);
    ownedDir(join(path, 'checks'));
    ownedFile(join(path, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
    ownedFile(join(path, 'README.md'), 'not yet\n');
    assert.equal((await applyRoot(s, name, path)).status.phase, 'Ready');
    await s.apply(policyManifest(`${name}-policy`, name));
    const w = await runWorld(s, `${name}-w`, shWorld([name], 'echo ok > README.md'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    const check = await s.waitFor(`Check ${name}-w-verify passed`, async () => {
      const c = await s.get('check', `${name}-w-verify`, 'default');
      return c?.status?.phase === 'Passed' && c.status.attestation ? c : undefined;
    }, 60_000);
    assert.ok(check);
    return { path, before: primeBytes(path) };
  };

  const collapse = async (name: string, world: string): Promise<Record<string, any>> => {
    await s.apply(collapseManifest(name, world));
    return waitCollapse(s, name, 60_000);
  };

  const deniedUnchanged = (c: Record<string, any>, reason: string, path: string, before: string): void => {
    assert.equal(c.status.phase, 'Denied', JSON.stringify(c.status));
    assert.equal(c.status.reason, reason, JSON.stringify(c.status));
    assert.deepEqual(c.status.decision.reasons, [reason]);
    assert.ok(c.status.receipt?.id, 'a denied transaction has its receipt');
    assert.equal(primeBytes(path), before, 'PRIME changed although the Collapse was denied');
  };

  test('the controller verifies the graph and signs a grant for the one transaction; the node spends it and commits', async () => {
    await checkedWorld('granted');
    const c = await collapse('granted-c', 'granted-w');
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    const g = c.status.grant;
    assert.equal(g.outcome, 'Issued', JSON.stringify(g));
    assert.equal(g.transaction, c.status.transaction.id);
    assert.deepEqual(g.roster, ['verify']);
    assert.deepEqual(g.evidence.map((n: { role: string; check?: string }) => `${n.role}${n.check ? `:${n.check}` : ''}`), ['isolation-observation', 'isolation-decision', 'check-execution:verify']);
    const world = (await s.get('world', 'granted-w', 'default'))!;
    const check = (await s.get('check', 'granted-w-verify', 'default'))!;
    assert.deepEqual(g.evidence.map((n: { digest: string }) => n.digest), [world.status.isolation.attestations.observation.digest, world.status.isolation.attestations.decision.digest, check.status.attestation.digest]);
    for (const n of g.evidence) assert.deepEqual(n.signers, ['node']);

    // The grant is a statement signed by the controller's key about exactly this transaction.
    assert.equal(g.digest, `sha256:${sha256Hex(g.envelope)}`);
    const verified = verifyEnvelope(Buffer.from(g.envelope), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: [{ keyId: 'controller', publicKey: Buffer.from(grantKey.publicHex, 'hex') }] });
    const p = parseStatement<CollapseGrantPredicate>(verified.payload, PREDICATE_TYPES.collapseGrant).predicate;
    assert.equal(p.about.transaction, c.status.transaction.id);
    assert.equal(p.about.collapse.uid, c.metadata.uid);
    assert.equal(p.world.uid, world.metadata.uid);
    assert.equal(p.node, NODE);
    assert.equal(p.candidate, world.status.candidate.digest);

    // Spent once in the node's grant store, under its id.
    const db = new Database(join(s.storeDir, 'grants.db'), { readonly: true });
    try {
      const row = db.prepare('SELECT bytes_digest FROM spent WHERE id_digest = ?').get(sha256Hex(`grant-id\n${p.grantId}`)) as { bytes_digest: string } | undefined;
      assert.ok(row, `grant ${p.grantId} is not in the grant store as spent`);
      assert.equal(row.bytes_digest, sha256Hex(verified.payload), 'the bytes spent are not the grant the controller signed');
    } finally {
      db.close();
    }
    const events = await getJson<{ items: { reason: string; involvedObject: { name: string } }[] }>(s.cp, ['get', 'events', '-n', 'default', '-o', 'json']);
    assert.ok(events?.items.some((e) => e.reason === 'GrantIssued' && e.involvedObject.name === 'granted-c'), 'no GrantIssued Event');

    // Returning to the checkpoint needs a grant too: an empty graph (PRIME's own bytes come back), no candidate.
    await s.apply(collapseManifest('granted-back', 'granted-w', 'CheckpointReturn'));
    const back = await waitCollapse(s, 'granted-back', 60_000);
    assert.equal(back.status.phase, 'Committed', JSON.stringify(back.status));
    assert.equal(back.status.grant.outcome, 'Issued');
    assert.equal(back.status.grant.transaction, back.status.transaction.id);
    assert.deepEqual(back.status.grant.evidence, []);
    const backGrant = parseStatement<CollapseGrantPredicate>(verifyEnvelope(Buffer.from(back.status.grant.envelope), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: [{ keyId: 'controller', publicKey: Buffer.from(grantKey.publicHex, 'hex') }] }).payload, PREDICATE_TYPES.collapseGrant).predicate;
    assert.equal(backGrant.mode, 'CheckpointReturn');
    assert.equal(backGrant.candidate, null);
    assert.deepEqual(backGrant.roster, []);
  });

  test('a graph whose check run is signed by a key the policy does not trust for check executions is refused EVIDENCE_UNTRUSTED', async () => {
    const { path, before } = await checkedWorld('untrusted');
    trust([PREDICATE_TYPES.isolationObservation, PREDICATE_TYPES.isolationDecision]);
    try {
      const c = await collapse('untrusted-c', 'untrusted-w');
      deniedUnchanged(c, 'EVIDENCE_UNTRUSTED', path, before);
      assert.equal(c.status.grant.outcome, 'Refused');
      assert.equal(c.status.grant.reason, 'EVIDENCE_UNTRUSTED');
      assert.match(c.status.grant.message, /check-execution shown by Check default\/untrusted-w-verify/);
      assert.equal(c.status.grant.envelope, undefined);
    } finally {
      trust();
    }
  });

  test('a grant signed by a key the node does not trust for grants is refused GRANT_UNTRUSTED on the node', async () => {
    const { path, before } = await checkedWorld('rogue');
    trust(NODE_EVIDENCE, issuerKey());
    try {
      const c = await collapse('rogue-c', 'rogue-w');
      deniedUnchanged(c, 'GRANT_UNTRUSTED', path, before);
      // The controller verified the graph and signed; the node refused what it signed.
      assert.equal(c.status.grant.outcome, 'Issued');
      assert.match(c.status.message, /does not verify on node grants-node/);
    } finally {
      trust();
    }
  });

  test('a run of a required check that lands after the grant is not relied on: GRANT_EVIDENCE_UNVERIFIED at the commit boundary', async () => {
    // The verifier passes while a host file (visible in the sandbox through the bound /etc) is absent, so a
    // second run of the same check on the same bytes fails: a real run, recorded and signed by the node.
    const marker = `/etc/worldline-test-grant-supersede-${process.pid}`;
    const path = join(s.scratch, 'late');
    ownedDir(path);
    ownedDir(join(path, 'checks'));
    ownedFile(join(path, 'checks', 'verify.sh'), `grep -q ok README.md && ! test -e ${marker}\n`);
    ownedFile(join(path, 'README.md'), 'not yet\n');
    assert.equal((await applyRoot(s, 'late', path)).status.phase, 'Ready');
    await s.apply(policyManifest('late-policy', 'late'));
    const w = await runWorld(s, 'late-w', shWorld(['late'], 'echo ok > README.md'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.waitFor('Check late-w-verify passed', async () => (await s.get('check', 'late-w-verify', 'default'))?.status?.phase === 'Passed', 60_000);
    const before = primeBytes(path);
    const flag = join(s.storeDir, 'test-hooks', 'after-authorized.paused');
    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: 'after-authorized:pause' } });
    try {
      await s.apply(collapseManifest('late-c', 'late-w'));
      await s.waitFor('the collapse paused after it was authorized', async () => existsSync(flag), 60_000);
      // The controller verified the graph as it stood (the passing run) and issued the grant.
      const issued = await s.waitFor('the grant issued', async () => {
        const c = await s.get('collapse', 'late-c', 'default');
        return c?.status?.grant?.outcome === 'Issued' ? c : undefined;
      }, 30_000);
      assert.deepEqual(issued.status.grant.evidence.filter((n: { role: string }) => n.role === 'check-execution').length, 1);
      // Then a newer run of the same check, on the same bytes, fails.
      writeFileSync(marker, 'fail\n', { mode: 0o644 });
      await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'late-w-rerun', namespace: 'default' }, spec: { worldRef: 'late-w', name: 'verify' } }));
      await s.waitFor('Check late-w-rerun failed', async () => (await s.get('check', 'late-w-rerun', 'default'))?.status?.phase === 'Failed', 60_000);
      rmSync(flag);
      const c = await waitCollapse(s, 'late-c');
      deniedUnchanged(c, 'GRANT_EVIDENCE_UNVERIFIED', path, before);
      assert.match(c.status.message, /the newest run of check verify \(evaluation \d+, FAIL, Check uid [0-9a-f-]+\) is not among the runs the controller verified/);
    } finally {
      rmSync(marker, { force: true });
      rmSync(flag, { force: true });
      await s.restartAgent({ signal: 'SIGTERM' });
    }
  });

  // Last: it replaces the stack's controller with one that holds no grant key.
  test('with no controller answering, an authorized Collapse waits its time and is denied GRANT_MISSING', async () => {
    const { path, before } = await checkedWorld('unanswered');
    await s.controller.kill('SIGTERM');
    await s.controller.waitExit();
    const keyless = await startController({ kubeconfig: s.cp.kubeconfigPath, identity: 'keyless-controller', extraArgs: ['--trust-policy', trustPath] });
    try {
      const c = await collapse('unanswered-c', 'unanswered-w');
      deniedUnchanged(c, 'GRANT_MISSING', path, before);
      assert.equal(c.status.grant, undefined);
      assert.match(c.status.message, /did not answer transaction .* within 10 s/);
    } finally {
      await keyless.kill('SIGTERM');
    }
  });
});
