// The promotion queue on a real stack (kube-apiserver + etcd, controller, node-agent as root): Collapses
// with spec.rebase whose World's base PRIME has left. A candidate that touched other paths is rebased onto
// PRIME as it is now, the controller creates the Policy's Checks for exactly those bytes (spec.subject), and
// it commits on their evidence, with status and receipt naming the original candidate, the generation it
// was rebased onto and the rebased identity. A rebased candidate whose own checks fail is denied even
// though the World's candidate passed alone; one that touched a path PRIME changed is refused CONFLICT
// naming it, and a Check naming a subject that is not a rebase of its World's candidate is refused
// CHECK_SUBJECT_INVALID. An agent killed right after forming a rebased candidate forms the same one again and commits
// it once. Collapses of the same Root are served in order of creation, the younger ones Queued.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLedgerLine } from '../../core/receipts/ledger-line.js';
import { parseReceiptBody, type ReceiptBody } from '../../core/receipts/receipt.js';
import { startStack, type Stack } from '../support/stack.js';
import { waitCollapse } from '../support/collapses.js';
import { getJson } from '../support/wait.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

function policy(name: string, root: string, script: string): string {
  return JSON.stringify({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'Policy',
    metadata: { name },
    spec: {
      roots: [root],
      checks: [{ name: 'verify', command: ['/bin/sh', `checks/${script}`], verifiers: ['checks/**'], timeout: '1m' }],
      isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
    },
  });
}

function rebaseCollapse(name: string, world: string, rebase: boolean): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Collapse', metadata: { name, namespace: 'default' }, spec: { worldRef: world, rebase } });
}

/** Every receipt of the node's ledger, parsed as the ledger's own line and body formats. */
function receipts(s: Stack): ReceiptBody[] {
  return readFileSync(join(s.storeDir, 'receipts', 'ledger.jsonl'), 'utf8').trim().split('\n').map((l) => {
    const line = parseLedgerLine(l);
    assert.ok(line.ok, line.ok ? '' : line.message);
    const body = parseReceiptBody(line.line.receipt);
    assert.ok(body.ok, body.ok ? '' : body.message);
    return body.body;
  });
}

describe('collapse rebase and queue on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'rebase-node' });
  });
  after(async () => {
    await s?.stop();
  });

  const checkDone = (name: string): Promise<Record<string, any>> =>
    s.waitFor(`Check ${name} finished`, async () => {
      const c = await s.get('check', name, 'default');
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 60_000);

  /** A Root with files a..d under a Policy whose check runs checks/<script>. */
  const project = async (name: string, script: string, body: string): Promise<string> => {
    const path = join(s.scratch, name);
    ownedDir(path);
    ownedDir(join(path, 'checks'));
    ownedFile(join(path, 'checks', script), body);
    for (const f of ['a', 'b', 'c', 'd']) ownedFile(join(path, `${f}.txt`), `${f}\n`);
    assert.equal((await applyRoot(s, name, path)).status.phase, 'Ready');
    await s.apply(policy(`${name}-policy`, name, script));
    return path;
  };

  const captured = async (name: string, root: string, script: string): Promise<Record<string, any>> => {
    const r = await runWorld(s, name, shWorld([root], script));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone(`${name}-verify`)).status.phase, 'Passed', `the World's own check passes on its candidate alone`);
    return r;
  };

  test('a candidate of other paths is rebased, checked on the rebased bytes and committed; failing or conflicting ones are refused by name', async () => {
    // The check fails only when a.txt and b.txt both say x: each candidate passes alone.
    const path = await project('rb', 'verify.sh', 'if grep -q x a.txt && grep -q x b.txt; then exit 1; fi\n');
    const wa = await captured('rb-a', 'rb', 'echo x >> a.txt');
    const wc = await captured('rb-c', 'rb', 'echo y >> c.txt');
    await captured('rb-b', 'rb', 'echo x >> b.txt');
    await captured('rb-conf', 'rb', 'echo z >> a.txt');
    assert.ok(wa.status.candidate.digest && wc.status.candidate.digest);

    // Without spec.rebase, the first collapse commits; PRIME is generation 2.
    await s.apply(rebaseCollapse('rb-a-col', 'rb-a', false));
    const ca = await waitCollapse(s, 'rb-a-col');
    assert.equal(ca.status.phase, 'Committed', JSON.stringify(ca.status));
    const gen2 = ca.status.result[0].digest as string;

    // rb-c forked generation 1 and changed c.txt only: rebased onto generation 2, checked, committed.
    await s.apply(rebaseCollapse('rb-c-col', 'rb-c', true));
    const cc = await waitCollapse(s, 'rb-c-col');
    assert.equal(cc.status.phase, 'Committed', JSON.stringify(cc.status));
    assert.equal(cc.status.rebase.from, wc.status.candidate.digest);
    assert.notEqual(cc.status.rebase.candidate, wc.status.candidate.digest, 'the rebased candidate has its own identity');
    assert.deepEqual(cc.status.rebase.onto, [{ root: 'rb', generation: 2, digest: gen2 }]);
    assert.deepEqual(cc.status.result.map((r: { fromGeneration: number; toGeneration: number }) => [r.fromGeneration, r.toGeneration]), [[2, 3]]);
    assert.equal(readFileSync(join(path, 'a.txt'), 'utf8'), 'a\nx\n', 'the first change is kept');
    assert.equal(readFileSync(join(path, 'c.txt'), 'utf8'), 'c\ny\n', 'the rebased change landed');
    // The check that spoke for it ran on the rebased bytes: a Check the controller made with spec.subject.
    const rebasedChecks = ((await getJson(s.cp, ['get', 'checks', '-n', 'default']))?.items as Record<string, any>[]).filter((c: Record<string, any>) => c.spec.subject === cc.status.rebase.candidate);
    assert.equal(rebasedChecks.length, 1, JSON.stringify(rebasedChecks.map((c: Record<string, any>) => c.metadata.name)));
    const [rebasedCheck] = rebasedChecks as [Record<string, any>];
    assert.equal(rebasedCheck.spec.worldRef, 'rb-c');
    assert.equal(rebasedCheck.status.verdict, 'PASS');
    assert.equal(rebasedCheck.status.subject, cc.status.rebase.candidate);
    // The receipt records the original candidate, the base it was rebased onto and the rebased identity.
    const rc = receipts(s).find((r) => r.transaction.id === cc.status.transaction.id);
    assert.ok(rc, 'the committed rebase has a receipt');
    assert.deepEqual(rc.rebase, cc.status.rebase);
    assert.equal(rc.evidence.subject, cc.status.rebase.candidate);

    // rb-b alone passed, but with rb-a's change its check fails: evidence about its own bytes does not count.
    await s.apply(rebaseCollapse('rb-b-col', 'rb-b', true));
    const cb = await waitCollapse(s, 'rb-b-col');
    assert.equal(cb.status.phase, 'Denied', JSON.stringify(cb.status));
    assert.deepEqual(cb.status.decision.reasons, ['CHECK_NOT_PASSED']);
    assert.equal(cb.status.rebase.from, (await s.get('world', 'rb-b', 'default'))?.status.candidate.digest);
    assert.equal(readFileSync(join(path, 'b.txt'), 'utf8'), 'b\n', 'PRIME is untouched');

    // rb-conf changed a.txt, which PRIME changed since its base: CONFLICT naming the path, receipted, nothing moved.
    await s.apply(rebaseCollapse('rb-conf-col', 'rb-conf', true));
    const cf = await waitCollapse(s, 'rb-conf-col');
    assert.equal(cf.status.phase, 'Denied', JSON.stringify(cf.status));
    assert.deepEqual(cf.status.decision.reasons, ['PRIME_MOVED', 'CONFLICT']);
    assert.match(cf.status.message, /rb\/a\.txt/);
    assert.ok(cf.status.receipt?.id);
    assert.equal(readFileSync(join(path, 'a.txt'), 'utf8'), 'a\nx\n');
    assert.equal((await s.get('root', 'rb'))?.status?.generation, 3);

    // A Check whose spec.subject is not a rebase of its World's candidate is refused by name, whatever it names.
    for (const [name, subject] of [['rb-b-forged', wc.status.candidate.digest], ['rb-b-unknown', `sha256:${'0'.repeat(64)}`]] as const) {
      await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name, namespace: 'default' }, spec: { worldRef: 'rb-b', name: 'verify', subject } }));
      const forged = await checkDone(name);
      assert.equal(forged.status.phase, 'Refused', JSON.stringify(forged.status));
      assert.equal(forged.status.reason, 'CHECK_SUBJECT_INVALID');
    }
  });

  test('an agent killed right after forming the rebased candidate forms the same one again and commits it, receipted once', async () => {
    const path = await project('rk', 'ok.sh', 'exit 0\n');
    await captured('rk-0', 'rk', 'echo 0 >> a.txt');
    await captured('rk-1', 'rk', 'echo 1 >> b.txt');
    await s.apply(rebaseCollapse('rk-0-col', 'rk-0', false));
    assert.equal((await waitCollapse(s, 'rk-0-col')).status.phase, 'Committed');

    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: 'after-rebase-formed:kill' } });
    const hooked = s.agent;
    await s.apply(rebaseCollapse('rk-1-col', 'rk-1', true));
    const exit = await hooked.waitExit();
    assert.equal(exit.signal, 'SIGKILL', `the agent ended by its own SIGKILL after forming the rebase: ${JSON.stringify(exit)}`);
    const atKill = await s.get('collapse', 'rk-1-col', 'default');
    assert.ok(!['Committed', 'Denied'].includes(atKill?.status?.phase), JSON.stringify(atKill?.status));
    const candidates = join(s.storeDir, 'candidates');
    const formed = readdirSync(candidates).filter((n) => !n.includes('.'));

    await s.restartAgent({ signal: 'SIGTERM' });
    const c = await waitCollapse(s, 'rk-1-col', 120_000);
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    assert.ok(formed.includes(c.status.rebase.candidate.slice('sha256:'.length)), 'the candidate formed before the kill is the one committed');
    assert.deepEqual(readdirSync(candidates).filter((n) => n.includes('.')), [], 'nothing half-written is left among the candidates');
    assert.equal(receipts(s).filter((r) => r.rebase?.candidate === c.status.rebase.candidate).length, 1, 'one receipt for the rebased candidate');
    assert.equal(readFileSync(join(path, 'a.txt'), 'utf8'), 'a\n0\n');
    assert.equal(readFileSync(join(path, 'b.txt'), 'utf8'), 'b\n1\n');
  });

  test('Collapses of one Root are served in order of creation; the younger ones show Queued with their position', async () => {
    // Each check takes a few seconds, so the head of the queue is still Rebasing when the others arrive.
    const path = await project('rq', 'slow.sh', 'sleep 4\n');
    await captured('rq-0', 'rq', 'echo 0 >> a.txt');
    for (const [w, f] of [['rq-1', 'b'], ['rq-2', 'c'], ['rq-3', 'd']] as const) await captured(w, 'rq', `echo ${w} >> ${f}.txt`);
    await s.apply(rebaseCollapse('rq-0-col', 'rq-0', false));
    assert.equal((await waitCollapse(s, 'rq-0-col')).status.phase, 'Committed');

    await s.apply(rebaseCollapse('rq-1-col', 'rq-1', true));
    const head = await s.waitFor('rq-1-col Rebasing', async () => {
      const c = await s.get('collapse', 'rq-1-col', 'default');
      return c?.status?.phase === 'Rebasing' ? c : undefined;
    }, 30_000);
    assert.equal(head.status.reason, 'REBASE_CHECKS_PENDING');
    assert.match(head.status.message, /waiting for check\(s\) verify/);
    await s.apply(rebaseCollapse('rq-2-col', 'rq-2', true));
    await s.apply(rebaseCollapse('rq-3-col', 'rq-3', true));
    const q3 = await s.waitFor('rq-3-col Queued behind two', async () => {
      const c = await s.get('collapse', 'rq-3-col', 'default');
      return c?.status?.phase === 'Queued' && c.status.queuePosition === 2 ? c : undefined;
    }, 30_000);
    assert.equal(q3.status.reason, 'QUEUED');

    const done = [];
    for (const n of ['rq-1-col', 'rq-2-col', 'rq-3-col']) done.push(await waitCollapse(s, n, 120_000));
    for (const c of done) assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    // Served in order: each moved PRIME one generation after the one created before it, receipts in that order.
    assert.deepEqual(done.map((c) => c.status.result[0].toGeneration), [3, 4, 5]);
    assert.deepEqual(done.map((c) => c.status.rebase.onto[0].generation), [2, 3, 4]);
    const seq = done.map((c) => c.status.receipt.sequence as number);
    assert.ok(seq[0]! < seq[1]! && seq[1]! < seq[2]!, JSON.stringify(seq));
    assert.equal(done[2]!.status.queuePosition, undefined, 'the position is cleared once served');
    for (const [f, text] of [['a', 'a\n0\n'], ['b', 'b\nrq-1\n'], ['c', 'c\nrq-2\n'], ['d', 'd\nrq-3\n']] as const) assert.equal(readFileSync(join(path, `${f}.txt`), 'utf8'), text);
  });
});
