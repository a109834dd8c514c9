// A supervised spawn (the node-agent's only kind) clones the sandboxed child from the shim, not from the
// agent: before its go-ahead the child holds none of the agent's memory, and the workload inherits none of
// the descriptors the plan travelled with. Run as root on the real kernel.
import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { spawnSupervisedSandbox, shimPath, SandboxChannel, type SandboxSpawnOptions } from '../../native/index.js';
import { buildRootfs, Cleanup, sandboxOptions } from './native-fixtures.js';

const cleanup = new Cleanup();
let base = '';
let rootfs = '';

before(() => {
  base = mkdtempSync(join(tmpdir(), 'wl-supervised-'));
  cleanup.add(() => rmSync(base, { recursive: true, force: true }));
  rootfs = buildRootfs(base, cleanup);
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

const vmKb = (status: string): number => Number(/^VmSize:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);

test('the sandboxed child is cloned from the shim: before its go-ahead it holds none of the agent\'s memory', async () => {
  const s = supervised(sandboxOptions(rootfs, 'true', { argv: ['/bin/true'] }));
  try {
    await s.channel.observe(20_000);
    const exe = readlinkSync(`/proc/${s.handle.pid}/exe`);
    const childVm = vmKb(readFileSync(`/proc/${s.handle.pid}/status`, 'utf8'));
    const maps = readFileSync(`/proc/${s.handle.pid}/maps`, 'utf8');
    const ownVm = vmKb(readFileSync('/proc/self/status', 'utf8'));
    assert.equal(exe, realpathSync(shimPath()), 'the child is a clone of the shim, not of the agent (node)');
    assert.ok(!maps.includes('worldline_native.node') && !maps.includes(realpathSync(process.execPath)), 'nothing of the agent is mapped in the child');
    assert.ok(childVm < 32 * 1024 && childVm * 20 < ownVm, `the child's address space (${childVm} kB) is the shim's, not a copy of the agent's (${ownVm} kB)`);
    s.channel.go();
    await s.channel.started(20_000);
  } finally {
    s.channel.close();
  }
  await s.done;
  assert.equal(JSON.parse(readFileSync(s.exitFile, 'utf8')).reason, 'Completed');
});

test('the workload inherits only its stdio: none of the slots the plan and the handshake travelled in', async () => {
  const s = supervised(sandboxOptions(rootfs, 'exec ls /proc/self/fd'));
  try {
    await s.channel.observe(20_000);
    s.channel.go();
    await s.channel.started(20_000);
  } finally {
    s.channel.close();
  }
  await s.done;
  const end = JSON.parse(readFileSync(s.exitFile, 'utf8'));
  assert.equal(end.code, 0);
  // 0-2 are the workload's stdio; 3 is the directory ls itself opened to list.
  assert.deepEqual(readFileSync(s.out, 'utf8').trim().split('\n'), ['0', '1', '2', '3']);
});

test('a shim that cannot launch says which step failed, and nothing runs', () => {
  assert.throws(() => supervised(sandboxOptions(rootfs, 'true'), ['worldline-shim']), (err: NodeJS.ErrnoException) => err.code === 'EINVAL' && err.syscall === 'shim arguments');
  assert.throws(() => spawnSupervisedSandbox(sandboxOptions(rootfs, 'true'), () => undefined, { path: join(base, 'no-such-shim'), argv: ['x'], cgroupProcs: [] }),
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT' && err.syscall === 'execve');
});
