// Checks and Collapses bound to one World's uid, on a real stack (kube-apiserver + etcd, controller,
// node-agent as root). One created before its World shows the wait as phase Waiting and acts on the World
// once it appears, recording its uid in spec.worldUID. Once bound, a World of the same name with another
// uid is never acted on: the controller refuses the dependent by name (WORLD_DELETED, then WORLD_REPLACED)
// while no node has it, and the node-agent refuses one it was handed before the World was replaced (the
// replacement happened while the controller and the node-agent were both down; the replacement gets its
// own required Check in place of the old World's). PRIME stays where it was.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { startController, type ControllerProcess } from '../support/controller-process.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { condition, kc } from '../support/wait.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld, worldManifest } from '../support/worlds.js';

const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'bind-policy' },
  spec: {
    roots: ['bind'],
    checks: [{ name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' }],
    isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
  },
};

function checkManifest(name: string, worldRef: string): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name, namespace: 'default' }, spec: { worldRef, name: 'verify' } });
}

describe('Checks and Collapses bound to their World', () => {
  let s: Stack;
  let hostReadme: string;
  let secondController: ControllerProcess | undefined;

  before(async () => {
    s = await startStack({ nodeName: 'binding-node' });
    const dir = join(s.scratch, 'bind');
    ownedDir(dir);
    ownedDir(join(dir, 'checks'));
    ownedFile(join(dir, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
    ownedFile(join(dir, 'README.md'), 'not yet\n');
    hostReadme = join(dir, 'README.md');
    const root = await applyRoot(s, 'bind', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await s.apply(JSON.stringify(POLICY));
  });

  after(async () => {
    await secondController?.kill('SIGTERM');
    await s?.stop();
  });

  const get = (kind: string, name: string) => s.get(kind, name, 'default');
  const inPhase = (kind: string, name: string, phase: string, reason: string, timeoutMs = 30_000): Promise<Record<string, any>> =>
    s.waitFor(`${kind} ${name} ${phase} ${reason}`, async () => {
      const o = await get(kind, name);
      return o?.status?.phase === phase && o.status.reason === reason ? o : undefined;
    }, timeoutMs).catch(async (e: Error) => {
      throw new Error(`${e.message}; it is at ${JSON.stringify((await get(kind, name))?.status)}`, { cause: e });
    });
  const checkFinished = (name: string): Promise<Record<string, any>> =>
    s.waitFor(`Check ${name} finished`, async () => {
      const c = await get('check', name);
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 45_000);
  const prime = async (): Promise<{ generation: number; digest: string; readme: string }> => {
    const r = await s.get('root', 'bind');
    return { generation: r?.status?.generation, digest: r?.status?.digest, readme: readFileSync(hostReadme, 'utf8') };
  };

  test('created before its World, a Check and a Collapse wait (phase Waiting), then bind to the World and act on it', async () => {
    await s.apply(checkManifest('early-check', 'late'));
    await s.apply(collapseManifest('early-col', 'late'));
    for (const kind of ['check', 'collapse']) {
      const o = await inPhase(kind, `early-${kind === 'check' ? 'check' : 'col'}`, 'Waiting', 'WORLD_NOT_FOUND');
      assert.match(o.status.message, /World "late" does not exist/);
      assert.equal(o.spec.worldUID, undefined);
      assert.equal(o.status.nodeName, undefined);
      assert.equal(condition(o, 'WorldFound')?.reason, 'WorldNotFound');
    }

    // The workload sleeps, so the Collapse reaches the node (at binding) well before a candidate exists.
    const late = await runWorld(s, 'late', shWorld(['bind'], 'sleep 4; echo ok > README.md'));
    assert.equal(late.status.phase, 'Captured', describeRun(late));

    const check = await checkFinished('early-check');
    assert.equal(check.spec.worldUID, late.uid);
    assert.equal(check.status.phase, 'Passed', JSON.stringify(check.status));
    assert.equal(check.status.subject, late.status.candidate.digest);
    assert.equal(check.status.nodeName, s.nodeName);

    const col = await waitCollapse(s, 'early-col', 30_000);
    assert.equal(col.spec.worldUID, late.uid);
    assert.equal(col.status.nodeName, s.nodeName);
    // The node-agent took it as soon as the World was bound (the phase Waiting is gone): a transaction and
    // a receipt, denied because the World had no candidate yet.
    assert.equal(col.status.phase, 'Denied', JSON.stringify(col.status));
    assert.deepEqual(col.status.decision?.reasons, ['CANDIDATE_MISSING']);
    assert.ok(col.status.transaction?.id && col.status.receipt?.id, JSON.stringify(col.status));
    assert.ok((col.metadata.ownerReferences ?? []).some((o: { uid: string }) => o.uid === late.uid), 'owned by the World it is bound to');
  });

  test('bound to a World that is deleted and replaced, a Check and a Collapse are refused by name and PRIME is untouched', async () => {
    // World A names a Root that does not exist, so it is never bound to a node (and has no finalizer).
    await s.apply(worldManifest('swap', shWorld(['no-such-root'], 'true')));
    const a = await s.waitWorld('swap', ['Pending']);
    await s.apply(checkManifest('swap-check', 'swap'));
    await s.apply(collapseManifest('swap-col', 'swap'));
    for (const [kind, name] of [['check', 'swap-check'], ['collapse', 'swap-col']] as const) {
      const o = await inPhase(kind, name, 'Waiting', 'WORLD_NOT_BOUND');
      assert.equal(o.spec.worldUID, a.metadata.uid, `${name} is bound to World A`);
    }

    await kc(s.cp, ['delete', 'world', 'swap', '--wait=true', '--timeout=30s']);
    const deletedCol = await inPhase('collapse', 'swap-col', 'Denied', 'WORLD_DELETED');
    assert.equal(condition(deletedCol, 'WorldFound')?.reason, 'WorldDeleted');
    const deletedCheck = await inPhase('check', 'swap-check', 'Refused', 'WORLD_DELETED');
    assert.equal(deletedCheck.status.verdict, 'REFUSED');

    const before = await prime();
    // World B: the same name, a real Root, a candidate that passes the Policy's check.
    const b = await runWorld(s, 'swap', shWorld(['bind'], 'echo ok > README.md'));
    assert.equal(b.status.phase, 'Captured', describeRun(b));
    assert.notEqual(b.uid, a.metadata.uid);

    const col = await inPhase('collapse', 'swap-col', 'Denied', 'WORLD_REPLACED');
    assert.ok(col.status.message.includes(a.metadata.uid) && col.status.message.includes(b.uid), col.status.message);
    assert.equal(col.spec.worldUID, a.metadata.uid);
    assert.equal(col.status.nodeName, undefined, 'never handed to the replacement\'s node');
    assert.equal(col.status.transaction, undefined);
    assert.equal(condition(col, 'WorldFound')?.reason, 'WorldReplaced');
    const check = await inPhase('check', 'swap-check', 'Refused', 'WORLD_REPLACED');
    assert.equal(check.status.subject, undefined, 'no candidate was checked');

    // The replacement itself is served: its own required Check (bound to B at creation) passes.
    const required = await checkFinished('swap-verify');
    assert.equal(required.spec.worldUID, b.uid);
    assert.equal(required.status.phase, 'Passed', JSON.stringify(required.status));
    assert.deepEqual(await prime(), before, 'PRIME did not move');
    // A Collapse created for B now commits it: what kept PRIME still was the binding, not B.
    await s.apply(collapseManifest('swap-col-b', 'swap'));
    const committed = await waitCollapse(s, 'swap-col-b', 30_000);
    assert.equal(committed.status.phase, 'Committed', JSON.stringify(committed.status));
    assert.equal(committed.spec.worldUID, b.uid);
    await s.waitFor('Root bind at the next generation', async () => (await prime()).generation === before.generation + 1);
    assert.equal((await get('collapse', 'swap-col'))?.status?.reason, 'WORLD_REPLACED', 'the old Collapse stays refused');
  });

  test('handed to the node before its World was replaced (controller and node-agent down), the node-agent refuses them by name', async () => {
    // World A is captured and its required Check (held-verify, bound to A) passes.
    const a = await runWorld(s, 'held', shWorld(['bind'], 'echo from-a >> README.md'));
    assert.equal(a.status.phase, 'Captured', describeRun(a));
    const requiredA = await checkFinished('held-verify');
    assert.equal(requiredA.spec.worldUID, a.uid);
    let bUid = '';
    await s.restartAgent({
      between: async () => {
        // No node-agent: the controller binds the new Check and Collapse and hands them to the node.
        await s.apply(checkManifest('held-check', 'held'));
        await s.apply(collapseManifest('held-col', 'held'));
        for (const [kind, name] of [['check', 'held-check'], ['collapse', 'held-col']] as const) {
          await s.waitFor(`${name} bound and handed to ${s.nodeName}`, async () => {
            const o = await get(kind, name);
            return o?.spec?.worldUID === a.uid && o.status?.nodeName === s.nodeName;
          });
        }
        // The controller goes down too; World A is deleted, its finalizer removed by hand (docs/architecture.md,
        // "Deletion"), and World B takes the name.
        await s.controller.kill('SIGTERM');
        await kc(s.cp, ['delete', 'world', 'held', '--wait=false']);
        await kc(s.cp, ['patch', 'world', 'held', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
        await s.waitFor('World A gone', async () => (await get('world', 'held')) === undefined);
        await s.apply(worldManifest('held', shWorld(['bind'], 'echo ok-again >> README.md')));
        // A controller comes back and binds B to the node before the node-agent starts.
        secondController = await startController({ kubeconfig: s.cp.kubeconfigPath, identity: 'binding-controller-2' });
        const b = await s.waitFor('World B bound', async () => {
          const w = await get('world', 'held');
          return w?.status?.nodeName === s.nodeName ? w : undefined;
        });
        bUid = b.metadata.uid as string;
      },
    });
    assert.notEqual(bUid, a.uid);
    const before = await prime();

    const b = await s.waitWorld('held', ['Captured']);
    assert.equal(b.metadata.uid, bUid);
    const col = await inPhase('collapse', 'held-col', 'Denied', 'WORLD_REPLACED');
    assert.ok(col.status.message.includes(a.uid) && col.status.message.includes(bUid), col.status.message);
    assert.equal(col.status.transaction, undefined, 'no transaction: nothing was measured or decided');
    assert.equal(col.status.receipt, undefined);
    assert.equal(condition(col, 'Collapsed')?.status, 'False');
    assert.equal(condition(col, 'WorldFound')?.reason, 'WorldReplaced');
    const check = await inPhase('check', 'held-check', 'Refused', 'WORLD_REPLACED');
    assert.equal(check.status.verdict, 'REFUSED');
    assert.equal(check.status.subject, undefined, 'B\'s candidate was not checked by it');
    // A's required Check of the same name was replaced by B's own (bound to B), which passes: a Collapse
    // bound to B would commit; the refused one moved nothing.
    const required = await s.waitFor('held-verify bound to B and finished', async () => {
      const c = await get('check', 'held-verify');
      return c?.spec?.worldUID === bUid && ['Passed', 'Failed', 'Refused'].includes(c.status?.phase) ? c : undefined;
    }, 45_000);
    assert.equal(required.status.phase, 'Passed', JSON.stringify(required.status));
    assert.equal(required.status.subject, b.status.candidate.digest);
    assert.deepEqual(await prime(), before, 'PRIME did not move');
    assert.ok(s.agent.logs.some((r) => r.msg === 'collapse refused: its World was replaced'), 'the node-agent, not only the controller, refused it');
  });
});
