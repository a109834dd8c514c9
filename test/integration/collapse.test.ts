// Collapse on a real stack (kube-apiserver + etcd, controller, node-agent as root): a Collapse of a
// captured World promotes its candidate into PRIME atomically (the host path shows it, the Root moves to
// generation 2) and appends a signed receipt that `worldline receipts verify` accepts; a second World
// forked from the old generation and touching the same file is denied by name, with its own receipt,
// and PRIME keeps the first change; each Collapse's status receipt verifies with the key published in
// the node's ConfigMap and against the ledger (`worldline receipts verify-status`); the controller records
// the node's ledger head in the cluster and the ledger holds it (`worldline receipts verify --heads`).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseLedgerLine } from '../../core/receipts/ledger-line.js';
import { parseReceiptBody, type ReceiptBody } from '../../core/receipts/receipt.js';
import { receiptsConfigMapName } from '../../node-agent/receipts/publish-public-key.js';
import { startStack, type Stack } from '../support/stack.js';
import { getJson, kc } from '../support/wait.js';
import { metricSum } from '../support/metrics-text.js';
import { startController } from '../support/controller-process.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { applyRoot, describeRun, runWorld, shWorld } from '../support/worlds.js';

const OWNER = 1000;
const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));

/** The newest receipt of the node's ledger, parsed as the ledger's own line and body formats (one shape, no fallbacks). */
function lastReceipt(s: Stack): ReceiptBody {
  const lines = readFileSync(join(s.storeDir, 'receipts', 'ledger.jsonl'), 'utf8').trim().split('\n');
  const line = parseLedgerLine(lines[lines.length - 1]!);
  assert.ok(line.ok, line.ok ? '' : line.message);
  const body = parseReceiptBody(line.line.receipt);
  assert.ok(body.ok, body.ok ? '' : body.message);
  return body.body;
}

describe('collapse on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'collapse-node' });
  });
  after(async () => {
    await s?.stop();
  });

  const final = (name: string): Promise<Record<string, any>> => waitCollapse(s, name, 30_000);

  test('a captured candidate is committed with a signed receipt; a stale fork of the same file is denied', async () => {
    // b.txt stays unchanged: generation 2 shares it with generation 1 by hard link.
    const hostPath = join(s.scratch, 'col');
    mkdirSync(hostPath, { mode: 0o755 });
    for (const [name, text] of [['a.txt', 'alpha\n'], ['b.txt', 'bravo\n']] as const) writeFileSync(join(hostPath, name), text);
    for (const p of [hostPath, join(hostPath, 'a.txt'), join(hostPath, 'b.txt')]) chownSync(p, OWNER, OWNER);
    const root = await applyRoot(s, 'col', hostPath);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    assert.equal(root.status.generation, 1);

    // Both worlds fork generation 1 and change a.txt.
    const first = await runWorld(s, 'first', shWorld(['col'], 'echo first >> a.txt'));
    assert.equal(first.status.phase, 'Captured', describeRun(first));
    const second = await runWorld(s, 'second', shWorld(['col'], 'echo second >> a.txt'));
    assert.equal(second.status.phase, 'Captured', describeRun(second));
    assert.equal(readFileSync(join(hostPath, 'a.txt'), 'utf8'), 'alpha\n', 'PRIME is untouched before any collapse');

    await s.apply(collapseManifest('first-col', 'first'));
    const c1 = await final('first-col');
    assert.equal(c1.status.phase, 'Committed', JSON.stringify(c1.status));
    assert.equal(c1.status.transaction.state, 'COMMITTED');
    assert.deepEqual(c1.status.decision, { authorized: true, reasons: [] });
    assert.equal(c1.status.result.length, 1);
    assert.equal(c1.status.result[0].root, 'col');
    assert.equal(c1.status.result[0].fromGeneration, 1);
    assert.equal(c1.status.result[0].toGeneration, 2);
    assert.equal(c1.status.receipt.sequence, 1);
    assert.match(c1.status.receipt.id, /^sha256:[0-9a-f]{64}$/);
    assert.ok(c1.status.receipt.signature.length > 0);
    assert.ok(c1.status.receipt.keyId.length > 0);
    assert.equal(c1.status.receipt.previous, undefined);

    // The host path routes through live/ to the new generation.
    assert.equal(readFileSync(join(hostPath, 'a.txt'), 'utf8'), 'alpha\nfirst\n');
    assert.equal(readFileSync(join(hostPath, 'b.txt'), 'utf8'), 'bravo\n');
    // The new generation is a stack: generation 1's tree under a layer holding only the change.
    const generationOne = readdirSync(join(s.storeDir, 'generations')).find((id) => id.includes('_g1_'))!;
    assert.equal(statSync(join(hostPath, 'b.txt')).ino, statSync(join(s.storeDir, 'generations', generationOne, 'payload', 'b.txt')).ino, 'the unchanged file is generation 1\'s own');
    const rootAfter = await s.waitFor('Root col at generation 2', async () => {
      const r = await s.get('root', 'col');
      return r?.status?.generation === 2 ? r : undefined;
    }, 30_000);
    assert.equal(rootAfter.status.phase, 'Ready');
    assert.equal(rootAfter.status.digest, c1.status.result[0].digest);

    // The second World's base is generation 1: PRIME moved and the same file changed on both sides.
    await s.apply(collapseManifest('second-col', 'second'));
    const c2 = await final('second-col');
    assert.equal(c2.status.phase, 'Denied', JSON.stringify(c2.status));
    assert.equal(c2.status.transaction.state, 'DENIED');
    assert.equal(c2.status.decision.authorized, false);
    assert.ok(c2.status.decision.reasons.includes('PRIME_MOVED'), JSON.stringify(c2.status.decision));
    assert.ok(c2.status.decision.reasons.includes('CONFLICT'), JSON.stringify(c2.status.decision));
    // PRIME (generation 2, sharing b.txt with generation 1) re-hashes clean: no foreign write is claimed.
    assert.ok(!c2.status.decision.reasons.includes('FOREIGN_WRITE'), JSON.stringify(c2.status.decision));
    assert.equal(c2.status.receipt.sequence, 2);
    assert.equal(c2.status.receipt.previous, c1.status.receipt.id);
    assert.equal(readFileSync(join(hostPath, 'a.txt'), 'utf8'), 'alpha\nfirst\n', 'PRIME keeps the first change');
    assert.equal((await s.get('root', 'col'))?.status?.generation, 2);

    // The PRIME watcher (on by default): PRIME is measured once, by the agent's background upkeep right
    // after the adoption (or, had the first decision come before that walk started, by that decision);
    // every other re-hash (two decisions, two commit boundaries) took PRIME from that measurement,
    // nothing having been written under it. The agent counts both ways.
    const metrics = await s.agent.metrics();
    const rehashes = (by: string): number => Number(new RegExp(`^worldline_prime_rehashes_total\\{by="${by}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    assert.ok(rehashes('walk') <= 1, metrics);
    assert.ok(rehashes('watcher') >= 3, `fewer than 3 re-hashes were vouched for by the watcher (walked ${rehashes('walk')})`);
    assert.ok(rehashes('walk') + rehashes('watcher') >= 4, 'two decisions and two commit boundaries re-hashed PRIME');

    // The ledger verifies with the published public key, independently of the signer.
    const ledger = join(s.storeDir, 'receipts', 'ledger.jsonl');
    const publicKey = join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem');
    const out = execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--public-key', publicKey], { encoding: 'utf8' });
    assert.ok(out.length > 0);
    assert.equal(readFileSync(ledger, 'utf8').trim().split('\n').length, 2);

    // Each Collapse's status receipt, as kubectl prints the object, verifies with the key the node
    // published in its ConfigMap (no node access), and against the ledger: it says what the status says.
    const cm = await s.waitFor('the receipts ConfigMap', () => s.get('configmap', receiptsConfigMapName('collapse-node'), 'worldline-system'));
    const publishedPem = join(s.scratch, 'published.pem');
    writeFileSync(publishedPem, cm.data['public-key.pem'] as string);
    for (const name of ['first-col', 'second-col']) {
      const json = join(s.scratch, `${name}.json`);
      writeFileSync(json, JSON.stringify(await getJson(s.cp, ['get', 'collapse', name, '-n', 'default'])));
      const verified = execFileSync(process.execPath, [CLI, 'receipts', 'verify-status', '--collapse', json, '--public-key', publishedPem, '--ledger', ledger], { encoding: 'utf8' });
      assert.match(verified, new RegExp(`^OK collapse default/${name}: receipt sha256:[0-9a-f]{64} .*and it says what the status says`));
    }

    // The controller recorded the node's newest receipt where the node cannot write (ConfigMap
    // worldline-ledger-heads), and the ledger holds it: `receipts verify --heads` against the cluster's record.
    const heads = await s.waitFor('the ledger head of collapse-node recorded', async () => {
      const h = await s.get('configmap', 'worldline-ledger-heads', 'worldline-system');
      const text = h?.data?.['collapse-node'] as string | undefined;
      return text && JSON.parse(text).sequence === 2 ? h : undefined;
    });
    const head = JSON.parse(heads.data['collapse-node'] as string);
    assert.equal(head.receipt, c2.status.receipt.id);
    assert.equal(head.keyId, c2.status.receipt.keyId);
    const headsJson = join(s.scratch, 'heads.json');
    writeFileSync(headsJson, JSON.stringify(heads));
    const againstHeads = execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--public-key', publishedPem, '--heads', headsJson, '--node', 'collapse-node'], { encoding: 'utf8' });
    assert.match(againstHeads, /it holds the head the cluster recorded for collapse-node: receipt 2 /);
  });

  test('a World with two Roots collapses both in one transaction; the World is Collapsed', async () => {
    const paths = [join(s.scratch, 'multi-a'), join(s.scratch, 'multi-b')];
    for (const p of paths) {
      mkdirSync(p, { mode: 0o755 });
      writeFileSync(join(p, 'f.txt'), 'base\n');
      for (const x of [p, join(p, 'f.txt')]) chownSync(x, OWNER, OWNER);
    }
    assert.equal((await applyRoot(s, 'multi-a', paths[0]!)).status.phase, 'Ready');
    assert.equal((await applyRoot(s, 'multi-b', paths[1]!)).status.phase, 'Ready');
    const w = await runWorld(s, 'multi', shWorld(['multi-a', 'multi-b'], `echo a >> ${paths[0]}/f.txt && echo b >> ${paths[1]}/f.txt`));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.apply(collapseManifest('multi-col', 'multi'));
    const c = await final('multi-col');
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    assert.deepEqual(c.status.result.map((r: { root: string; fromGeneration: number; toGeneration: number }) => [r.root, r.fromGeneration, r.toGeneration]), [['multi-a', 1, 2], ['multi-b', 1, 2]]);
    assert.equal(readFileSync(join(paths[0]!, 'f.txt'), 'utf8'), 'base\na\n');
    assert.equal(readFileSync(join(paths[1]!, 'f.txt'), 'utf8'), 'base\nb\n');
    const world = await s.waitWorld('multi', ['Collapsed']);
    assert.equal(world.status.reason, 'COLLAPSED');
    const ready = (world.status.conditions as { type: string; status: string; reason: string }[]).find((x) => x.type === 'Ready');
    assert.deepEqual([ready?.status, ready?.reason], ['True', 'CandidateCaptured'], 'Ready stays as it was at Captured');
    // One Event per step: the controller adds none where the binding's or the node-agent's own says it.
    const reasons = await s.waitFor('the Committed Event', async () => {
      const list = (await getJson<{ items: { reason: string; involvedObject: { kind: string; name: string } }[] }>(s.cp, ['get', 'events', '-n', 'default', '-o', 'json']))?.items ?? [];
      const of = (kind: string, name: string) => list.filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name).map((e) => e.reason);
      const r = { world: of('World', 'multi'), collapse: of('Collapse', 'multi-col') };
      return r.collapse.includes('Committed') && r.world.includes('Captured') ? r : undefined;
    });
    for (const r of ['Bound', 'ADMITTED', 'Captured']) assert.ok(reasons.world.includes(r), `World Event ${r}: ${reasons.world.join(', ')}`);
    for (const r of ['NodeAgentPresent', 'CandidateCaptured']) assert.ok(!reasons.world.includes(r), `no World Event ${r}: ${reasons.world.join(', ')}`);
    assert.ok(reasons.collapse.includes('WorldBound'), reasons.collapse.join(', '));
    assert.ok(!reasons.collapse.includes('WorldFound'), `the binding's Event says it: ${reasons.collapse.join(', ')}`);
    // The receipt names both Roots with their before and after digests.
    const body = lastReceipt(s);
    assert.deepEqual(body.roots.map((r) => [r.root, r.toGeneration]), [['multi-a', 2], ['multi-b', 2]]);
  });

  test('CheckpointReturn undoes a World\'s own collapse, once; without a collapse there is nothing to return from', async () => {
    const hostPath = join(s.scratch, 'ret');
    mkdirSync(hostPath, { mode: 0o755 });
    writeFileSync(join(hostPath, 'keep.txt'), 'original\n');
    writeFileSync(join(hostPath, 'gone.txt'), 'deleted by the world\n');
    for (const p of [hostPath, join(hostPath, 'keep.txt'), join(hostPath, 'gone.txt')]) chownSync(p, OWNER, OWNER);
    assert.equal((await applyRoot(s, 'ret', hostPath)).status.phase, 'Ready');
    const never = await runWorld(s, 'ret-never', shWorld(['ret'], 'echo unused >> keep.txt'));
    assert.equal(never.status.phase, 'Captured', describeRun(never));
    const w = await runWorld(s, 'ret-w', shWorld(['ret'], 'echo changed > keep.txt && rm gone.txt && echo new > new.txt'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));

    const none = await (async () => {
      await s.apply(collapseManifest('ret-never-back', 'ret-never', 'CheckpointReturn'));
      return final('ret-never-back');
    })();
    assert.equal(none.status.phase, 'Denied', JSON.stringify(none.status));
    assert.deepEqual(none.status.decision.reasons, ['CHECKPOINT_NOT_COLLAPSED']);

    await s.apply(collapseManifest('ret-col', 'ret-w'));
    assert.equal((await final('ret-col')).status.phase, 'Committed');
    assert.equal(readFileSync(join(hostPath, 'keep.txt'), 'utf8'), 'changed\n');

    await s.apply(collapseManifest('ret-back', 'ret-w', 'CheckpointReturn'));
    const back = await final('ret-back');
    assert.equal(back.status.phase, 'Committed', JSON.stringify(back.status));
    assert.deepEqual(back.status.result.map((r: { fromGeneration: number; toGeneration: number }) => [r.fromGeneration, r.toGeneration]), [[2, 3]]);
    assert.equal(back.status.result[0].digest, w.status.base[0].digest, 'PRIME has the checkpoint\'s digest again');
    assert.equal(readFileSync(join(hostPath, 'keep.txt'), 'utf8'), 'original\n');
    assert.equal(readFileSync(join(hostPath, 'gone.txt'), 'utf8'), 'deleted by the world\n');
    assert.throws(() => readFileSync(join(hostPath, 'new.txt')), { code: 'ENOENT' });
    assert.equal(lastReceipt(s).mode, 'CheckpointReturn');

    // PRIME is no longer what the World's collapse made: a second return would discard generation 3's history.
    await s.apply(collapseManifest('ret-back-again', 'ret-w', 'CheckpointReturn'));
    const again = await final('ret-back-again');
    assert.equal(again.status.phase, 'Denied', JSON.stringify(again.status));
    assert.ok(again.status.decision.reasons.includes('PRIME_MOVED'), JSON.stringify(again.status.decision));
    assert.equal(readFileSync(join(hostPath, 'keep.txt'), 'utf8'), 'original\n');
  });

  // Last: it replaces the stack's controller. The controller binds (spec.worldUID) before it hands over
  // (status.nodeName); the node-agent does not rely on that order: here the hand-over lands alone.
  test('a Collapse handed to the node before it is bound is left alone until its World uid is set, then commits', async () => {
    const hostPath = join(s.scratch, 'handed');
    mkdirSync(hostPath, { mode: 0o755 });
    writeFileSync(join(hostPath, 'h.txt'), 'base\n');
    for (const p of [hostPath, join(hostPath, 'h.txt')]) chownSync(p, OWNER, OWNER);
    assert.equal((await applyRoot(s, 'handed', hostPath)).status.phase, 'Ready');
    const w = await runWorld(s, 'handed-w', shWorld(['handed'], 'echo more >> h.txt'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.controller.kill('SIGTERM');
    await s.controller.waitExit();
    await s.apply(collapseManifest('handed-c', 'handed-w'));
    const reconciles = async (): Promise<number> => metricSum(await s.agent.metrics(), 'worldline_reconcile_total', { kind: 'NodeCollapse' });
    const before = await reconciles();
    const handOver = { apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name: 'handed-c', namespace: 'default' }, status: { nodeName: s.nodeName } };
    await kc(s.cp, ['apply', '--server-side', '--field-manager=worldline-controller', '--subresource=status', '-f', '-'], JSON.stringify(handOver));
    await s.waitFor('the node-agent to reconcile the handed Collapse', async () => (await reconciles()) > before, 30_000);
    const waiting = await s.get('Collapse', 'handed-c');
    assert.equal(waiting?.status?.nodeName, s.nodeName);
    assert.equal(waiting?.spec.worldUID, undefined);
    assert.equal(waiting?.status?.phase, undefined, `the node-agent acted on an unbound Collapse: ${JSON.stringify(waiting?.status)}`);
    assert.equal(waiting?.status?.transaction, undefined);
    assert.equal(readFileSync(join(hostPath, 'h.txt'), 'utf8'), 'base\n', 'PRIME is untouched');
    const controller = await startController({ kubeconfig: s.cp.kubeconfigPath, identity: 'second-controller' });
    try {
      const c = await final('handed-c');
      assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
      assert.equal(c.spec.worldUID, w.uid);
      assert.equal(readFileSync(join(hostPath, 'h.txt'), 'utf8'), 'base\nmore\n');
    } finally {
      await controller.kill('SIGTERM');
    }
  });
});
