// enterSandbox as root on the real kernel (`kubectl worldline exec` runs on it): the entered command
// shares every namespace and the cgroup of the running sandbox, runs as its workload's uid/gid with no
// capabilities and NoNewPrivs, sees its files, reports its exit faithfully, names a failed step, and dies
// with its intermediate; a pseudo-terminal gives it a controlling terminal whose size the caller sets.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { ReadStream } from 'node:tty';
import { setTimeout as sleep } from 'node:timers/promises';
import { enterOutcome, enterSandbox, nsIds, SandboxSetupError, setWindowSize, type EnterHandle, type EnterOptions, type SandboxExit } from '../../native/index.js';
import { Cleanup, buildRootfs, closeQuietly, readAll, sandboxOptions, start, type Started } from './native-fixtures.js';

const cleanup = new Cleanup();
const base = cleanup.tempDir('enter');
const rootfs = buildRootfs(base, cleanup);
const cg = `/sys/fs/cgroup/pids/wl-enter-test-${process.pid}`;
let world: Started;

before(async () => {
  mkdirSync(cg);
  cleanup.add(() => rmdirSync(cg));
  writeFileSync(join(cg, 'pids.max'), '64');
  world = start(sandboxOptions(rootfs, 'echo from-the-world > /tmp/marker; exec sleep 300', { cgroupProcs: [join(cg, 'cgroup.procs')] }));
  cleanup.add(() => closeQuietly(world.handle.pidfd));
  await world.channel.observe();
  world.channel.go();
  await world.channel.started();
  for (let i = 0; i < 100 && !safeRead(join(rootfs, 'tmp', 'marker')); i++) await sleep(20);
});

after(async () => {
  try {
    process.kill(world.handle.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  await world?.exited;
  world?.channel.close();
  cleanup.run();
});

function safeRead(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function options(script: string, extra: Partial<EnterOptions> = {}): EnterOptions {
  return { target: world.handle.pidfd, argv: ['/bin/sh', '-c', script], env: ['PATH=/usr/bin:/bin', 'HOME=/tmp'], cwd: '/tmp', uid: 1000, gid: 1000, cgroupProcs: [join(cg, 'cgroup.procs')], tty: false, ...extra };
}

interface Entered {
  handle: EnterHandle;
  exited: Promise<SandboxExit>;
}

function enter(opts: EnterOptions): Entered {
  let done!: (r: SandboxExit) => void;
  const exited = new Promise<SandboxExit>((r) => (done = r));
  const handle = enterSandbox(opts, done);
  return { handle, exited };
}

async function runIn(opts: EnterOptions): Promise<{ stdout: string; stderr: string; exit: SandboxExit; setup: Error | undefined }> {
  const { handle, exited } = enter(opts);
  closeQuietly(handle.stdin!);
  const setup = await enterOutcome(handle.errors).then(() => undefined, (e: Error) => e);
  const [stdout, stderr, exit] = await Promise.all([readAll(handle.stdout!), readAll(handle.stderr!), exited]);
  closeQuietly(handle.pidfd);
  return { stdout, stderr, exit, setup };
}

test('the entered command shares the world\'s namespaces, cgroup and files, as its uid with no privilege', async () => {
  const r = await runIn(options('id -u; id -g; id -G; cat /tmp/marker; echo pid=$$; grep pids /proc/self/cgroup; cat /proc/self/status; for n in user mnt pid net ipc uts cgroup; do readlink /proc/self/ns/$n; done'));
  assert.equal(r.setup, undefined);
  assert.deepEqual(r.exit, { code: 0, signal: null }, r.stderr);
  const lines = r.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 4), ['1000', '1000', '1000', 'from-the-world'], 'uid, gid, no supplementary group, the world\'s own /tmp');
  assert.match(lines[4]!, /^pid=\d+$/);
  assert.notEqual(lines[4], 'pid=1', 'a member of the world\'s pid namespace, not its init');
  assert.ok(Number(lines[4]!.slice(4)) < 1000, 'a pid of the world\'s namespace, not the host\'s');
  assert.match(lines[5]!, /^\d+:pids:\/$/, 'the world\'s cgroup namespace, rooted at its cgroup');
  for (const cap of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.match(r.stdout, new RegExp(`^${cap}:\\t0{16}$`, 'm'));
  assert.match(r.stdout, /^NoNewPrivs:\t1$/m);
  assert.match(r.stdout, /^Uid:\t1000\t1000\t1000\t1000$/m);
  const worldNs = nsIds(world.handle.pid);
  const seen = lines.slice(-8, -1);
  assert.deepEqual(seen, [worldNs.user, worldNs.mnt, worldNs.pid, worldNs.net, worldNs.ipc, worldNs.uts, worldNs.cgroup]);
  assert.notDeepEqual(worldNs.mnt, nsIds('self').mnt, 'control: the world\'s namespaces are not the test\'s');
});

test('the command\'s exit status and terminating signal come back as they were', async () => {
  const seven = await runIn(options('exit 7'));
  assert.deepEqual(seven.exit, { code: 7, signal: null });
  const killed = await runIn(options('kill -TERM $$'));
  assert.deepEqual(killed.exit, { code: null, signal: 'SIGTERM' });
});

test('a failed step is named: a missing program (execve), a missing directory (chdir_cwd), a world that is gone (setns)', async () => {
  const missing = await runIn(options('', { argv: ['/no/such/program'] }));
  assert.ok(missing.setup instanceof SandboxSetupError);
  assert.equal(missing.setup.stage, 'execve');
  assert.equal(missing.setup.errnoCode, 'ENOENT');
  assert.equal(missing.exit.code, 127);
  const cwd = await runIn(options('true', { cwd: '/no/such/dir' }));
  assert.ok(cwd.setup instanceof SandboxSetupError && cwd.setup.stage === 'chdir_cwd' && cwd.setup.errnoCode === 'ENOENT', String(cwd.setup));

  const other = start(sandboxOptions(rootfs, 'exit 0'));
  await other.channel.observe();
  other.channel.go();
  await other.channel.started();
  await other.exited;
  other.channel.close();
  const gone = await runIn(options('true', { target: other.handle.pidfd, cgroupProcs: [] }));
  closeQuietly(other.handle.pidfd);
  assert.ok(gone.setup instanceof SandboxSetupError && gone.setup.stage === 'setns' && gone.setup.errnoCode === 'ESRCH', String(gone.setup));
  assert.equal(gone.exit.code, 126);
});

test('the command dies with its intermediate (parent-death signal), leaving nothing in the world\'s cgroup', async () => {
  const procs = (): string[] => readFileSync(join(cg, 'cgroup.procs'), 'utf8').trim().split('\n').filter(Boolean);
  const before = procs();
  const { handle, exited } = enter(options('echo started; exec sleep 300'));
  await enterOutcome(handle.errors);
  const stdout = new Socket({ fd: handle.stdout!, readable: true, writable: false });
  let out = '';
  stdout.on('data', (b: Buffer) => (out += b.toString()));
  const closed = new Promise<void>((resolve) => stdout.on('end', resolve));
  for (let i = 0; i < 100 && !out.includes('started'); i++) await sleep(20);
  assert.equal(procs().length, before.length + 2, 'the intermediate and the command joined the world\'s cgroup');
  process.kill(handle.pid, 'SIGKILL');
  assert.deepEqual(await exited, { code: null, signal: 'SIGKILL' });
  await closed; // its output pipe's last writer is gone: the command died too
  assert.equal(out, 'started\n');
  for (let i = 0; i < 100 && procs().length !== before.length; i++) await sleep(20);
  assert.deepEqual(procs(), before);
  for (const fd of [handle.stdin!, handle.stderr!, handle.pidfd]) closeQuietly(fd);
});

test('with a pseudo-terminal the command has a controlling terminal of the size the caller set', async () => {
  const { handle, exited } = enter(options('read line; test -t 0 && test -t 1 && echo is-a-tty; stty size; echo got=$line', { tty: true }));
  await enterOutcome(handle.errors);
  setWindowSize(handle.pty!, 33, 101);
  const pty = new ReadStream(handle.pty!);
  let out = '';
  pty.on('data', (b: Buffer) => (out += b.toString()));
  pty.on('error', () => undefined); // EIO once the last slave fd closes: the end of output
  pty.write('hello\n');
  const exit = await exited;
  for (let i = 0; i < 50 && !out.includes('got='); i++) await sleep(20);
  pty.destroy();
  closeQuietly(handle.pidfd);
  assert.deepEqual(exit, { code: 0, signal: null }, out);
  assert.match(out, /is-a-tty/);
  assert.match(out, /33 101/);
  assert.match(out, /got=hello/);
});
