// favordynmods on the host's real cgroup2 mount (node-agent/sandbox/cgroup-dynmods.ts): the agent's call
// adds the option, and the mount keeps its own flags and every other superblock option. The option is
// first taken off (the same remount without it), so the call has something to do; it is left set, as
// every agent start leaves it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as native from '../../native/index.js';
import { favorDynmods, favorDynmodsRemount } from '../../node-agent/sandbox/cgroup-dynmods.js';
import { parseMountinfo } from '../../node-agent/store/mount-table.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the favordynmods test');

const cgroup2 = () => parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')).find((m) => m.fsType === 'cgroup2');

test('favorDynmods sets the option on the host cgroup2 mount and changes nothing else of it', () => {
  const before = cgroup2();
  assert.ok(before, 'this test needs a cgroup2 mount (the host shows none in /proc/self/mountinfo)');
  // Taken off: the remount the agent makes, with the option removed from its data.
  const off = favorDynmodsRemount(before);
  assert.ok(!('unknown' in off), `this host's cgroup2 mount has options a remount could not keep: ${JSON.stringify(off)}`);
  native.mount(null, off.target, off.fstype, off.flags, off.data.split(',').filter((o) => o !== 'favordynmods').join(','));
  const cleared = cgroup2()!;
  assert.ok(!cleared.superOptions.includes('favordynmods'), `the option could not be taken off for the test: ${cleared.superOptions.join(',')}`);

  assert.deepEqual(favorDynmods(), { state: 'enabled', mount: before.mountPoint });
  const after = cgroup2()!;
  assert.ok(after.superOptions.includes('favordynmods'), after.superOptions.join(','));
  assert.deepEqual(after.options, cleared.options, 'the mount\'s own flags are unchanged');
  assert.deepEqual(after.superOptions.filter((o) => o !== 'favordynmods'), cleared.superOptions, 'every other superblock option is kept');
  // A second call (the next agent start) finds it set and mounts nothing.
  assert.deepEqual(favorDynmods(() => readFileSync('/proc/self/mountinfo', 'utf8'), () => assert.fail('mounted again')), { state: 'already', mount: before.mountPoint });
});
