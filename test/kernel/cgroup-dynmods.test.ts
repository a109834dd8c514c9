// favordynmods on the host's real cgroup2 mount (node-agent/sandbox/cgroup-dynmods.ts): the agent's call
// adds the option, and the mount keeps its own flags and every other superblock option. Then, as in the
// chart's pod: an agent in a cgroup namespace of its own has its remount ignored by the kernel, and sets
// the option by making the remount from the node's cgroup namespace. The option is first taken off each
// time (the same remount without it), so each call has something to do; it is left set, as every agent
// start leaves it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as native from '../../native/index.js';
import { favorDynmods, favorDynmodsRemount, realDynmodsIo, type DynmodsOutcome } from '../../node-agent/sandbox/cgroup-dynmods.js';
import { parseMountinfo } from '../../node-agent/store/mount-table.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the favordynmods test');

const cgroup2 = () => parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')).find((m) => m.fsType === 'cgroup2');

/** Takes the option off the host's cgroup2 mount (from this process's namespace, the host's) and returns the mount as it was. */
function clearOption(): NonNullable<ReturnType<typeof cgroup2>> {
  const before = cgroup2();
  assert.ok(before, 'this test needs a cgroup2 mount (the host shows none in /proc/self/mountinfo)');
  const off = favorDynmodsRemount(before);
  assert.ok(!('unknown' in off), `this host's cgroup2 mount has options a remount could not keep: ${JSON.stringify(off)}`);
  native.mount(null, off.target, off.fstype, off.flags, off.data.split(',').filter((o) => o !== 'favordynmods').join(','));
  assert.ok(!cgroup2()!.superOptions.includes('favordynmods'), `the option could not be taken off for the test: ${cgroup2()!.superOptions.join(',')}`);
  return before;
}

/** favorDynmods in a child in a new cgroup namespace (unshare --cgroup), given `ns` as the node's. */
function inOwnCgroupNs(ns: string): { outcome: DynmodsOutcome; cgroupNs: string } {
  const child = spawnSync('unshare', ['--cgroup', process.execPath, join(import.meta.dirname, '..', 'support', 'dynmods-child.js'), ns], { encoding: 'utf8' });
  assert.equal(child.status, 0, `the child failed (${String(child.status)}): ${child.stderr}`);
  return JSON.parse(child.stdout) as { outcome: DynmodsOutcome; cgroupNs: string };
}

test('favorDynmods sets the option on the host cgroup2 mount and changes nothing else of it', () => {
  const before = clearOption();
  const cleared = cgroup2()!;

  // Here the agent runs in the host's cgroup namespace: the remount is its own.
  assert.deepEqual(favorDynmods({ ...realDynmodsIo, hostCgroupNs: () => undefined }), { state: 'enabled', mount: before.mountPoint });
  const after = cgroup2()!;
  assert.ok(after.superOptions.includes('favordynmods'), after.superOptions.join(','));
  assert.deepEqual(after.options, cleared.options, 'the mount\'s own flags are unchanged');
  assert.deepEqual(after.superOptions.filter((o) => o !== 'favordynmods'), cleared.superOptions, 'every other superblock option is kept');
  // A second call (the next agent start) finds it set and mounts nothing.
  const never = (): never => assert.fail('mounted again');
  assert.deepEqual(favorDynmods({ ...realDynmodsIo, mount: never, mountInCgroupNs: never }), { state: 'already', mount: before.mountPoint });
});

test("an agent in a cgroup namespace of its own sets the option only by remounting from the node's", () => {
  const host = `/proc/${process.pid}/ns/cgroup`;
  const mountPoint = clearOption().mountPoint;
  // From its own namespace the kernel takes the remount and ignores the option: refused, by name.
  const own = inOwnCgroupNs('own');
  assert.notEqual(own.cgroupNs, readlinkSync(host), 'the child ran in a cgroup namespace of its own');
  assert.equal(own.outcome.state, 'refused', JSON.stringify(own.outcome));
  assert.match((own.outcome as { error: string }).error, /does not show favordynmods: it was made from the agent's cgroup namespace/);
  assert.ok(!cgroup2()!.superOptions.includes('favordynmods'), 'the option is still unset on the host');
  // Given the node's namespace (in the chart, PID 1's), its thread makes the remount from there: set.
  const fromHost = inOwnCgroupNs(host);
  assert.deepEqual(fromHost.outcome, { state: 'enabled', mount: mountPoint, cgroupNs: host });
  assert.ok(cgroup2()!.superOptions.includes('favordynmods'), 'the host shows the option');
  assert.notEqual(fromHost.cgroupNs, readlinkSync(host), "the child's own cgroup namespace did not change (only its mounting thread's did)");
});

test('mountInCgroupNs refuses, by the call and the path, a namespace that is not a cgroup namespace, and mounts nothing', () => {
  const before = readFileSync('/proc/self/mountinfo', 'utf8');
  assert.throws(() => native.mountInCgroupNs('/proc/self/ns/net', null, '/proc', 'cgroup2', native.MS_REMOUNT, ''), (e: Error & { code?: string }) => e.code === 'EINVAL' && /setns '\/proc\/self\/ns\/net'/.test(e.message));
  assert.throws(() => native.mountInCgroupNs('/nonexistent/ns/cgroup', null, '/proc', 'cgroup2', native.MS_REMOUNT, ''), (e: Error & { code?: string }) => e.code === 'ENOENT' && /open '\/nonexistent\/ns\/cgroup'/.test(e.message));
  assert.equal(readFileSync('/proc/self/mountinfo', 'utf8'), before, 'no mount changed');
});
