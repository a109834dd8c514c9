// The cgroup v2 budget preflight (node-agent/sandbox/cgroup-v2-preflight.ts) on a real cgroup2 mount of
// this host. This host's cpu, memory and pids controllers belong to cgroup v1, so no real leaf here can
// hold the budget: what the kernel can show is tested here — the leaf found by descriptor on the cgroup2
// mount and nowhere else (a tmpfs with the same files, inside or instead of the mount, is refused), a
// path that leaves the mount or does not exist, a leaf with a process in it, a frozen leaf, a threaded
// leaf, the missing controllers, and a caller who may not write cgroup.procs — and the values of the
// budget files are judged on generated texts in test/unit/cgroup-v2-budget.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectV2Leaf, V2PreflightError } from '../../node-agent/sandbox/cgroup-v2-preflight.js';
import type { V2Budget } from '../../node-agent/sandbox/cgroup-v2-budget.js';
import { outcomeOf } from '../support/error-code.js';

const WANT: V2Budget = { cpuQuotaMicros: 50_000, cpuPeriodMicros: 100_000, memoryBytes: 1 << 29, pids: 256 };
const base = mkdtempSync(join(tmpdir(), 'wl-cg2-'));
chmodSync(base, 0o755); // the uid 65534 case reaches the mount through it
const mnt = join(base, 'cgroup2');
const group = `worldline-preflight-${process.pid}`;
const leafRel = `${group}/leaf`;
const leaf = join(mnt, leafRel);
const mounted: string[] = [];

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
}

before(() => {
  mkdirSync(mnt);
  // A mount of the host's cgroup2 hierarchy of our own (this test fails here, naming the problem, on a
  // kernel without cgroup2).
  sh('mount', ['-t', 'cgroup2', 'none', mnt]);
  mounted.push(mnt);
  mkdirSync(join(mnt, group));
  mkdirSync(leaf);
});

after(() => {
  for (const m of mounted.reverse()) spawnSync('umount', ['-l', m]);
  // The cgroups live in the host's hierarchy, not in the mount: remove them through the host's mount.
  const host = '/sys/fs/cgroup/unified';
  for (const d of [join(host, group, 'threaded', 'leaf'), join(host, group, 'threaded'), join(host, group, 'imp'), join(host, group, 'leaf'), join(host, group)]) {
    try {
      rmdirSync(d);
    } catch {
      /* not there */
    }
  }
  rmSync(base, { recursive: true, force: true });
});

const codeOf = (f: () => unknown): string => outcomeOf(f, V2PreflightError);
const inspect = (l: string, mountPoint = mnt): string => codeOf(() => inspectV2Leaf({ mountPoint, leaf: l, want: WANT }));
const message = (l: string, mountPoint = mnt): string => {
  try {
    inspectV2Leaf({ mountPoint, leaf: l, want: WANT });
    return '';
  } catch (e) {
    return (e as Error).message;
  }
};

test('a real, empty leaf on the cgroup2 mount without cpu, memory and pids here: CGROUP_V2_CONTROLLERS_MISSING', () => {
  assert.equal(inspect(leafRel), 'CGROUP_V2_CONTROLLERS_MISSING');
  assert.match(message(leafRel), /lacks the cpu, memory, pids controller\(s\)/);
});

test('a process in the leaf: CGROUP_V2_NOT_EMPTY; a frozen leaf: CGROUP_V2_FROZEN', async () => {
  const sleeper = spawn('sleep', ['60']);
  try {
    writeFileSync(join(leaf, 'cgroup.procs'), String(sleeper.pid));
    assert.equal(inspect(leafRel), 'CGROUP_V2_NOT_EMPTY');
    assert.match(message(leafRel), new RegExp(String(sleeper.pid)));
  } finally {
    sleeper.kill('SIGKILL');
    await new Promise((r) => sleeper.once('exit', r));
  }
  for (let i = 0; i < 100 && !readFileSync(join(leaf, 'cgroup.events'), 'utf8').includes('populated 0'); i++) await new Promise((r) => setTimeout(r, 20));
  writeFileSync(join(leaf, 'cgroup.freeze'), '1');
  try {
    assert.equal(inspect(leafRel), 'CGROUP_V2_FROZEN');
  } finally {
    writeFileSync(join(leaf, 'cgroup.freeze'), '0');
  }
  assert.equal(inspect(leafRel), 'CGROUP_V2_CONTROLLERS_MISSING', 'thawed and empty again');
});

test('a threaded leaf: CGROUP_V2_NOT_DOMAIN', () => {
  mkdirSync(join(mnt, group, 'threaded'));
  mkdirSync(join(mnt, group, 'threaded', 'leaf'));
  writeFileSync(join(mnt, group, 'threaded', 'leaf', 'cgroup.type'), 'threaded');
  assert.equal(inspect(`${group}/threaded/leaf`), 'CGROUP_V2_NOT_DOMAIN');
});

test('ordinary files cannot stand in for the kernel\'s interface: a tmpfs at the mount point, or over a directory inside it, is CGROUP_V2_MOUNT_MISMATCH', () => {
  const fake = (dir: string): void => {
    const files: Record<string, string> = {
      'cpu.max': '50000 100000\n', 'cpu.max.burst': '0\n', 'memory.max': `${1 << 29}\n`, 'memory.swap.max': '0\n', 'pids.max': '256\n', 'memory.oom.group': '1\n',
      'cgroup.procs': '', 'cgroup.kill': '', 'cgroup.events': 'populated 0\nfrozen 0\n', 'cgroup.type': 'domain\n', 'cgroup.controllers': 'cpu memory pids\n', 'cgroup.subtree_control': '',
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  };
  // A whole impostor: a tmpfs where the cgroup2 mount should be.
  const imp = join(base, 'impostor');
  mkdirSync(imp);
  sh('mount', ['-t', 'tmpfs', 'none', imp]);
  mounted.push(imp);
  mkdirSync(join(imp, 'leaf'));
  fake(join(imp, 'leaf'));
  assert.equal(inspect('leaf', imp), 'CGROUP_V2_MOUNT_MISMATCH');
  assert.match(message('leaf', imp), /is not a cgroup2 mount \(tmpfs\)/);
  // A tmpfs mounted over a cgroup directory inside the real mount: the leaf's mount id gives it away.
  const inner = join(mnt, group, 'imp');
  mkdirSync(inner);
  sh('mount', ['-t', 'tmpfs', 'none', inner]);
  mounted.push(inner);
  fake(inner);
  assert.equal(inspect(`${group}/imp`), 'CGROUP_V2_MOUNT_MISMATCH');
  assert.match(message(`${group}/imp`), /is on mount \d+, not on the cgroup2 mount \d+/);
});

test('a leaf path that leaves the mount or does not exist: CGROUP_V2_LEAF_INVALID', () => {
  assert.equal(inspect('../cgroup2'), 'CGROUP_V2_LEAF_INVALID');
  assert.equal(inspect(`${group}/no-such-leaf`), 'CGROUP_V2_LEAF_INVALID');
  assert.equal(inspect('/sys/fs/cgroup/unified'), 'CGROUP_V2_LEAF_INVALID');
});

test('a caller who may not write the leaf\'s cgroup.procs: CGROUP_V2_NOT_WRITABLE (run as uid 65534)', () => {
  const child = fileURLToPath(new URL('./cgroup-v2-child.js', import.meta.url));
  assert.ok(existsSync(child));
  const r = spawnSync(process.execPath, [child, mnt, leafRel], { uid: 65534, gid: 65534, encoding: 'utf8' });
  assert.equal(r.status, 0, `the child could not run as uid 65534 (is the checkout readable by other users?): ${r.stderr}`);
  assert.match(r.stdout, /^CGROUP_V2_NOT_WRITABLE cgroup\.procs of the leaf .* cannot be opened for writing: .*EACCES/);
});
