// favordynmods at agent start (node-agent/sandbox/cgroup-dynmods.ts), the pure part: the remount that adds the option while passing every mount flag and
// superblock option the mount already has (a remount sets them all anew). The mount(2) call is recorded
// here; test/kernel/cgroup-dynmods.test.ts makes it on the host's cgroup2 mount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as native from '../../native/index.js';
import { favorDynmods, favorDynmodsRemount, type DynmodsIo } from '../../node-agent/sandbox/cgroup-dynmods.js';
import { parseMountinfo } from '../../node-agent/store/mount-table.js';

const SYSTEMD_V2 = '35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot';
const HYBRID = [
  '31 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '33 31 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');

/** A fake io: `info` as the mountinfo, `mount` for the agent's own namespace, no other namespace unless `ns` says so. */
const io = (info: () => string, mount: DynmodsIo['mount'], ns?: { path: string; mount: DynmodsIo['mountInCgroupNs'] }): DynmodsIo => ({
  readMountInfo: info,
  mount,
  mountInCgroupNs: ns?.mount ?? (() => assert.fail('mounted from another cgroup namespace')),
  hostCgroupNs: () => ns?.path,
});

test('the remount keeps the mount flags and every superblock option, and adds favordynmods once', () => {
  const call = favorDynmodsRemount(parseMountinfo(SYSTEMD_V2)[0]!);
  assert.ok(!('unknown' in call), JSON.stringify(call));
  assert.equal(call.target, '/sys/fs/cgroup');
  assert.equal(call.data, 'nsdelegate,memory_recursiveprot,favordynmods');
  assert.equal(call.flags, native.MS_REMOUNT | native.MS_NOSUID | native.MS_NODEV | native.MS_NOEXEC | native.MS_RELATIME);
  const ro = favorDynmodsRemount(parseMountinfo('35 24 0:30 / /c ro,noatime - cgroup2 cgroup2 ro,favordynmods')[0]!);
  assert.ok(!('unknown' in ro), JSON.stringify(ro));
  assert.equal(ro.data, 'favordynmods');
  assert.equal(ro.flags, native.MS_REMOUNT | native.MS_RDONLY | native.MS_NOATIME);
});

test('a mount with a per-mount option the remount could not pass back is not remounted at all', () => {
  const odd = parseMountinfo('35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodiratime - cgroup2 cgroup2 rw,nsdelegate')[0]!;
  assert.deepEqual(favorDynmodsRemount(odd), { unknown: ['nodiratime'] });
  const o = favorDynmods(io(() => '35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodiratime - cgroup2 cgroup2 rw,nsdelegate', () => assert.fail('remounted a mount whose options it could not keep')));
  assert.equal(o.state, 'refused');
  assert.match((o as { error: string }).error, /nodiratime/);
});

test('favorDynmods remounts the first cgroup2 mount, reads the option back, and names each other outcome', () => {
  const calls: unknown[][] = [];
  let info = HYBRID;
  const mount = (...a: Parameters<typeof native.mount>): void => {
    calls.push(a);
    info = info.replace('cgroup2 cgroup2 rw', 'cgroup2 cgroup2 rw,favordynmods');
  };
  assert.deepEqual(favorDynmods(io(() => info, mount)), { state: 'enabled', mount: '/sys/fs/cgroup/unified' });
  assert.deepEqual(calls, [[null, '/sys/fs/cgroup/unified', 'cgroup2', native.MS_REMOUNT | native.MS_RELATIME, 'favordynmods']]);
  // Set already: nothing is mounted again.
  assert.deepEqual(favorDynmods(io(() => info, mount)), { state: 'already', mount: '/sys/fs/cgroup/unified' });
  assert.equal(calls.length, 1);
  // The kernel refuses the remount.
  const refused = favorDynmods(io(() => HYBRID, () => {
    throw new Error('mount /sys/fs/cgroup/unified: EPERM');
  }));
  assert.equal(refused.state, 'refused');
  assert.match((refused as { error: string }).error, /EPERM/);
  // The kernel takes the remount but does not show the option (a cgroup namespace not the host's).
  const ignored = favorDynmods(io(() => HYBRID, () => undefined));
  assert.equal(ignored.state, 'refused');
  assert.match((ignored as { error: string }).error, /does not show favordynmods: it was made from the agent's cgroup namespace/);
  // No cgroup2 at all (v1 only).
  assert.deepEqual(favorDynmods(io(() => HYBRID.split('\n').slice(0, 2).join('\n'), mount)), { state: 'no-cgroup2' });
});

test("in a pod with the node's PID namespace, the remount is made from PID 1's cgroup namespace, never the agent's own", () => {
  const calls: unknown[][] = [];
  let info = SYSTEMD_V2;
  const ns = {
    path: '/proc/1/ns/cgroup',
    mount: (...a: Parameters<DynmodsIo['mountInCgroupNs']>): void => {
      calls.push(a);
      info = info.replace('rw,nsdelegate,memory_recursiveprot', 'rw,nsdelegate,memory_recursiveprot,favordynmods');
    },
  };
  const o = favorDynmods(io(() => info, () => assert.fail("remounted from the agent's own cgroup namespace"), ns));
  assert.deepEqual(o, { state: 'enabled', mount: '/sys/fs/cgroup', cgroupNs: '/proc/1/ns/cgroup' });
  assert.deepEqual(calls, [['/proc/1/ns/cgroup', null, '/sys/fs/cgroup', 'cgroup2', native.MS_REMOUNT | native.MS_NOSUID | native.MS_NODEV | native.MS_NOEXEC | native.MS_RELATIME, 'nsdelegate,memory_recursiveprot,favordynmods']]);
  // PID 1's namespace is not the initial one either (a kind node): the kernel ignores it there too, and says so.
  const ignored = favorDynmods(io(() => SYSTEMD_V2, () => assert.fail('own namespace'), { path: '/proc/1/ns/cgroup', mount: () => undefined }));
  assert.equal(ignored.state, 'refused');
  assert.match((ignored as { error: string }).error, /from the cgroup namespace of \/proc\/1\/ns\/cgroup, which is not the node's initial one either/);
  assert.equal((ignored as { cgroupNs?: string }).cgroupNs, '/proc/1/ns/cgroup');
});
