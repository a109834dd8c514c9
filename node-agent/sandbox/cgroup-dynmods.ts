// The kernel's `favordynmods` cgroup option, set at agent start (--cgroup-favor-dynmods, default on).
//
// Every World and Check launch moves two processes between cgroups: its supervisor into the supervisor's
// cgroups, and its sandboxed child into the run's. Each move writes cgroup.procs, which takes the kernel's
// threadgroup lock for writing; without `favordynmods` that lock is a per-CPU semaphore whose write side
// waits for an RCU grace period once it has been idle. A launch every few hundred milliseconds finds it
// idle every time: measured here, the first cgroup.procs write after 200 ms took ~11 ms, the next ones
// ~0.02 ms, and the agent's spawn call blocked 16.6 ms (median) of which ~11 were that wait. With the
// option the lock's write side stays cheap, at a small cost to every fork and exit on the node. Linux
// reads the option on the cgroup2 superblock, which is one for the whole host: on a hybrid host (v1
// controllers, /sys/fs/cgroup/unified) the agent sets it there too. Where the agent runs in a cgroup
// namespace other than the host's (a container without the host's), the kernel ignores it, and the
// agent reports that the option is still unset.

import { readFileSync } from 'node:fs';
import * as native from '../../native/index.js';
import { parseMountinfo, type MountFact } from '../store/mount-table.js';

/** The per-mount options mount(2) takes back as flags; a mount showing any other is not remounted. */
const MOUNT_FLAGS: Readonly<Record<string, number>> = {
  rw: 0,
  ro: native.MS_RDONLY,
  nosuid: native.MS_NOSUID,
  nodev: native.MS_NODEV,
  noexec: native.MS_NOEXEC,
  noatime: native.MS_NOATIME,
  relatime: native.MS_RELATIME,
  strictatime: native.MS_STRICTATIME,
  nosymfollow: native.MS_NOSYMFOLLOW,
};

/**
 * The mount(2) call that adds `favordynmods` to a cgroup2 mount and changes nothing else: a remount sets
 * the mount's own flags and every superblock option anew, so the present ones are passed again.
 */
export function favorDynmodsRemount(m: MountFact): { target: string; fstype: string; flags: number; data: string } | { unknown: string[] } {
  const unknown = m.options.filter((o) => MOUNT_FLAGS[o] === undefined);
  if (unknown.length > 0) return { unknown };
  let flags = native.MS_REMOUNT;
  for (const o of m.options) flags |= MOUNT_FLAGS[o]!;
  const data = [...m.superOptions.filter((o) => o !== 'rw' && o !== 'ro' && o !== 'favordynmods'), 'favordynmods'].join(',');
  return { target: m.mountPoint, fstype: 'cgroup2', flags, data };
}

export type DynmodsOutcome =
  /** Set before the agent started (by an earlier agent, the operator or the kernel's build default). */
  | { state: 'already'; mount: string }
  | { state: 'enabled'; mount: string }
  /** The remount failed, or the kernel left the option unset (a cgroup namespace not the host's). */
  | { state: 'refused'; mount: string; error: string }
  /** No cgroup2 mount is visible: nothing to set it on. */
  | { state: 'no-cgroup2' };

/** Sets `favordynmods` on the first cgroup2 mount, and reads back whether the kernel shows it. */
export function favorDynmods(readMountInfo: () => string = () => readFileSync('/proc/self/mountinfo', 'utf8'), mount: typeof native.mount = native.mount): DynmodsOutcome {
  const cgroup2 = parseMountinfo(readMountInfo()).find((m) => m.fsType === 'cgroup2');
  if (!cgroup2) return { state: 'no-cgroup2' };
  if (cgroup2.superOptions.includes('favordynmods')) return { state: 'already', mount: cgroup2.mountPoint };
  const call = favorDynmodsRemount(cgroup2);
  // A remount would clear an option it cannot pass back: the mount is left as it is.
  if ('unknown' in call) return { state: 'refused', mount: cgroup2.mountPoint, error: `${cgroup2.mountPoint} has mount option(s) ${call.unknown.join(', ')} a remount could not keep; it is left as it is` };
  try {
    mount(null, call.target, call.fstype, call.flags, call.data); // a remount's source is not read
  } catch (e) {
    return { state: 'refused', mount: cgroup2.mountPoint, error: (e as Error).message };
  }
  const after = parseMountinfo(readMountInfo()).find((m) => m.fsType === 'cgroup2' && m.mountPoint === cgroup2.mountPoint);
  if (!after?.superOptions.includes('favordynmods')) return { state: 'refused', mount: cgroup2.mountPoint, error: `the kernel accepted the remount but ${cgroup2.mountPoint} does not show favordynmods (is the agent in the host's cgroup namespace?)` };
  return { state: 'enabled', mount: cgroup2.mountPoint };
}
