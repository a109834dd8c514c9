// Worlds the node-agent refuses at launch, by name, on a real stack (kube-apiserver + etcd, controller,
// node-agent as root): a Root whose top directory belongs to a host uid the world's 0-65535 ids cannot
// map, with no spec.agent.runAsUser (RUN_AS_USER_UNMAPPABLE); and an Allowlist entry the CRD schema
// admits but the proxy's parser refuses (NETWORK_POLICY_INVALID). Neither World's agent runs; the same
// Worlds with the field made right do run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { getJson } from '../support/wait.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld, worldCgroupExists } from '../support/worlds.js';

const OWNER = 1000;
/** A host uid above the world's id range (0-65535): the agent could never act as it inside. */
const FOREIGN_OWNER = 70_000;

describe('launch refusals on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'launch-node' });
    const proj = join(s.scratch, 'proj');
    ownedDir(proj, OWNER);
    ownedFile(join(proj, 'a.txt'), 'alpha\n', OWNER);
    const foreign = join(s.scratch, 'foreign');
    ownedDir(foreign, FOREIGN_OWNER);
    ownedFile(join(foreign, 'a.txt'), 'alpha\n', OWNER);
    for (const [name, path] of [['proj', proj], ['foreign', foreign]] as const) {
      const root = await applyRoot(s, name, path);
      assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    }
  });

  after(async () => {
    await s?.stop();
  });

  async function warningReasons(world: string): Promise<string[]> {
    const list = await getJson<{ items: { reason?: string; type?: string; involvedObject?: { name?: string; kind?: string } }[] }>(s.cp, ['get', 'events', '-n', 'default']);
    return (list?.items ?? []).filter((e) => e.involvedObject?.kind === 'World' && e.involvedObject.name === world && e.type === 'Warning').map((e) => e.reason ?? '');
  }

  test('a Root owned by a uid outside the world\'s range, without runAsUser, refuses the World with RUN_AS_USER_UNMAPPABLE', async () => {
    const r = await runWorld(s, 'unmappable', shWorld(['foreign'], 'echo ran'));
    assert.equal(r.status.phase, 'Refused', describeRun(r));
    assert.equal(r.status.reason, 'RUN_AS_USER_UNMAPPABLE', describeRun(r));
    assert.match(r.status.message, new RegExp(`would run as ${FOREIGN_OWNER}:${FOREIGN_OWNER}.*set spec\\.agent\\.runAsUser`));
    assert.doesNotMatch(r.output, /ran/, 'the agent did not run');
    await s.waitFor('a RUN_AS_USER_UNMAPPABLE warning Event on the World', async () => (await warningReasons('unmappable')).includes('RUN_AS_USER_UNMAPPABLE'), 15_000);

    // The same Root with a runAsUser the world can map (the message's advice) runs as that uid and is
    // captured: the Root's top directory keeps its unmappable owner, unchanged.
    const ok = await runWorld(s, 'mappable', shWorld(['foreign'], 'echo "ID $(id -u)"', { agent: { runAsUser: OWNER } }));
    assert.notEqual(ok.status.reason, 'RUN_AS_USER_UNMAPPABLE', describeRun(ok));
    assert.match(ok.output, new RegExp(`^ID ${OWNER}$`, 'm'), describeRun(ok));
    assert.equal(ok.status.phase, 'Captured', describeRun(ok));
    await s.waitFor('the launched World torn down (its cgroup removed)', async () => !worldCgroupExists(ok.uid), 30_000);
  });

  test('an Allowlist entry the schema admits but the parser refuses (127.1:80, an IPv4 shorthand) refuses the World with NETWORK_POLICY_INVALID', async () => {
    const r = await runWorld(s, 'shorthand', shWorld(['proj'], 'echo ran', { network: { policy: 'Allowlist', allow: ['api.example.com:443', '127.1:80'] } }));
    assert.equal(r.status.phase, 'Refused', describeRun(r));
    assert.equal(r.status.reason, 'NETWORK_POLICY_INVALID', describeRun(r));
    assert.match(r.status.message, /spec\.network\.allow: allowlist entry "127\.1": a numeric last label/);
    assert.doesNotMatch(r.output, /ran/, 'the agent did not run');
    await s.waitFor('a NETWORK_POLICY_INVALID warning Event on the World', async () => (await warningReasons('shorthand')).includes('NETWORK_POLICY_INVALID'), 15_000);

    // The same World with the entry spelled as a dotted quad is launched.
    const ok = await runWorld(s, 'dotted', shWorld(['proj'], 'echo ran', { network: { policy: 'Allowlist', allow: ['api.example.com:443', '127.0.0.1:80'] } }));
    assert.equal(ok.status.phase, 'Captured', describeRun(ok));
    assert.match(ok.output, /^ran$/m);
    await s.waitFor('the launched World torn down (its cgroup removed)', async () => !worldCgroupExists(ok.uid), 30_000);
  });
});
