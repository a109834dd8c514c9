// Collapse with checks on a real stack (kube-apiserver + etcd, controller, node-agent as root). Each named
// evidence refusal is reproduced the way it would arise: a failing check, a candidate that rewrites its
// verifier, a Policy changed after the checks ran, the node's resources for checks changed after they
// ran, a roster not yet complete, a tampered verifier in the
// store, an evaluation forged or stripped at rest, a check result superseded between prepare and commit,
// and staged bytes changed between staging and commit.
// A passing candidate commits and its World shows phase Collapsed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { withBeneath } from '../../node-agent/store/generation-stack.js';
import { startStack, type Stack } from '../support/stack.js';
import { kc } from '../support/wait.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

const CHECK = { name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '1m' };

function policy(name: string, root: string, checks: unknown[]): string {
  return JSON.stringify({
    apiVersion: 'worldline.dev/v1alpha1',
    kind: 'Policy',
    metadata: { name },
    spec: { roots: [root], checks, isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } } },
  });
}

describe('collapse evidence on a real stack', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'evidence-node' });
  });
  after(async () => {
    await s?.stop();
  });

  /** A Root whose checks/verify.sh passes when README.md says ok, under a Policy with `checks`. */
  const project = async (name: string, checks: unknown[] | null = [CHECK]): Promise<string> => {
    const path = join(s.scratch, name);
    ownedDir(path);
    ownedDir(join(path, 'checks'));
    ownedFile(join(path, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
    ownedFile(join(path, 'checks', 'slow.sh'), 'sleep 40\n');
    ownedFile(join(path, 'README.md'), 'not yet\n');
    const root = await applyRoot(s, name, path);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    if (checks) await s.apply(policy(`${name}-policy`, name, checks));
    return path;
  };

  const checkDone = (name: string): Promise<Record<string, any>> =>
    s.waitFor(`Check ${name} finished`, async () => {
      const c = await s.get('check', name, 'default');
      return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
    }, 60_000);

  const collapse = async (name: string, world: string): Promise<Record<string, any>> => {
    await s.apply(collapseManifest(name, world));
    return waitCollapse(s, name);
  };

  /** Denied with exactly these reasons (in the decision's canonical order), and receipted. */
  const denied = (c: Record<string, any>, ...reasons: string[]): void => {
    assert.equal(c.status.phase, 'Denied', JSON.stringify(c.status));
    assert.equal(c.status.transaction.state, 'DENIED');
    assert.deepEqual([...(c.status.decision.reasons as string[])].sort(), [...reasons].sort(), `reasons of ${JSON.stringify(c.status.decision)}`);
    assert.ok(c.status.receipt?.id, 'a denied transaction has its receipt too');
  };

  test('a candidate whose checks pass commits; the World is Collapsed and kubectl wait sees it', async () => {
    const path = await project('ok');
    const r = await runWorld(s, 'ok-w', shWorld(['ok'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('ok-w-verify')).status.phase, 'Passed');
    await kc(s.cp, ['wait', '--for=condition=ChecksPassed', '--timeout=60s', 'world/ok-w', '-n', 'default']);
    await s.apply(collapseManifest('ok-col', 'ok-w'));
    await kc(s.cp, ['wait', '--for=condition=Collapsed', '--timeout=60s', 'collapse/ok-col', '-n', 'default']);
    const c = await s.get('collapse', 'ok-col', 'default');
    assert.equal(c?.status.phase, 'Committed', JSON.stringify(c?.status));
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'ok\n');
    const w = await s.waitWorld('ok-w', ['Collapsed']);
    const cond = (w.status.conditions as { type: string; status: string }[]).find((x) => x.type === 'Collapsed');
    assert.equal(cond?.status, 'True');
    await s.waitFor('CHECKS stays 1/1 once Collapsed', async () => (await s.get('world', 'ok-w', 'default'))?.status?.checksSummary === '1/1');
    // The World's candidate is PRIME now: a second Collapse of it is refused by name, and so is a revalidation.
    denied(await collapse('ok-col-again', 'ok-w'), 'WORLD_ALREADY_COLLAPSED');
    await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'ok-w-late', namespace: 'default' }, spec: { worldRef: 'ok-w', name: 'verify', revalidate: true } }));
    const late = await checkDone('ok-w-late');
    assert.equal(late.status.phase, 'Refused');
    assert.equal(late.status.reason, 'WORLD_ALREADY_COLLAPSED');
  });

  test('a failing check denies the collapse (CHECK_NOT_PASSED) and PRIME is untouched', async () => {
    const path = await project('bad');
    const r = await runWorld(s, 'bad-w', shWorld(['bad'], 'echo nope > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('bad-w-verify')).status.phase, 'Failed');
    await kc(s.cp, ['wait', '--for=condition=ChecksPassed=False', '--timeout=60s', 'world/bad-w', '-n', 'default']);
    denied(await collapse('bad-col', 'bad-w'), 'CHECK_NOT_PASSED');
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'not yet\n');
    // Both show in the agent's metrics (the first test committed one; this one was denied by name).
    const text = await s.agent.metrics();
    assert.match(text, /worldline_collapses_total\{mode="Candidate",state="DENIED",reason="CHECK_NOT_PASSED"\} [1-9]/);
    assert.match(text, /worldline_collapses_total\{mode="Candidate",state="COMMITTED",reason="none"\} [1-9]/);
    assert.match(text, /worldline_check_verdicts_total\{verdict="FAIL",reason="none"\} [1-9]/);
    assert.match(text, /worldline_collapse_duration_seconds_count\{state="COMMITTED"\} [1-9]/);
  });

  test('a candidate that rewrites its verifier is denied (VERIFIER_MODIFIED_BY_CANDIDATE) even though the check passed', async () => {
    await project('cheat');
    const r = await runWorld(s, 'cheat-w', shWorld(['cheat'], "echo ok > README.md && printf 'exit 0\\n' > checks/verify.sh"));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('cheat-w-verify')).status.phase, 'Passed', 'PRIME verifier ran and passed');
    denied(await collapse('cheat-col', 'cheat-w'), 'VERIFIER_MODIFIED_BY_CANDIDATE');
    // Adding a file where the Policy declares verifiers (one a verifier could source) is refused the same way.
    const added = await runWorld(s, 'cheat-add', shWorld(['cheat'], 'echo ok > README.md && echo "exit 0" > checks/helper.sh'));
    assert.equal(added.status.phase, 'Captured', describeRun(added));
    assert.equal((await checkDone('cheat-add-verify')).status.phase, 'Passed');
    denied(await collapse('cheat-add-col', 'cheat-add'), 'VERIFIER_MODIFIED_BY_CANDIDATE');
  });

  test('a Policy changed after the checks ran makes the evidence stale; a revalidation under it commits', async () => {
    const path = await project('stale');
    const r = await runWorld(s, 'stale-w', shWorld(['stale'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('stale-w-verify')).status.phase, 'Passed');
    const before = await s.get('policy', 'stale-policy');
    await s.apply(policy('stale-policy', 'stale', [{ ...CHECK, timeout: '2m' }]));
    const changed = await s.get('policy', 'stale-policy');
    assert.equal(changed?.metadata.generation, before?.metadata.generation + 1, 'the new spec is a new generation');
    // The Collapse is judged once: wait until the agent's collapse reconciler has the new generation in its view.
    await s.agent.waitForLog((r) => r.msg === 'collapse policy view updated' && r.policy === 'stale-policy' && r.generation === changed?.metadata.generation, 30_000);
    denied(await collapse('stale-col', 'stale-w'), 'EVIDENCE_STALE');

    await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'stale-w-revalidate', namespace: 'default' }, spec: { worldRef: 'stale-w', name: 'verify', revalidate: true } }));
    const re = await checkDone('stale-w-revalidate');
    assert.equal(re.status.phase, 'Passed', JSON.stringify(re.status));
    const c = await collapse('stale-col-2', 'stale-w');
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'ok\n');
  });

  test('a check that ran with other resources than the node gives checks now is stale; a revalidation under them commits', async () => {
    const path = await project('res');
    const r = await runWorld(s, 'res-w', shWorld(['res'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const ran = await checkDone('res-w-verify');
    assert.equal(ran.status.phase, 'Passed');
    // The node's per-run defaults change (checks ask for nothing, so they run with these): 2Gi -> 1Gi of memory.
    await s.restartAgent({ signal: 'SIGTERM', agentArgs: ['--world-default-memory', '1Gi'] });
    try {
      denied(await collapse('res-col', 'res-w'), 'EVIDENCE_STALE');
      await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'res-w-revalidate', namespace: 'default' }, spec: { worldRef: 'res-w', name: 'verify', revalidate: true } }));
      const re = await checkDone('res-w-revalidate');
      assert.equal(re.status.phase, 'Passed', JSON.stringify(re.status));
      assert.notEqual(re.status.requirementHash, ran.status.requirementHash, 'the resources are part of the requirement');
      const c = await collapse('res-col-2', 'res-w');
      assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
      assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'ok\n');
    } finally {
      await s.restartAgent({ signal: 'SIGTERM', agentArgs: [] });
    }
  });

  test('a roster with a check still running is EXECUTION_EVIDENCE_INCOMPLETE', async () => {
    await project('partial', [CHECK, { name: 'slow', command: ['/bin/sh', 'checks/slow.sh'], timeout: '1m' }]);
    const r = await runWorld(s, 'partial-w', shWorld(['partial'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('partial-w-verify')).status.phase, 'Passed');
    const slow = await s.get('check', 'partial-w-slow', 'default');
    assert.notEqual(slow?.status?.phase, 'Passed', 'the slow check has not finished');
    denied(await collapse('partial-col', 'partial-w'), 'EXECUTION_EVIDENCE_INCOMPLETE');
  });

  test('a verifier tampered in the store runs other bytes than declared (VERIFIER_EXECUTION_IDENTITY_MISMATCH)', async () => {
    const path = await project('tamper');
    // Behind the agent's back: the generation's own copy of the verifier (what checks stage) is rewritten,
    // as root inside the store can (limit 9): beneath the payload's read-only seal, since the live link refuses.
    // (The host path shows the owner's view: a write there is an owner's edit, published as a generation.)
    const payload = realpathSync(join(s.storeDir, 'live', basename(path)));
    assert.throws(() => writeFileSync(join(payload, 'checks', 'verify.sh'), 'exit 0\n'), { code: 'EROFS' });
    const tamper = (text: string): Promise<void> => withBeneath(s.storeDir, async (beneath) => writeFileSync(beneath(join(payload, 'checks', 'verify.sh')), text));
    await tamper('exit 0\n');
    const r = await runWorld(s, 'tamper-w', shWorld(['tamper'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const c = await checkDone('tamper-w-verify');
    assert.equal(c.status.reason, 'VERIFIER_EXECUTION_IDENTITY_MISMATCH', JSON.stringify(c.status));
    assert.notEqual(c.status.executedVerifierIdentity, c.status.verifierIdentity);
    const col = await collapse('tamper-col', 'tamper-w');
    // The check was refused (not passed) for the identity mismatch, and PRIME re-hashes differently too
    // (FOREIGN_WRITE), so it no longer is the base the World forked (IDENTITY_MISMATCH_BASE).
    denied(col, 'VERIFIER_EXECUTION_IDENTITY_MISMATCH', 'CHECK_NOT_PASSED', 'FOREIGN_WRITE', 'IDENTITY_MISMATCH_BASE');
    // The Root is marked until its bytes are the recorded generation's again.
    const marked = await s.waitFor('Root tamper PrimeConsistent=False', async () => {
      const root = await s.get('root', 'tamper');
      return root?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'PrimeConsistent' && c.status === 'False') ? root : undefined;
    });
    assert.equal(marked.status.reason, 'FOREIGN_WRITE');
    await tamper('grep -q ok README.md\n');
    await kc(s.cp, ['annotate', 'root', 'tamper', 'worldline.dev/recheck=1', '--overwrite']);
    const lifted = await s.waitFor('Root tamper PrimeConsistent=True', async () => {
      const root = await s.get('root', 'tamper');
      return root?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'PrimeConsistent' && c.status === 'True') ? root : undefined;
    });
    assert.equal(lifted.status.reason, 'READY');
  });

  test('evidence forged at rest is EVIDENCE_CONTEXT_INVALID; evidence stripped of its context is EVIDENCE_CONTEXT_MISSING', async () => {
    await project('forge');
    const failing = await runWorld(s, 'forge-w', shWorld(['forge'], 'echo nope > README.md'));
    assert.equal(failing.status.phase, 'Captured', describeRun(failing));
    assert.equal((await checkDone('forge-w-verify')).status.phase, 'Failed');
    const passing = await runWorld(s, 'strip-w', shWorld(['forge'], 'echo ok > README.md'));
    assert.equal(passing.status.phase, 'Captured', describeRun(passing));
    assert.equal((await checkDone('strip-w-verify')).status.phase, 'Passed');

    await s.restartAgent({
      signal: 'SIGTERM',
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'));
        try {
          // A FAIL rewritten as a PASS; a PASS whose context record is gone.
          assert.equal(db.prepare("UPDATE evaluations SET verdict = 'PASS' WHERE world_uid = ?").run(failing.uid).changes, 1);
          assert.equal(db.prepare('UPDATE evaluations SET context_json = NULL, context_digest = NULL WHERE world_uid = ?').run(passing.uid).changes, 1);
        } finally {
          db.close();
        }
      },
    });
    // The refused row leaves the roster without a valid execution of the check (EXECUTION_EVIDENCE_INCOMPLETE).
    denied(await collapse('forge-col', 'forge-w'), 'EVIDENCE_CONTEXT_INVALID', 'EXECUTION_EVIDENCE_INCOMPLETE');
    denied(await collapse('strip-col', 'strip-w'), 'EVIDENCE_CONTEXT_MISSING', 'EXECUTION_EVIDENCE_INCOMPLETE');
  });

  test('a check result superseded between prepare and commit is refused at the commit boundary (CHECK_NOT_PASSED)', async () => {
    // The verifier passes while a host file (visible in the sandbox through the bound /etc) is absent, so a
    // second run of the same check on the same bytes can fail: a real run, recorded by the agent.
    const marker = `/etc/worldline-test-supersede-${process.pid}`;
    const path = join(s.scratch, 'supersede');
    ownedDir(path);
    ownedDir(join(path, 'checks'));
    ownedFile(join(path, 'checks', 'verify.sh'), `grep -q ok README.md && ! test -e ${marker}\n`);
    ownedFile(join(path, 'README.md'), 'not yet\n');
    assert.equal((await applyRoot(s, 'supersede', path)).status.phase, 'Ready');
    await s.apply(policy('supersede-policy', 'supersede', [CHECK]));
    const r = await runWorld(s, 'supersede-w', shWorld(['supersede'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    assert.equal((await checkDone('supersede-w-verify')).status.phase, 'Passed');
    const flag = join(s.storeDir, 'test-hooks', 'after-authorized.paused');
    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: 'after-authorized:pause' } });
    try {
      await s.apply(collapseManifest('supersede-col', 'supersede-w'));
      await s.waitFor('the collapse paused after it was authorized', async () => existsSync(flag), 60_000);
      // The decision at prepare authorized it on the passing run (shown once the collapse's hold passed).
      await s.waitFor('the paused collapse shows Authorized', async () => (await s.get('collapse', 'supersede-col', 'default'))?.status?.phase === 'Authorized', 10_000);
      // Between the two decisions a newer run of the same check, on the same bytes, fails.
      writeFileSync(marker, 'fail\n', { mode: 0o644 });
      await s.apply(JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Check', metadata: { name: 'supersede-w-rerun', namespace: 'default' }, spec: { worldRef: 'supersede-w', name: 'verify' } }));
      assert.equal((await checkDone('supersede-w-rerun')).status.phase, 'Failed');
      rmSync(flag);
      const c = await waitCollapse(s, 'supersede-col');
      denied(c, 'CHECK_NOT_PASSED');
      assert.equal(c.status.message, 'denied at the commit boundary: CHECK_NOT_PASSED', 'refused by the second decision, not the first');
      assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'not yet\n', 'PRIME moved');
    } finally {
      rmSync(marker, { force: true });
      rmSync(flag, { force: true });
    }
    await s.restartAgent({ signal: 'SIGTERM' });
  });

  test('staged bytes changed between staging and commit are STAGED_UNTESTED; PRIME stays the base', async () => {
    const path = await project('staged', null);
    const r = await runWorld(s, 'staged-w', shWorld(['staged'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));
    const flag = join(s.storeDir, 'test-hooks', 'after-verify.paused');
    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: 'after-verify:pause' } });
    await s.apply(collapseManifest('staged-col', 'staged-w'));
    await s.waitFor('the collapse paused after staging', async () => existsSync(flag), 60_000);
    const staging = join(s.storeDir, 'staging');
    const dirs = readdirSync(staging).filter((d) => d.startsWith('collapse-'));
    assert.equal(dirs.length, 1, dirs.join(','));
    writeFileSync(join(staging, dirs[0]!, 'layer', 'README.md'), 'ok, and something nobody tested\n');
    rmSync(flag);
    const c = await waitCollapse(s, 'staged-col');
    denied(c, 'STAGED_UNTESTED');
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'not yet\n');
    await s.restartAgent({ signal: 'SIGTERM' });
    // The ledger still verifies end to end.
    execFileSync(process.execPath, [new URL('../../cli/worldline.js', import.meta.url).pathname, 'receipts', 'verify', '--ledger', join(s.storeDir, 'receipts', 'ledger.jsonl'), '--public-key', join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem')]);
  });
});
