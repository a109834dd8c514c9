// Signals every process of a cgroup without ever reaching a process outside it. A pid read from
// cgroup.procs can end, be reaped and be given to an unrelated host process before a kill(pid) lands —
// and the node-agent is root, so that kill would land. Instead: read the members, open a pidfd of each,
// read the members again, and signal through the pidfd only those still listed. A pidfd names one
// process for good, so a signal through it reaches either the process that was a member at the second
// read (a process does not leave its cgroup on its own) or, if that one has ended, nothing (ESRCH).
import { closeSync } from 'node:fs';
import * as native from '../../native/index.js';

/** Signals the members `readPids` lists; returns how many were signalled. */
export function signalMembers(readPids: () => number[], sig: 'SIGTERM' | 'SIGKILL'): number {
  const opened = new Map<number, number>();
  for (const pid of readPids()) {
    if (opened.has(pid)) continue;
    try {
      opened.set(pid, native.pidfdOpen(pid));
    } catch {
      /* ended meanwhile */
    }
  }
  let sent = 0;
  try {
    const members = new Set(readPids());
    for (const [pid, fd] of opened) if (members.has(pid) && native.pidfdSendSignal(fd, sig)) sent++;
  } finally {
    for (const fd of opened.values()) closeSync(fd);
  }
  return sent;
}
