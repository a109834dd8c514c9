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
// controllers, /sys/fs/cgroup/unified) the agent sets it there too.
//
// The kernel takes the option only from a remount made in the initial cgroup namespace; asked from any
// other it accepts the call and ignores the option. The chart's node-agent runs in a pod, in a cgroup
// namespace of its own, with the node's PID namespace (hostPID): there the remount is made from the
// cgroup namespace of the node's PID 1 (/proc/1/ns/cgroup), by a thread of its own (native
// mountInCgroupNs), and the agent's own namespaces never change. Where PID 1's namespace is the agent's
// own (the agent runs on the host), or cannot be read, the agent's own is used. Either way the option is
// read back, and an option the kernel did not take is reported as refused, never as set.

import { readFileSync, readlinkSync } from 'node:fs';
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
  /** `cgroupNs`: the namespace the remount was made from, when not the agent's own. */
  | { state: 'enabled'; mount: string; cgroupNs?: string }
  /** The remount failed, or the kernel left the option unset (a cgroup namespace not the host's). */
  | { state: 'refused'; mount: string; error: string; cgroupNs?: string }
  /** No cgroup2 mount is visible: nothing to set it on. */
  | { state: 'no-cgroup2' };

/** Every state an outcome can have (the compiler checks none is missing), and `off` when not asked to set it. */
const OUTCOME_STATES = { enabled: true, already: true, refused: true, 'no-cgroup2': true } satisfies Record<DynmodsOutcome['state'], true>;
export const FAVOR_DYNMODS_STATES = [...(Object.keys(OUTCOME_STATES) as DynmodsOutcome['state'][]), 'off'] as const;
export type FavorDynmodsState = DynmodsOutcome['state'] | 'off';

/** What favorDynmods reads and calls; the real ones by default. */
export interface DynmodsIo {
  readMountInfo(): string;
  /** mount(2) from the agent's own cgroup namespace. */
  mount(source: string | null, target: string, fstype: string | null, flags: number, data?: string): void;
  /** mount(2) from the cgroup namespace at nsPath. */
  mountInCgroupNs(nsPath: string, source: string | null, target: string, fstype: string | null, flags: number, data?: string): void;
  /** The node's cgroup namespace (a /proc/<pid>/ns/cgroup path) when it is another than the agent's own; else undefined. */
  hostCgroupNs(): string | undefined;
}

/** PID 1's cgroup namespace when it differs from this process's (a pod with hostPID); undefined when it is the same or cannot be read. */
export function otherCgroupNs(pid1 = '/proc/1/ns/cgroup', self = '/proc/self/ns/cgroup'): string | undefined {
  try {
    return readlinkSync(pid1) === readlinkSync(self) ? undefined : pid1;
  } catch {
    return undefined; // not ours to read (no CAP_SYS_PTRACE over PID 1): the agent's own is all there is
  }
}

export const realDynmodsIo: DynmodsIo = {
  readMountInfo: () => readFileSync('/proc/self/mountinfo', 'utf8'),
  mount: native.mount,
  mountInCgroupNs: native.mountInCgroupNs,
  hostCgroupNs: () => otherCgroupNs(),
};

/**
 * Sets `favordynmods` on the first cgroup2 mount, from the node's cgroup namespace when the agent is in
 * another, and reads back whether the kernel shows it.
 */
export function favorDynmods(io: DynmodsIo = realDynmodsIo): DynmodsOutcome {
  const cgroup2 = parseMountinfo(io.readMountInfo()).find((m) => m.fsType === 'cgroup2');
  if (!cgroup2) return { state: 'no-cgroup2' };
  if (cgroup2.superOptions.includes('favordynmods')) return { state: 'already', mount: cgroup2.mountPoint };
  const call = favorDynmodsRemount(cgroup2);
  // A remount would clear an option it cannot pass back: the mount is left as it is.
  if ('unknown' in call) return { state: 'refused', mount: cgroup2.mountPoint, error: `${cgroup2.mountPoint} has mount option(s) ${call.unknown.join(', ')} a remount could not keep; it is left as it is` };
  const ns = io.hostCgroupNs();
  const from = ns !== undefined ? { cgroupNs: ns } : {};
  try {
    // A remount's source is not read.
    if (ns !== undefined) io.mountInCgroupNs(ns, null, call.target, call.fstype, call.flags, call.data);
    else io.mount(null, call.target, call.fstype, call.flags, call.data);
  } catch (e) {
    return { state: 'refused', mount: cgroup2.mountPoint, error: (e as Error).message, ...from };
  }
  const after = parseMountinfo(io.readMountInfo()).find((m) => m.fsType === 'cgroup2' && m.mountPoint === cgroup2.mountPoint);
  if (!after?.superOptions.includes('favordynmods')) {
    const where = ns !== undefined ? `from the cgroup namespace of ${ns}, which is not the node's initial one either` : "from the agent's cgroup namespace, which is not the host's (run the agent with the node's PID namespace, hostPID, so it can make the remount from PID 1's)";
    return { state: 'refused', mount: cgroup2.mountPoint, error: `the kernel accepted the remount but ${cgroup2.mountPoint} does not show favordynmods: it was made ${where}`, ...from };
  }
  return { state: 'enabled', mount: cgroup2.mountPoint, ...from };
}
