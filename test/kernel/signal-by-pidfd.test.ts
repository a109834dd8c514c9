// Signals that can only reach what they are meant for. The node-agent is root: a kill by pid number after
// that pid's process was reaped lands on whichever host process holds the number next. Shown here on the
// real kernel: a cgroup's members are signalled through pidfds and a pid listed once but no longer a member
// is never signalled (signal-members.ts); and a World killed after it ended does not kill the process that
// now has its pid 1's number — the number is handed on on purpose, through the kernel's ns_last_pid.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nsIds } from '../../native/index.js';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { signalMembers } from '../../node-agent/sandbox/signal-members.js';
import { startWorkload } from '../../node-agent/sandbox/supervise.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { requireRoot } from '../support/require-root.js';
import { waitFor } from '../support/wait.js';
import { buildRootfs, Cleanup, WORLD_MAP } from './native-fixtures.js';

requireRoot('signals by pidfd (cgroups, pid namespaces, ns_last_pid)');
const cleanup = new Cleanup();
after(() => cleanup.run());
const layout = detectCgroups();
const base = cleanup.tempDir('signals');
const rootfs = buildRootfs(base, cleanup);
let n = 0;

function cgroup(): WorldCgroup {
  const cg = WorldCgroup.create(layout, 'worldline', `signal-test-${process.pid}-${++n}`);
  cleanup.add(() => {
    cg.killAll();
    cg.remove();
  });
  return cg;
}

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  cleanup.add(() => child.kill('SIGKILL'));
  return child;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const ended = (c: ChildProcess): Promise<NodeJS.Signals | null> =>
  c.exitCode !== null || c.signalCode !== null ? Promise.resolve(c.signalCode) : new Promise((resolve) => c.once('exit', (_code, sig) => resolve(sig)));

test('a cgroup is signalled member by member through pidfds; a pid that is no longer a member is not signalled', async () => {
  const cg = cgroup();
  const member = sleeper();
  const foreign = sleeper();
  await waitFor('both sleepers started', async () => (member.pid && foreign.pid ? true : undefined), 5000, 20);
  for (const f of cg.procsFiles()) writeFileSync(f, String(member.pid));
  assert.deepEqual(cg.pids(), [member.pid]);
  // The first read lists the foreign process too, as a stale read would: the pid it had when the cgroup
  // was read, now another process's. Only what is still a member at the second read is signalled.
  let reads = 0;
  const sent = signalMembers(() => (reads++ === 0 ? [foreign.pid!, ...cg.pids()] : cg.pids()), 'SIGTERM');
  assert.equal(sent, 1);
  assert.equal(await ended(member), 'SIGTERM');
  assert.ok(alive(foreign.pid!), 'the process that was only listed once was not signalled');
  // Through the cgroup itself: every member, and the cgroup empties.
  const more = [sleeper(), sleeper()];
  await waitFor('sleepers started', async () => (more.every((c) => c.pid) ? true : undefined), 5000, 20);
  for (const c of more) for (const f of cg.procsFiles()) writeFileSync(f, String(c.pid));
  assert.equal(cg.signalAll('SIGKILL'), 2);
  assert.deepEqual(await Promise.all(more.map(ended)), ['SIGKILL', 'SIGKILL']);
  assert.ok(alive(foreign.pid!));
  assert.equal(signalMembers(() => [], 'SIGKILL'), 0);
});

/** Starts a process that gets `pid`, by setting the kernel's last-given pid just below it; undefined when another process took it first. */
async function spawnAt(pid: number): Promise<ChildProcess | undefined> {
  writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
  const child = sleeper();
  await waitFor('the sleeper started', async () => (child.pid ? true : undefined), 5000, 20);
  if (child.pid === pid) return child;
  child.kill('SIGKILL');
  return undefined;
}

test("a World killed after it ended does not kill the process that now holds its pid 1's number", async () => {
  const cg = cgroup();
  cg.applyAndVerify({ cpuMillis: 500, memoryBytes: 128 * 1024 * 1024, pids: 32 });
  const running = await startWorkload({
    rootfs, argv: ['/bin/sh', '-c', 'exit 0'], env: ['PATH=/usr/bin:/bin'], cwd: '/', uid: 1000, gid: 1000,
    uidMap: WORLD_MAP, gidMap: WORLD_MAP, newNetwork: true, cgroup: cg, outputFile: join(base, 'world.log'),
    supervisorCgroupProcs: supervisorCgroupProcs(layout), outputLimitBytes: 4096, wallTimeMs: 20_000,
  }, nsIds('self'));
  const end = await running.done;
  assert.equal(end.code, 0);
  let holder: ChildProcess | undefined;
  for (let attempt = 0; attempt < 20 && holder === undefined; attempt++) holder = await spawnAt(running.pid);
  assert.ok(holder, `no process could be given pid ${running.pid} in 20 attempts (other processes kept taking it)`);
  running.kill('WallTimeExceeded');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.ok(alive(running.pid), `pid ${running.pid}, now an unrelated sleep, is alive after the ended World was killed`);
  assert.equal(holder.exitCode, null);
  assert.equal(holder.signalCode, null);
});
