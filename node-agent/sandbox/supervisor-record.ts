// What identifies a world's supervisor across agent restarts, and what it leaves behind: its pid with
// the kernel's start time of that pid (/proc/<pid>/stat field 22, so a recycled pid is never taken for
// it), and the exit record it writes (native/src/shim/shim.c) beside the world's output log.
import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import * as native from '../../native/index.js';

export interface SupervisorRef {
  pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot), as text. */
  startTime: string;
  /** When the workload was let go (ISO): the wall time counts from here. */
  startedAt: string;
}

/** The exit record the shim writes: the workload's own end, as the shim saw it. */
export interface SupervisorExit {
  code: number | null;
  signal: string | null;
  reason: 'Completed' | 'WallTimeExceeded' | 'OutputLimitExceeded' | 'Signaled';
  outputBytes: number;
}

/** The start time of `pid`, or undefined when there is no such process. */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19];
}

/** The exit record's path for an output log (<uid>.output.log -> <uid>.exit). */
export function exitFileFor(outputFile: string): string {
  return outputFile.endsWith('.output.log') ? `${outputFile.slice(0, -'.output.log'.length)}.exit` : `${outputFile}.exit`;
}

const REASONS = new Set(['Completed', 'WallTimeExceeded', 'OutputLimitExceeded', 'Signaled']);

function signalName(n: number): string {
  for (const [name, num] of Object.entries(constants.signals)) if (num === n) return name;
  return `SIG${n}`;
}

/** Reads the shim's exit record; undefined when it is absent (the shim never finished). A malformed record throws. */
export function readSupervisorExit(path: string): SupervisorExit | undefined {
  if (!existsSync(path)) return undefined;
  const raw = JSON.parse(readFileSync(path, 'utf8')) as { code?: unknown; signal?: unknown; reason?: unknown; outputBytes?: unknown };
  if (typeof raw.code !== 'number' || typeof raw.signal !== 'number' || typeof raw.reason !== 'string' || !REASONS.has(raw.reason) || typeof raw.outputBytes !== 'number') {
    throw new Error(`${path} is not a supervisor exit record`);
  }
  return { code: raw.signal !== 0 ? null : raw.code, signal: raw.signal !== 0 ? signalName(raw.signal) : null, reason: raw.reason as SupervisorExit['reason'], outputBytes: raw.outputBytes };
}

/**
 * A pidfd of a recorded process (a supervisor, a World's pid 1) if the process with its pid is still the
 * one recorded (same start time), else undefined. The pidfd is taken first, so the process it names is the
 * one whose start time is read: a recycled pid is never taken for it.
 */
export function openRecordedProcess(ref: Pick<SupervisorRef, 'pid' | 'startTime'>): number | undefined {
  let pidfd: number;
  try {
    pidfd = native.pidfdOpen(ref.pid);
  } catch {
    return undefined;
  }
  if (processStartTime(ref.pid) === ref.startTime) return pidfd;
  native.closeFd(pidfd);
  return undefined;
}
