// Worlds outlive their node-agent (issue 12): each World's workload runs under its own supervisor (the
// shim, native/src/shim/shim.c), not as a child of the agent. The node-agent is replaced while Worlds and
// a Check run — by kill -9 and by a graceful SIGTERM restart — and every World still ends with its REAL
// exit code and all of its output (written while no agent ran), the Check reaches the verdict it would
// have reached, and afterwards nothing is mounted, left in a cgroup, running or reserved. A World whose
// supervisor is killed too ends SUPERVISOR_LOST, cleaned up the same way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metricSum } from '../support/metrics-text.js';
import { kc } from '../support/wait.js';
import { supervisors } from '../support/supervisors.js';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, hostProcesses, mountsBelow, outputOf, ownedDir, ownedFile, shWorld, worldCgroupExists, worldManifest } from '../support/worlds.js';

const POLICY = {
  apiVersion: 'worldline.dev/v1alpha1',
  kind: 'Policy',
  metadata: { name: 'restart-policy' },
  spec: {
    roots: ['proj'],
    // The check takes a few seconds, so the agent is replaced while it runs.
    checks: [{ name: 'verify', command: ['/bin/sh', 'checks/verify.sh'], verifiers: ['checks/**'], timeout: '2m' }],
    isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] }, check: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } },
  },
};
const WORLDS = 3;
/** Small enough that the Check and every World of a test fit the node's admission ceilings together. */
const SMALL = { cpu: '100m', memory: '128Mi' };
const ANY_PHASE = ['Running', 'Captured', 'Failed', 'Refused'];

/** A World that prints, waits (across the restart) until the test releases it, prints again, and exits 7 (its real code). */
function sevens(tag: string): ReturnType<typeof shWorld> {
  return shWorld(['proj'], `echo before-${tag}; while [ ! -e go-${tag} ]; do sleep 0.${tag}; done; rm -f go-${tag}; echo after-${tag}; exit 7`, { resources: { ...SMALL, wallTime: '5m' } });
}

/** Releases a waiting World: its go file, written from the host through the World's own view of the Root, owned by its uid 1000. */
function release(s: Stack, w: Record<string, any>, tag: string): void {
  const uid = w.metadata.uid as string;
  const merged = mountsBelow(join(s.storeDir, 'worlds', uid)).find((m) => m.endsWith('/merged'));
  assert.ok(merged, `World ${uid} has its Root mounted`);
  const base = Number(w.status.isolation.observation.uidMap[0].outside);
  writeFileSync(join(merged, `go-${tag}`), '');
  chownSync(join(merged, `go-${tag}`), base + 1000, base + 1000);
}

async function reservedWorlds(s: Stack): Promise<number> {
  return metricSum(await s.agent.metrics(), 'worldline_admission_reserved', { resource: 'worlds' });
}

const shims = supervisors;

/** Host processes of the test's worlds: each World's pid 1 (its script, or its sleep), found by its tag. */
/**
 * How many of the tagged Worlds have a workload process alive (counted per World, not per process: the
 * shell forks for each `sleep`, and between fork and exec its child shows the shell's own command line, so
 * counting processes saw one World twice now and then).
 */
function sleepsTagged(tags: string[]): number {
  const procs = hostProcesses();
  return tags.filter((t) => procs.some((p) => p.cmdline.some((a) => a.includes(`before-${t};`) || a === `60.${t}`))).length;
}

/** The cgroup paths of a process, one per hierarchy (/proc/<pid>/cgroup). */
function cgroupsOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').filter((l) => l !== '').map((l) => l.slice(l.indexOf(':', l.indexOf(':') + 1) + 1));
}

describe('Worlds and Checks outlive a node-agent restart', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'restart-node' });
    const proj = join(s.scratch, 'proj');
    ownedDir(proj);
    ownedDir(join(proj, 'checks'));
    ownedFile(join(proj, 'checks', 'verify.sh'), 'sleep 5\ngrep -q ok README.md\n');
    ownedFile(join(proj, 'README.md'), 'not yet\n');
    const root = await applyRoot(s, 'proj', proj);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await s.apply(JSON.stringify(POLICY));
  });

  after(async () => {
    await s?.stop(); // kills the supervisors left under its store (a failed test may leave Worlds waiting)
  });

  /** Asserts that nothing of the finished worlds is left: mounts, world cgroups, processes, reservations. */
  async function nothingLeft(uids: string[], tags: string[]): Promise<void> {
    await s.waitFor('no mount left below the store\'s worlds and checks', async () => mountsBelow(s.storeDir).filter((m) => m.includes('/worlds/') || m.includes('/checks/')).length === 0, 30_000);
    await s.waitFor('no world cgroup left', async () => uids.every((u) => !worldCgroupExists(u)), 30_000);
    await s.waitFor('no reservation held', async () => (await reservedWorlds(s)) === 0, 30_000);
    assert.equal(sleepsTagged(tags), 0, 'a world\'s workload still runs');
    assert.deepEqual(shims().filter((p) => uids.some((u) => p.log.includes(u))), [], 'a world\'s supervisor still runs');
  }

  async function replaceAgentWhileRunning(signal: 'SIGKILL' | 'SIGTERM', prefix: string): Promise<void> {
    // A captured World whose Check is running when the agent goes.
    await s.apply(worldManifest(`${prefix}-checked`, shWorld(['proj'], 'echo ok > README.md', { resources: SMALL })));
    const checked = await s.waitWorld(`${prefix}-checked`, ['Captured', 'Failed', 'Refused']);
    assert.equal(checked.status.phase, 'Captured', JSON.stringify(checked.status));
    const check = `${prefix}-checked-verify`;
    let seen: unknown;
    await s.waitFor(`Check ${check} Running`, async () => {
      const got = await s.get('check', check, 'default');
      seen = got?.status;
      if (['Passed', 'Failed', 'Refused'].includes(got?.status?.phase)) assert.fail(`Check ${check} ended before the restart: ${JSON.stringify(got?.status)}`);
      return got?.status?.phase === 'Running';
    }, 60_000).catch((e: Error) => assert.fail(`${e.message}; Check status ${JSON.stringify(seen)}`));

    const tags = Array.from({ length: WORLDS }, (_, i) => `${signal === 'SIGKILL' ? 1 : 2}${i}`);
    const names = tags.map((t) => `${prefix}-seven-${t}`);
    await Promise.all(names.map((n, i) => s.apply(worldManifest(n, sevens(tags[i]!)))));
    const running = await Promise.all(names.map((n) => s.waitWorld(n, ANY_PHASE)));
    for (const w of running) assert.equal(w.status.phase, 'Running', JSON.stringify(w.status));
    const uids = running.map((w) => w.metadata.uid as string);
    await s.waitFor('every world printed before the restart', async () => uids.every((u, i) => { try { return outputOf(s, u).includes(`before-${tags[i]}`); } catch { return false; } }), 20_000);
    const supervisorsBefore = shims().filter((p) => uids.some((u) => p.log.includes(u)));
    assert.equal(supervisorsBefore.length, WORLDS, `one supervisor per World: worlds ${uids.join(' ')}; supervisors ${JSON.stringify(shims())}`);
    // Out of the agent's cgroups on every hierarchy (a runtime emptying the agent's cgroups does not reach it).
    for (const p of supervisorsBefore) for (const cg of cgroupsOf(p.pid)) assert.equal(cg, '/worldline/supervisors', `supervisor ${p.pid} cgroups: ${cgroupsOf(p.pid).join(' ')}`);
    const oldAgent = s.agent.pid;

    let sleepingWhileNoAgent = -1;
    let supervisorsWhileNoAgent: number[] = [];
    await s.restartAgent({
      signal,
      between: async () => {
        sleepingWhileNoAgent = sleepsTagged(tags);
        supervisorsWhileNoAgent = shims().filter((p) => uids.some((u) => p.log.includes(u))).map((p) => p.pid);
        // The first World ends while no agent runs: its supervisor records the end and exits.
        release(s, running[0]!, tags[0]!);
        await s.waitFor('the first World\'s supervisor ended', async () => !shims().some((p) => p.log.includes(uids[0]!)), 30_000);
      },
    });
    // The others end while the new agent watches them.
    for (let i = 1; i < WORLDS; i++) release(s, running[i]!, tags[i]!);
    assert.notEqual(s.agent.pid, oldAgent);
    assert.equal(sleepingWhileNoAgent, WORLDS, 'every world kept running while no agent ran');
    assert.deepEqual(supervisorsWhileNoAgent.sort(), supervisorsBefore.map((p) => p.pid).sort(), 'the same supervisors ran on');

    for (const [i, n] of names.entries()) {
      const w = await s.waitWorld(n, ['Captured', 'Failed', 'Refused'], 'default', 60_000);
      assert.equal(w.status.phase, 'Failed', JSON.stringify(w.status));
      assert.equal(w.status.reason, 'AGENT_EXIT_NONZERO', JSON.stringify(w.status));
      assert.equal(w.status.exit?.code, 7, 'the real exit code of the workload');
      assert.equal(w.status.exit?.reason, 'Completed');
      assert.ok(w.status.candidate?.digest, 'its changes were captured');
      const out = outputOf(s, w.metadata.uid as string);
      assert.match(out, new RegExp(`^before-${tags[i]}$`, 'm'));
      assert.match(out, new RegExp(`^after-${tags[i]}$`, 'm'), 'output written while no agent ran is kept');
    }
    assert.ok(s.agent.logs.some((r) => r.msg === 're-attached to a running world\'s supervisor'), 'the new agent re-attached');

    const c = await s.waitFor(`Check ${check} finished`, async () => {
      const got = await s.get('check', check, 'default');
      return ['Passed', 'Failed', 'Refused'].includes(got?.status?.phase) ? got : undefined;
    }, 90_000);
    assert.equal(c.status.phase, 'Passed', JSON.stringify(c.status));
    assert.equal(c.status.exit?.code, 0);
    assert.equal(c.status.subject, checked.status.candidate.digest);

    await nothingLeft([...uids, checked.metadata.uid as string], tags);
    assert.equal(s.agent.logs.filter((r) => r.level === 'error').length, 0, JSON.stringify(s.agent.logs.filter((r) => r.level === 'error')));
  }

  test('kill -9 of the node-agent: every World ends with its real exit code, the Check passes, nothing is left', async () => {
    await replaceAgentWhileRunning('SIGKILL', 'k9');
  });

  test('a graceful SIGTERM restart detaches: every World ends with its real exit code, the Check passes, nothing is left', async () => {
    await replaceAgentWhileRunning('SIGTERM', 'term');
  });

  test('a World whose supervisor is killed with the agent ends SUPERVISOR_LOST, and is cleaned up', async () => {
    const tag = '31';
    await s.apply(worldManifest('lost', shWorld(['proj'], `sleep 60.${tag}`, { resources: { ...SMALL, wallTime: '2m' } })));
    const w = await s.waitWorld('lost', ANY_PHASE);
    assert.equal(w.status.phase, 'Running', JSON.stringify(w.status));
    const uid = w.metadata.uid as string;
    await s.restartAgent({
      between: () => {
        const mine = shims().filter((p) => p.log.includes(uid));
        assert.equal(mine.length, 1, 'the World has one supervisor');
        process.kill(mine[0]!.pid, 'SIGKILL');
      },
    });
    const end = await s.waitWorld('lost', ['Failed', 'Captured'], 'default', 30_000);
    assert.equal(end.status.phase, 'Failed');
    assert.equal(end.status.reason, 'SUPERVISOR_LOST', JSON.stringify(end.status));
    assert.match(end.status.message, /supervisor/);
    await nothingLeft([uid], [tag]);
  });

  test('deleting a re-attached World still kills it', async () => {
    const tag = '41';
    await s.apply(worldManifest('deleted', shWorld(['proj'], `sleep 60.${tag}`, { resources: { ...SMALL, wallTime: '2m' } })));
    const w = await s.waitWorld('deleted', ANY_PHASE);
    assert.equal(w.status.phase, 'Running', JSON.stringify(w.status));
    const uid = w.metadata.uid as string;
    await s.restartAgent();
    await s.waitFor('the new agent re-attached', async () => s.agent.logs.some((r) => r.msg === 're-attached to a running world\'s supervisor' && String(r.world).endsWith('/deleted')), 30_000);
    assert.equal(sleepsTagged([tag]), 1);
    await kc(s.cp, ['delete', 'world', 'deleted', '-n', 'default', '--wait=false']);
    await s.waitFor('World deleted (its finalizer released by the agent)', async () => (await s.get('world', 'deleted', 'default')) === undefined, 60_000);
    await nothingLeft([uid], [tag]);
  });
});
