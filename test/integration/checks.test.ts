// Checks on a real stack (kube-apiserver + etcd, controller, node-agent as root): when a World is
// Captured the controller creates one Check per check of the governing Policy, and the node-agent runs
// it on exactly the candidate's bytes with the verifiers staged from the World's base generation.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, checkedProject, checkFinished, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'proj-policy' },
  spec: {
    roots: ['proj'],
    checks: [{ name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' }],
    isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
  },
};

describe('checks on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'check-node' });
    await checkedProject(s, POLICY);
  });

  after(async () => {
    await s?.stop();
  });

  const finished = (name: string): Promise<Record<string, any>> => checkFinished(s, name, 45_000);

  test('a candidate that satisfies the check passes it, with the staged verifiers executed', async () => {
    const r = await runWorld(s, 'w-pass', shWorld(['proj'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const c = await finished('w-pass-verify');
    assert.equal(c.status.phase, 'Passed', JSON.stringify(c.status));
    assert.equal(c.status.verdict, 'PASS');
    assert.equal(c.spec.worldRef, 'w-pass');
    assert.equal(c.spec.name, 'verify');
    assert.equal(c.status.subject, r.status.candidate.digest);
    assert.match(c.status.requirementHash, /^sha256:/);
    assert.equal(c.status.executedVerifierIdentity, c.status.verifierIdentity);
    assert.equal(c.status.exit.code, 0);
    assert.ok(c.status.startedAt && c.status.finishedAt);
    assert.ok((c.metadata.ownerReferences ?? []).some((o: { uid: string }) => o.uid === r.uid), 'the Check is owned by its World');
    await s.waitFor('World w-pass CHECKS 1/1', async () => (await s.get('world', 'w-pass', 'default'))?.status?.checksSummary === '1/1');
  });

  test("a candidate that rewrites the verifier is checked by PRIME's verifier and fails", async () => {
    const r = await runWorld(s, 'w-cheat', shWorld(['proj'], "printf 'exit 0\\n' > checks/verify.sh && echo bad > README.md"));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const c = await finished('w-cheat-verify');
    assert.equal(c.status.phase, 'Failed', JSON.stringify(c.status));
    assert.equal(c.status.verdict, 'FAIL');
    assert.equal(c.status.executedVerifierIdentity, c.status.verifierIdentity);
    assert.notEqual(c.status.exit.code, 0);
    await s.waitFor('World w-cheat CHECKS 0/1', async () => (await s.get('world', 'w-cheat', 'default'))?.status?.checksSummary === '0/1');
  });

  test('a Policy with no isolation rule for the check stage gets its checks refused (unsupported), not run', async () => {
    const bare = join(s.scratch, 'bare');
    ownedDir(bare);
    ownedDir(join(bare, 'checks'));
    ownedFile(join(bare, 'checks', 'verify.sh'), 'exit 0\n');
    const root = await applyRoot(s, 'bare', bare);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await s.apply(JSON.stringify({ ...POLICY, metadata: { name: 'bare-policy' }, spec: { ...POLICY.spec, roots: ['bare'], isolation: { agent: POLICY.spec.isolation.agent } } }));
    const r = await runWorld(s, 'w-bare', shWorld(['bare'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const c = await finished('w-bare-verify');
    assert.equal(c.status.phase, 'Refused', JSON.stringify(c.status));
    assert.equal(c.status.reason, 'ISOLATION_INSUFFICIENT');
    assert.match(c.status.message, /isolation decision unsupported/);
  });
});
