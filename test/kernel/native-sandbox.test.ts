// spawnSandbox as root on the real kernel: the workload runs as the requested unprivileged identity with
// no capabilities, no_new_privs, its own namespaces, no nested user namespaces, the requested network and
// cgroup, its exit delivered to onExit; host root is never mapped; killing it kills the whole pid ns.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { machine } from 'node:os';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nsIds, observationProblems, spawnSandbox, SandboxSetupError, type SandboxObservation } from '../../native/index.js';
import { binding } from '../../native/binding.js';
import { Cleanup, WORLD_MAP, buildRootfs, closeQuietly, readAll, run, sandboxOptions, start } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('sandbox');
const rootfs = buildRootfs(base, cleanup);
const agentNs = nsIds('self');

const SPAWN_ENV = sandboxOptions(rootfs, 'true').env;

function expectation(newNetwork: boolean) {
  return { uid: 1000, gid: 1000, uidMap: WORLD_MAP, gidMap: WORLD_MAP, agentNs, newNetwork, env: SPAWN_ENV };
}

test('runs as uid/gid 1000 with no capabilities and NoNewPrivs, and the observation frame checks out', async () => {
  const r = await run(sandboxOptions(rootfs, 'id -u; id -g; id -G; cat /proc/self/status'));
  assert.deepEqual(r.exit, { code: 0, signal: null }, r.stderr);
  const lines = r.stdout.split('\n');
  assert.equal(lines[0], '1000');
  assert.equal(lines[1], '1000');
  assert.equal(lines[2], '1000', 'no supplementary groups');
  for (const cap of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.match(r.stdout, new RegExp(`^${cap}:\\t0{16}$`, 'm'));
  assert.match(r.stdout, /^NoNewPrivs:\t1$/m);
  assert.match(r.stdout, /^Uid:\t1000\t1000\t1000\t1000$/m);
  assert.deepEqual(observationProblems(r.observation, expectation(true)), []);
  assert.equal(r.observation.uid.effective, 1000);
  assert.equal(r.observation.capBnd, 0n);
  assert.deepEqual(r.observation.uidMap, WORLD_MAP);
  // The kernel names the machine in the frame, as the workload's own uname(2) sees it.
  assert.deepEqual(r.observation.kernel, { sysname: 'Linux', machine: machine() });
});

test('observationProblems is not vacuous: each deviation is reported', () => {
  const good: SandboxObservation = {
    uid: { real: 1000, effective: 1000, saved: 1000, fs: 1000 },
    gid: { real: 1000, effective: 1000, saved: 1000, fs: 1000 },
    groups: [], noNewPrivs: 1, seccomp: 0, capInh: 0n, capPrm: 0n, capEff: 0n, capBnd: 0n, capAmb: 0n,
    uidMap: WORLD_MAP, gidMap: WORLD_MAP, setgroups: 'allow',
    ns: { user: 'user:[1]', mnt: 'mnt:[2]', pid: 'pid:[3]', net: 'net:[4]', ipc: 'ipc:[5]', uts: 'uts:[6]', cgroup: 'cgroup:[7]' },
    kernel: { sysname: 'Linux', machine: 'x86_64' },
    status: {},
    environ: SPAWN_ENV,
    paths: {},
  };
  assert.deepEqual(observationProblems(good, expectation(true)), []);
  const bad = (patch: Partial<SandboxObservation>, newNetwork = true) => observationProblems({ ...good, ...patch }, expectation(newNetwork));
  assert.equal(bad({ uid: { ...good.uid, saved: 0 } }).length, 1);
  assert.equal(bad({ gid: { ...good.gid, fs: 0 } }).length, 1);
  assert.equal(bad({ groups: [0] }).length, 1);
  assert.equal(bad({ noNewPrivs: 0 }).length, 1);
  assert.equal(bad({ capBnd: 1n << 21n }).length, 1);
  assert.equal(bad({ capAmb: 1n }).length, 1);
  assert.equal(bad({ uidMap: [{ inside: 0, outside: 0, count: 65536 }] }).length, 1);
  assert.equal(bad({ ns: { ...good.ns, mnt: agentNs.mnt } }).length, 1);
  assert.equal(bad({}, false).length, 1, 'net must be the agent\'s when no new netns was asked for');
  assert.equal(bad({ ns: { ...good.ns, net: agentNs.net } }, false).length, 0);
  assert.deepEqual(bad({ environ: [...SPAWN_ENV, 'PWD=/tmp'] }), ['the environment at exec holds variables the plan did not give it: PWD']);
  assert.deepEqual(bad({ environ: SPAWN_ENV.slice(1) }), ['the environment at exec lacks planned variables: PATH']);
  assert.deepEqual(bad({ environ: [...SPAWN_ENV].reverse() }), ['the environment at exec has the planned entries in another order or repeated']);
  assert.deepEqual(bad({ environ: ['PATH=/tmp/evil', ...SPAWN_ENV.slice(1)] }), ['the environment at exec holds variables the plan did not give it: PATH; lacks planned variables: PATH']);
});

test('the frame reports the exact environment handed to execve, and the workload runs with exactly it', async () => {
  const env = ['PATH=/usr/bin:/bin', 'A=1', 'EMPTY=', 'SPACES=a b\tc', `LONG=${'x'.repeat(40_000)}`];
  // The shell execs env(1) at once: what a late reading of /proc/<pid>/environ would see differs, the frame cannot.
  const r = await run(sandboxOptions(rootfs, 'exec env', { env }));
  assert.deepEqual(r.exit, { code: 0, signal: null }, r.stderr);
  assert.deepEqual(r.observation.environ, env, 'the frame carries the spawn environment, in order, values included (one entry larger than the old 32 KiB frame)');
  assert.deepEqual(observationProblems(r.observation, { ...expectation(true), env }), []);
  const seen = r.stdout.trim().split('\n');
  for (const kv of env.filter((e) => !e.startsWith('LONG='))) assert.ok(seen.includes(kv), `env(1) shows ${kv}`);
  const empty = await run(sandboxOptions(rootfs, 'true', { env: [] }));
  assert.deepEqual(empty.observation.environ, [], 'an empty environment is an empty section, not a missing one');
});

test('nested user namespaces fail and root-only files stay unreadable', async () => {
  assert.ok(readFileSync('/etc/shadow').length > 0, 'host root can read it (sanity)');
  const r = await run(sandboxOptions(rootfs, 'unshare -U true; echo unshare=$?; cat /etc/shadow; echo cat=$?; cat /proc/sys/user/max_user_namespaces'));
  assert.match(r.stdout, /^unshare=[1-9]/m);
  assert.match(r.stdout, /^cat=[1-9]/m);
  assert.match(r.stdout, /^0$/m, 'max_user_namespaces is 0 inside');
  assert.match(r.stderr, /shadow: Permission denied/);
  assert.doesNotMatch(r.stdout, /root:/);
});

test('uid 0 inside (host 200000) gains nothing either', async () => {
  const r = await run(sandboxOptions(rootfs, 'id -u; grep -E "^Cap(Prm|Eff)" /proc/self/status; cat /etc/shadow', { uid: 0, gid: 0 }));
  assert.equal(r.stdout.split('\n')[0], '0');
  assert.match(r.stdout, /^CapPrm:\t0{16}$/m);
  assert.match(r.stdout, /^CapEff:\t0{16}$/m);
  assert.match(r.stderr, /Permission denied/);
  assert.deepEqual(observationProblems(r.observation, { ...expectation(true), uid: 0, gid: 0 }), []);
});

test('newNetwork: only lo; without it the host network namespace is shared', async () => {
  const isolated = await run(sandboxOptions(rootfs, 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'));
  assert.deepEqual(isolated.stdout.trim().split('\n'), ['lo']);
  assert.notEqual(isolated.observation.ns.net, agentNs.net);

  const shared = await run(sandboxOptions(rootfs, 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort', { newNetwork: false }));
  const hostIfs = readFileSync('/proc/net/dev', 'utf8').trim().split('\n').slice(2).map((l) => l.split(':')[0]!.trim()).sort();
  assert.deepEqual(shared.stdout.trim().split('\n'), hostIfs);
  assert.equal(shared.observation.ns.net, agentNs.net);
  assert.deepEqual(observationProblems(shared.observation, expectation(false)), []);
});

test('host uid/gid 0 is never mapped: spawn refuses before cloning, in TS and in C', () => {
  const before = readdirSync('/proc').length;
  for (const map of [[{ inside: 0, outside: 0, count: 1 }], [{ inside: 0, outside: 0, count: 65536 }], [...WORLD_MAP, { inside: 70000, outside: 0, count: 1 }]]) {
    assert.throws(() => spawnSandbox(sandboxOptions(rootfs, 'true', { uidMap: map }), () => assert.fail('must not run')), {
      code: 'ERR_INVALID_ARG_VALUE',
      message: /host id 0/,
    });
    assert.throws(() => spawnSandbox(sandboxOptions(rootfs, 'true', { gidMap: map }), () => assert.fail('must not run')), /host id 0/);
    assert.throws(() => binding.spawnSandbox(sandboxOptions(rootfs, 'true', { uidMap: map }), () => assert.fail('must not run')), /host id 0/);
  }
  assert.ok(readdirSync('/proc').length <= before + 2, 'no child was left behind');
});

test('other options are validated before cloning', () => {
  const bad = (extra: object) => assert.throws(() => spawnSandbox({ ...sandboxOptions(rootfs, 'true'), ...extra }, () => undefined));
  bad({ rootfs: 'relative' });
  bad({ rootfs: '/' });
  bad({ cwd: 'tmp' });
  bad({ uid: 70000 });
  bad({ argv: [] });
  bad({ env: ['NOEQUALS'] });
  bad({ hostname: 'bad host' });
  bad({ cgroupProcs: ['/sys/fs/cgroup/pids/tasks'] });
});

test('stdin is /dev/null and only fds 0, 1, 2 reach the workload; cwd and hostname are applied', async () => {
  const r = await run(sandboxOptions(rootfs, 'ls /proc/self/fd; readlink /proc/self/fd/0; pwd; hostname', { cwd: '/work', hostname: 'w-123' }));
  const [fds, stdin, cwd, host] = r.stdout.trim().split('\n').reduce<string[]>((acc, l) => {
    if (/^\d+$/.test(l) && acc.length === 0) return [l];
    if (/^\d+$/.test(l) && acc.length === 1) return [`${acc[0]} ${l}`];
    return [...acc, l];
  }, []);
  assert.equal(fds, '0 1 2 3', 'ls itself holds fd 3 for the directory');
  assert.equal(stdin, '/dev/null');
  assert.equal(cwd, '/work');
  assert.equal(host, 'w-123');
});

test('argv[0] without a slash is resolved through PATH from env', async () => {
  const r = await run({ ...sandboxOptions(rootfs, ''), argv: ['echo', 'resolved'] });
  assert.equal(r.stdout, 'resolved\n');
});

test('exit codes and signals reach onExit', async () => {
  assert.deepEqual((await run(sandboxOptions(rootfs, 'exit 7'))).exit, { code: 7, signal: null });
  const { handle, channel, exited } = start(sandboxOptions(rootfs, 'sleep 1000'));
  try {
    await channel.observe();
    channel.go();
    await channel.started();
    process.kill(handle.pid, 'SIGKILL');
    assert.deepEqual(await exited, { code: null, signal: 'SIGKILL' });
  } finally {
    channel.close();
    closeQuietly(handle.pidfd);
    for (const fd of [handle.stdout, handle.stderr]) if (fd !== undefined) closeQuietly(fd);
  }
});

test('setup failures and exec failures are error records with exit 126 / 127; no go-ahead is 125', async () => {
  const bad = start(sandboxOptions(rootfs, 'true', { cwd: '/does-not-exist' }));
  await assert.rejects(bad.channel.observe(), (e: SandboxSetupError) => e.stage === 'chdir_cwd' && e.errnoCode === 'ENOENT');
  assert.equal((await bad.exited).code, 126);
  bad.channel.close();

  const noexec = start({ ...sandboxOptions(rootfs, ''), argv: ['/nonexistent'] });
  await noexec.channel.observe();
  noexec.channel.go();
  await assert.rejects(noexec.channel.started(), (e: SandboxSetupError) => e.stage === 'execve' && e.errnoCode === 'ENOENT');
  assert.equal((await noexec.exited).code, 127);
  noexec.channel.close();

  const refused = start(sandboxOptions(rootfs, 'echo ran'));
  const out = readAll(refused.handle.stdout!);
  await refused.channel.observe();
  refused.channel.abort();
  assert.equal((await refused.exited).code, 125);
  assert.equal(await out, '', 'the workload never ran');
  refused.channel.close();
  for (const h of [bad.handle, noexec.handle, refused.handle]) closeQuietly(h.pidfd);
});

function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
  } catch {
    return null;
  }
}

function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

test('SIGKILL to the world pid kills a background child too (pid namespace teardown)', async () => {
  const { handle, channel, exited } = start(sandboxOptions(rootfs, 'sleep 1000 & sleep 1000'));
  try {
    await channel.observe();
    channel.go();
    await channel.started();
    // Both children forked and exec'd (right after the fork a child still shows sh's command line).
    const cmdline = (k: number): string => {
      try {
        return readFileSync(`/proc/${k}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    };
    let kids: number[] = [];
    for (let i = 0; i < 250 && !(kids.length === 2 && kids.every((k) => cmdline(k) === 'sleep\u00001000\u0000')); i++) {
      await sleep(20);
      kids = descendants(handle.pid);
    }
    assert.equal(kids.length, 2, 'both sleeps are running');
    const starts = kids.map((k) => [k, startTime(k)] as const);
    for (const k of kids) assert.deepEqual(readFileSync(`/proc/${k}/cmdline`, 'utf8').split('\0'), ['sleep', '1000', '']);
    process.kill(handle.pid, 'SIGKILL');
    assert.deepEqual(await exited, { code: null, signal: 'SIGKILL' });
    for (const [k, st] of starts) assert.notEqual(startTime(k), st, `sleep ${k} must be gone`);
  } finally {
    channel.close();
    closeQuietly(handle.pidfd);
    for (const fd of [handle.stdout, handle.stderr]) if (fd !== undefined) closeQuietly(fd);
  }
});

test('the parent writes cgroup.procs before the workload runs: a v1 pids limit holds a fork loop', async () => {
  const cg = `/sys/fs/cgroup/pids/wl-native-test-${process.pid}`;
  mkdirSync(cg);
  cleanup.add(() => rmdirSync(cg));
  writeFileSync(join(cg, 'pids.max'), '20');
  const { handle, channel, exited } = start(
    sandboxOptions(rootfs, 'grep pids /proc/self/cgroup; i=0; while [ $i -lt 40 ]; do echo $i; sleep 3 & i=$((i+1)); done; wait', {
      cgroupProcs: [join(cg, 'cgroup.procs')],
    }),
  );
  try {
    const out = readAll(handle.stdout!);
    const err = readAll(handle.stderr!);
    await channel.observe();
    assert.ok(readFileSync(join(cg, 'cgroup.procs'), 'utf8').split('\n').includes(String(handle.pid)), 'joined before exec');
    channel.go();
    await channel.started();
    const exit = await exited;
    assert.equal(exit.signal, null);
    assert.notEqual(exit.code, 0, 'sh gives up when fork fails');
    const lines = (await out).trim().split('\n');
    assert.match(lines[0]!, /^\d+:pids:\/$/, 'the cgroup namespace is rooted at the world cgroup');
    // sh (pid 1 of the world) + 19 sleeps = 20 = pids.max: the fork at i=19 is the first to fail, which
    // also proves sh itself was counted from its first instruction.
    assert.equal(lines.at(-1), '19');
    assert.match(await err, /fork|Resource temporarily unavailable/i);
    const events = readFileSync(join(cg, 'pids.events'), 'utf8');
    assert.ok(Number(/max (\d+)/.exec(events)![1]) >= 1, `forks were refused: ${events}`);
  } finally {
    channel.close();
    closeQuietly(handle.pidfd);
  }
});

test('the world dies with its agent (PR_SET_PDEATHSIG)', async () => {
  const script = join(base, 'agent.mjs');
  const indexUrl = new URL('../../native/index.js', import.meta.url).href;
  writeFileSync(
    script,
    `import { spawnSandbox, SandboxChannel } from ${JSON.stringify(indexUrl)};
const opts = ${JSON.stringify(sandboxOptions(rootfs, 'sleep 1000'))};
const h = spawnSandbox(opts, () => {});
const c = new SandboxChannel(h);
await c.observe();
c.go();
await c.started();
process.stdout.write(String(h.pid) + '\\n');
process.exit(0);
`,
  );
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  child.stdout.on('data', (c: Buffer) => (text += c.toString()));
  await new Promise((r) => child.on('exit', r));
  const pid = Number(text.trim());
  assert.ok(pid > 0, `agent printed the world pid: "${text}"`);
  let alive = true;
  for (let i = 0; i < 100 && alive; i++) {
    const stat = existsSync(`/proc/${pid}`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    alive = stat !== '' && !/\) Z /.test(stat);
    if (alive) await sleep(20);
  }
  if (alive) cleanup.add(() => process.kill(pid, 'SIGKILL'));
  assert.equal(alive, false, 'the world must not outlive the agent');
});
