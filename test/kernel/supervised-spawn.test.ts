// A supervised spawn (the node-agent's only kind) clones the sandboxed child from the shim, not from the
// agent: before its go-ahead the child holds none of the agent's memory, and the workload inherits none of
// the descriptors the plan travelled with. With the agent's mount template (as the agent spawns), the
// child's mount namespace is copied from the template's three mounts and the World's tree, not from the
// agent's whole table. Run as root on the real kernel.
import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createMountTemplate, spawnSupervisedSandbox, shimPath, SandboxChannel, type SandboxSpawnOptions } from '../../native/index.js';
import { buildRootfs, Cleanup, sandboxOptions } from './native-fixtures.js';

const cleanup = new Cleanup();
let base = '';
let rootfs = '';
let template = -1;

before(() => {
  base = mkdtempSync(join(tmpdir(), 'wl-supervised-'));
  cleanup.add(() => rmSync(base, { recursive: true, force: true }));
  rootfs = buildRootfs(base, cleanup);
  template = createMountTemplate(base);
  cleanup.add(() => closeSync(template));
});
after(() => cleanup.run());

let n = 0;
function supervised(opts: SandboxSpawnOptions, shimArgs?: string[]) {
  const i = n++;
  const out = join(base, `out-${i}`);
  const exitFile = join(base, `exit-${i}`);
  let ended!: () => void;
  const done = new Promise<void>((r) => (ended = r));
  const handle = spawnSupervisedSandbox(opts, () => ended(), {
    path: shimPath(), argv: shimArgs ?? ['worldline-shim', out, '65536', '20000', exitFile], cgroupProcs: [],
  });
  return { handle, channel: new SandboxChannel(handle), done, out, exitFile };
}

/** Lets a spawned sandbox run to its end; returns the shim's exit record. */
async function runToEnd(s: ReturnType<typeof supervised>, beforeGo: () => void = () => undefined): Promise<{ code: number; reason: string }> {
  try {
    await s.channel.observe(20_000);
    beforeGo();
    s.channel.go();
    await s.channel.started(20_000);
  } finally {
    s.channel.close();
  }
  await s.done;
  return JSON.parse(readFileSync(s.exitFile, 'utf8'));
}

const vmKb = (status: string): number => Number(/^VmSize:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);

test('the sandboxed child is cloned from the shim: before its go-ahead it holds none of the agent\'s memory', async () => {
  const s = supervised(sandboxOptions(rootfs, 'true', { argv: ['/bin/true'], mountTemplate: template }));
  const end = await runToEnd(s, () => {
    const exe = readlinkSync(`/proc/${s.handle.pid}/exe`);
    const childVm = vmKb(readFileSync(`/proc/${s.handle.pid}/status`, 'utf8'));
    const maps = readFileSync(`/proc/${s.handle.pid}/maps`, 'utf8');
    const ownVm = vmKb(readFileSync('/proc/self/status', 'utf8'));
    assert.equal(exe, realpathSync(shimPath()), 'the child is a clone of the shim, not of the agent (node)');
    assert.ok(!maps.includes('worldline_native.node') && !maps.includes(realpathSync(process.execPath)), 'nothing of the agent is mapped in the child');
    assert.ok(childVm < 32 * 1024 && childVm * 20 < ownVm, `the child's address space (${childVm} kB) is the shim's, not a copy of the agent's (${ownVm} kB)`);
  });
  assert.equal(end.reason, 'Completed');
});

test('the workload inherits only its stdio: none of the slots the plan and the handshake travelled in', async () => {
  const s = supervised(sandboxOptions(rootfs, 'exec ls /proc/self/fd', { mountTemplate: template }));
  assert.equal((await runToEnd(s)).code, 0);
  // 0-2 are the workload's stdio; 3 is the directory ls itself opened to list.
  assert.deepEqual(readFileSync(s.out, 'utf8').trim().split('\n'), ['0', '1', '2', '3']);
});

test('a shim that cannot launch says which step failed, and nothing runs', () => {
  assert.throws(() => supervised(sandboxOptions(rootfs, 'true'), ['worldline-shim']), (err: NodeJS.ErrnoException) => err.code === 'EINVAL' && err.syscall === 'shim arguments');
  assert.throws(() => spawnSupervisedSandbox(sandboxOptions(rootfs, 'true'), () => undefined, { path: join(base, 'no-such-shim'), argv: ['x'], cgroupProcs: [] }),
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT' && err.syscall === 'execve');
});

// setns(2) from a one-line perl (perl-base is essential on Debian): the test's own Node process is
// multi-threaded and cannot enter a mount namespace. Only the syscall number differs per architecture.
const SETNS: Record<string, number> = { x64: 308, arm64: 268 };

test('the mount template holds a read-only tmpfs root with an empty /root and a proc, nothing else', () => {
  const nr = SETNS[process.arch];
  assert.ok(nr !== undefined, `no setns syscall number known for ${process.arch}: add it to SETNS`);
  const script = `syscall(${nr}, 3, 0x20000) == 0 or die "setns: $!"; opendir(my $d, "/root") or die "root: $!"; my @e = grep { !/^\\.\\.?$/ } readdir($d); print "root-entries:" . scalar(@e) . "\\n"; open(my $f, "<", "/proc/self/mountinfo") or die "mountinfo: $!"; print <$f>;`;
  const r = spawnSync('perl', ['-e', script], { stdio: ['ignore', 'pipe', 'pipe', template], encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [rootLine, ...mounts] = r.stdout.trim().split('\n');
  assert.equal(rootLine, 'root-entries:0');
  const seen = mounts.map((l) => {
    const [pre, post] = l.split(' - ');
    const f = pre!.split(' ');
    return { point: f[4], opts: f[5], fstype: post!.split(' ')[0] };
  });
  assert.deepEqual(seen.map((m) => `${m.point} ${m.fstype}`), ['/ tmpfs', '/proc proc']);
  assert.match(seen[0]!.opts!, /(^|,)ro(,|$)/, 'the template root is read-only');
});

test('with the template, the workload sees its own root filesystem and its own /proc, and nothing of the template', async () => {
  const s = supervised(sandboxOptions(rootfs, 'echo pid=$$; cat /proc/self/mountinfo', { mountTemplate: template }));
  assert.equal((await runToEnd(s)).code, 0);
  const [pidLine, ...mounts] = readFileSync(s.out, 'utf8').trim().split('\n');
  assert.equal(pidLine, 'pid=1', 'its own pid namespace');
  const points = mounts.map((l) => l.split(' ')[4]);
  for (const want of ['/', '/usr', '/etc', '/tmp', '/proc', '/dev/null']) assert.ok(points.includes(want), `${want} is mounted (${points.join(' ')})`);
  assert.ok(!mounts.some((l) => l.includes('worldline-template')), 'nothing of the template is left');
  assert.ok(!points.includes('/root'), 'the template\'s /root is not a mount inside');
});

test('a mount template is for supervised spawns only, and an fd that is not one fails the launch by name', async () => {
  const { spawnSandbox } = await import('../../native/index.js');
  assert.throws(() => spawnSandbox(sandboxOptions(rootfs, 'true', { mountTemplate: template }), () => undefined), /a mount template takes a supervised spawn/);
  const notANamespace = openSync('/dev/null', 'r');
  try {
    assert.throws(() => supervised(sandboxOptions(rootfs, 'true', { mountTemplate: notANamespace })), (err: NodeJS.ErrnoException) => err.syscall === 'setns_mnt' && err.code === 'EINVAL');
  } finally {
    closeSync(notANamespace);
  }
});
