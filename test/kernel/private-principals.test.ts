// The private evaluator's three principals on the real kernel: one user namespace maps exactly the
// examiner (0), the worker (1) and the candidate (2) onto three host ids; each role is started into it by
// the supervised spawn with its own mount, PID, IPC, UTS, cgroup and network namespaces, and its frame is
// checked against its pins before anything of its workload runs. Shown here: the ids the kernel gives each
// role (inside and on the host), the shared user namespace and the separate others, what the candidate
// cannot read or write of the examiner's, refusals by name for a path in the wrong role, and maps that
// would include host root or the node-agent's ids refused before any namespace exists.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { bindMount, nsIds } from '../../native/index.js';
import { ROLE_PATHS, type Role } from '../../core/private-evaluator/principals.js';
import { BoundaryFailed, CheckPrincipals, type RoleSpec } from '../../node-agent/private-evaluator/check-principals.js';
import { detectCgroups, WorldCgroup } from '../../node-agent/sandbox/cgroup.js';
import { readSupervisorExit, exitFileFor } from '../../node-agent/sandbox/supervisor-record.js';
import { supervisorCgroupProcs } from '../../node-agent/sandbox/supervisor-cgroup.js';
import { requireRoot } from '../support/require-root.js';
import { Cleanup, buildRootfs } from './native-fixtures.js';

requireRoot('the private evaluator principals');
const cleanup = new Cleanup();
after(() => cleanup.run());
const agentNs = nsIds('self');
const layout = detectCgroups();
const HOST_BASE = 3_100_000;
const base = cleanup.tempDir('principals');
// A directory every role sees at /work (read-write): what one principal may do to another's files.
const shared = join(base, 'shared');
mkdirSync(shared);
let runs = 0;

/** A role's root filesystem with the given role paths in it (a directory for the report, listening sockets for the brokers). */
function roleRootfs(name: string, paths: (keyof typeof ROLE_PATHS)[]): string {
  const dir = join(base, name);
  mkdirSync(dir);
  const rootfs = buildRootfs(dir, cleanup);
  bindMount(shared, join(rootfs, 'work'), { readonly: false, recursive: false, nosuid: true, nodev: true });
  cleanup.mounted(join(rootfs, 'work'));
  mkdirSync(join(rootfs, 'run'), { mode: 0o755 });
  for (const p of paths) {
    const at = join(rootfs, ROLE_PATHS[p]);
    if (p === 'report') {
      mkdirSync(at, { mode: 0o700 });
      chownSync(at, HOST_BASE, HOST_BASE);
    } else {
      const server: Server = createServer().listen(at);
      cleanup.add(() => server.close());
    }
  }
  return rootfs;
}

function roleSpec(rootfs: string, script: string): RoleSpec {
  const name = `pe-test-${process.pid}-${++runs}`;
  const cgroup = WorldCgroup.create(layout, 'worldline', name);
  cleanup.add(() => {
    cgroup.killAll();
    cgroup.remove();
  });
  cgroup.applyAndVerify({ cpuMillis: 500, memoryBytes: 128 * 1024 * 1024, pids: 64 });
  return {
    rootfs,
    argv: ['/bin/sh', '-c', script],
    env: ['PATH=/usr/bin:/bin', 'LANG=C'],
    cwd: '/',
    cgroup,
    outputFile: join(base, `${name}.log`),
    supervisorCgroupProcs: supervisorCgroupProcs(layout),
    outputLimitBytes: 64 * 1024,
    wallTimeMs: 20_000,
  };
}

const examinerRoot = roleRootfs('examiner', ['report', 'examinerBroker']);
const workerRoot = roleRootfs('worker', ['workerBroker']);
const candidateRoot = roleRootfs('candidate', []);

/** Runs one role to its end; its output and its host uid/gid as /proc showed them while it ran. */
async function runRole(p: CheckPrincipals, role: Role, rootfs: string, script: string): Promise<{ out: string; code: number | null; hostUid: string; hostGid: string }> {
  const spec = roleSpec(rootfs, script);
  const running = await p.start(role, spec);
  const status = readFileSync(`/proc/${running.pid}/status`, 'utf8');
  const end = await running.done;
  return {
    out: readFileSync(spec.outputFile, 'utf8'),
    code: end.code,
    hostUid: /^Uid:\t(.*)$/m.exec(status)![1]!,
    hostGid: /^Gid:\t(.*)$/m.exec(status)![1]!,
  };
}

const PROBE = 'sleep 0.3; id -u; id -g; id -G; readlink /proc/self/ns/user /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net; cat /proc/self/uid_map; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status';

test('three roles share one user namespace: own ids inside and on the host, own PID, mount and network namespaces, no capabilities', async () => {
  const p = CheckPrincipals.open(HOST_BASE, agentNs);
  cleanup.add(() => p.close());
  // The examiner runs while the worker and candidate do (namespace ids are unique only among live namespaces).
  await assert.rejects(p.start('worker', roleSpec(workerRoot, 'true')), /worker: started while no examiner runs/);
  const examinerRun = runRole(p, 'examiner', examinerRoot, `${PROBE}; sleep 2`);
  while (p.observations().length === 0) await new Promise((r) => setTimeout(r, 20));
  const worker = await runRole(p, 'worker', workerRoot, PROBE);
  const candidate = await runRole(p, 'candidate', candidateRoot, PROBE);
  const results = { examiner: await examinerRun, worker, candidate };
  const ns: Record<string, string[]> = {};
  (['examiner', 'worker', 'candidate'] as const).forEach((role, id) => {
    const r = results[role];
    assert.equal(r.code, 0, r.out);
    const lines = r.out.trim().split('\n');
    assert.deepEqual(lines.slice(0, 3), [String(id), String(id), String(id)], `${role}: its own uid, gid and no other group`);
    assert.equal(r.hostUid, Array(4).fill(String(HOST_BASE + id)).join('\t'), `${role}: host uid`);
    assert.equal(r.hostGid, Array(4).fill(String(HOST_BASE + id)).join('\t'), `${role}: host gid`);
    ns[role] = lines.slice(3, 7);
    assert.match(lines[7]!, new RegExp(`^\\s*0\\s+${HOST_BASE}\\s+3$`), `${role}: exactly three ids mapped`);
    assert.deepEqual(lines.slice(8), ['CapEff:\t0000000000000000', 'CapBnd:\t0000000000000000', 'NoNewPrivs:\t1'], `${role}: no capabilities`);
  });
  assert.equal(ns['examiner']![0], p.pins.usernsId);
  assert.equal(ns['worker']![0], p.pins.usernsId);
  assert.equal(ns['candidate']![0], p.pins.usernsId);
  for (const i of [1, 2, 3]) {
    assert.notEqual(ns['worker']![i], ns['examiner']![i], `worker and examiner: ${ns['worker']![i]}`);
    assert.notEqual(ns['candidate']![i], ns['examiner']![i], `candidate and examiner: ${ns['candidate']![i]}`);
  }
  assert.notEqual(ns['examiner']![3], `net:[${agentNs.net.replace(/\D/g, '')}]`);
  assert.deepEqual(p.observations().map((o) => o.role), ['examiner', 'worker', 'candidate']);
  assert.doesNotThrow(() => p.assertBoundary());
});

test('a second examiner is refused, and nothing starts once the examiner has ended', async () => {
  const p = CheckPrincipals.open(HOST_BASE, agentNs);
  cleanup.add(() => p.close());
  await runRole(p, 'examiner', examinerRoot, 'sleep 0.2'); // alive while runRole reads its /proc status
  await assert.rejects(p.start('examiner', roleSpec(examinerRoot, 'true')), /a second examiner was started/);
  await assert.rejects(p.start('candidate', roleSpec(candidateRoot, 'true')), /candidate: started while no examiner runs/);
});

test('the candidate cannot read or change the examiner\'s files, nor signal it; the examiner can read its own', async () => {
  const dir = join(shared, 'examiner-only');
  mkdirSync(dir, { mode: 0o755 });
  chownSync(dir, HOST_BASE, HOST_BASE);
  writeFileSync(join(dir, 'secret'), 'examiner secret\n', { mode: 0o600 });
  chownSync(join(dir, 'secret'), HOST_BASE, HOST_BASE);
  chmodSync(join(dir, 'secret'), 0o600);
  const p = CheckPrincipals.open(HOST_BASE, agentNs);
  cleanup.add(() => p.close());
  const examinerSpec = roleSpec(examinerRoot, 'cat /work/examiner-only/secret; sleep 5');
  const examiner = await p.start('examiner', examinerSpec);
  const attack = [
    'cat /work/examiner-only/secret && echo READ',
    'echo x > /work/examiner-only/secret && echo WROTE',
    'touch /work/examiner-only/new && echo CREATED',
    `kill -0 ${examiner.pid} && echo SIGNALLED`,
    'unshare -U true && echo NESTED',
    'ls /run',
    'echo done',
  ].join('; ');
  const candidate = await runRole(p, 'candidate', candidateRoot, attack);
  examiner.kill();
  await examiner.done.catch(() => undefined);
  assert.doesNotMatch(candidate.out, /READ|WROTE|CREATED|SIGNALLED|NESTED/, candidate.out);
  assert.match(candidate.out, /Permission denied/);
  assert.match(candidate.out, /done$/m);
  assert.ok(!existsSync(join(dir, 'new')));
  assert.equal(readFileSync(join(dir, 'secret'), 'utf8'), 'examiner secret\n');
  assert.equal(readFileSync(examinerSpec.outputFile, 'utf8'), 'examiner secret\n', 'the examiner reads its own file');
});

test('a role frame that shows another role\'s path, or lacks its own, refuses the run by name, and its workload never runs', async () => {
  const p = CheckPrincipals.open(HOST_BASE, agentNs);
  cleanup.add(() => p.close());
  // An examiner without its report directory.
  const lacking = roleSpec(candidateRoot, 'echo RAN');
  await assert.rejects(p.start('examiner', lacking), /examiner: \/run\/worldline-report is absent, expected present/);
  assert.deepEqual(p.observations(), [], 'a refused frame is not kept');
  const examiner = await p.start('examiner', roleSpec(examinerRoot, 'sleep 5'));
  // The worker started in the examiner's root filesystem would see the report and the examiner's broker.
  const spec = roleSpec(examinerRoot, 'echo RAN');
  await assert.rejects(p.start('worker', spec), (err: unknown) => {
    assert.ok(err instanceof BoundaryFailed);
    assert.equal(err.code, 'PRIVATE_EVALUATOR_BOUNDARY_FAILED');
    assert.ok(err.problems.includes('worker: /run/worldline-report is present, expected absent (it is the examiner\'s alone)'), err.message);
    assert.ok(err.problems.includes('worker: /run/worldline-examiner-broker.sock is present, expected absent (it is the examiner\'s alone)'), err.message);
    assert.ok(err.problems.includes('worker: /run/worldline-worker-broker.sock is absent, expected present'), err.message);
    return true;
  });
  examiner.kill();
  await examiner.done.catch(() => undefined);
  for (const refused of [lacking, spec]) {
    assert.ok(!existsSync(refused.outputFile) || !readFileSync(refused.outputFile, 'utf8').includes('RAN'), 'nothing of the workload ran');
    const end = readSupervisorExit(exitFileFor(refused.outputFile));
    assert.ok(end !== undefined && (end.code === 125 || end.signal === 'SIGKILL'), `no go-ahead (125) or killed first: ${JSON.stringify(end)}`);
  }
  assert.deepEqual(p.observations().map((o) => o.role), ['examiner']);
});

test('maps over host root or the node-agent\'s own ids are refused before any namespace exists', () => {
  assert.throws(() => CheckPrincipals.open(0, agentNs), (err: unknown) => err instanceof BoundaryFailed && err.problems.includes('uid_map maps the examiner onto host root'));
  assert.throws(() => CheckPrincipals.open(HOST_BASE, agentNs, [HOST_BASE + 2]), (err: unknown) => err instanceof BoundaryFailed && err.problems.includes(`gid_map maps the candidate onto the node-agent's own id ${HOST_BASE + 2}`));
});

test('joining a user namespace takes a supervised spawn, and probe paths are checked before anything is cloned', async () => {
  const { spawnSandbox, spawnSupervisedSandbox, MAX_PROBE_PATHS } = await import('../../native/index.js');
  const opts = { rootfs: candidateRoot, argv: ['/bin/true'], env: [], cwd: '/', uid: 2, gid: 2, uidMap: [{ inside: 0, outside: HOST_BASE, count: 3 }], gidMap: [{ inside: 0, outside: HOST_BASE, count: 3 }], hostname: 'role', newNetwork: true, cgroupProcs: [] };
  assert.throws(() => spawnSandbox({ ...opts, userns: 0 }, () => undefined), /joining a user namespace takes a supervised spawn/);
  const sup = { path: '/bin/false', argv: ['x'], cgroupProcs: [] };
  assert.throws(() => spawnSupervisedSandbox({ ...opts, probePaths: ['run/x'] }, () => undefined, sup), /must be an absolute path/);
  assert.throws(() => spawnSupervisedSandbox({ ...opts, probePaths: ['/run/a\nb'] }, () => undefined, sup), /not a probe path/);
  assert.throws(() => spawnSupervisedSandbox({ ...opts, probePaths: Array.from({ length: MAX_PROBE_PATHS + 1 }, (_, i) => `/p${i}`) }, () => undefined, sup), /at most 16 paths/);
});
