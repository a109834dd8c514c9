// A Policy check with the private-evaluator-v1 profile, on a real stack (kube-apiserver + etcd, controller,
// node-agent as root): the controller creates its Check when the World is Captured, and the node-agent,
// which does not run that profile yet, refuses it by name (CHECK_PROFILE_UNSUPPORTED) without running
// it, while the Policy's legacy check on the same candidate runs and passes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

const ISOLATION = { minimumLevel: 'os-sandboxed', controls: ['network-denied'] };
const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'proj-policy' },
  spec: {
    roots: ['proj'],
    checks: [
      { name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' },
      { name: 'examine', command: ['/bin/sh', 'checks/examine.sh'], verifiers: ['checks/**'], timeout: '1m', profile: 'private-evaluator-v1', reportFormat: 'junit' },
    ],
    isolation: { agent: ISOLATION, check: ISOLATION },
  },
};

describe('a check profile the node-agent does not run', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'profile-node' });
    const proj = join(s.scratch, 'proj');
    ownedDir(proj);
    ownedDir(join(proj, 'checks'));
    ownedFile(join(proj, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
    ownedFile(join(proj, 'checks', 'examine.sh'), 'echo EXAMINED; exit 0\n');
    ownedFile(join(proj, 'README.md'), 'not yet\n');
    const root = await applyRoot(s, 'proj', proj);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await s.apply(JSON.stringify(POLICY));
  });

  after(async () => {
    await s?.stop();
  });

  const finished = (name: string): Promise<Record<string, any>> =>
    s.waitFor(`Check ${name} finished`, async () => {
      const c = await s.get('check', name, 'default');
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 60_000);

  test('the private-evaluator-v1 Check is Refused with CHECK_PROFILE_UNSUPPORTED and never runs; the legacy Check passes', async () => {
    const r = await runWorld(s, 'w', shWorld(['proj'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));

    const examine = await finished('w-examine');
    assert.equal(examine.spec.name, 'examine');
    assert.equal(examine.status.phase, 'Refused', JSON.stringify(examine.status));
    assert.equal(examine.status.verdict, 'REFUSED');
    assert.equal(examine.status.reason, 'CHECK_PROFILE_UNSUPPORTED', JSON.stringify(examine.status));
    assert.match(examine.status.message, /profile private-evaluator-v1 is not run by this node-agent/);
    assert.equal(examine.status.exit, undefined, 'the refused check did not run');
    assert.equal(examine.status.startedAt, undefined, 'the refused check never started');

    const verify = await finished('w-verify');
    assert.equal(verify.status.phase, 'Passed', JSON.stringify(verify.status));
    assert.equal(verify.status.subject, r.status.candidate.digest);
  });
});
