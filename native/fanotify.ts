// fanotify in file-id mode (src/fanotify.c): one fd watching every change of content, metadata or names on
// a whole filesystem, its events decoded to plain objects with the kernel's file handles, and a handle
// resolved back to a path. node-agent/store/prime-watcher.ts is the one user.
import { readFileSync } from 'node:fs';
import { binding } from './binding.js';
import type { FanotifyRecord } from './types.js';
import * as v from './validate.js';

export type { FanotifyRecord } from './types.js';

// Kernel values, include/uapi/linux/fanotify.h.
export const FAN_MODIFY = 0x2;
export const FAN_ATTRIB = 0x4;
export const FAN_CLOSE_WRITE = 0x8;
export const FAN_MOVED_FROM = 0x40;
export const FAN_MOVED_TO = 0x80;
export const FAN_CREATE = 0x100;
export const FAN_DELETE = 0x200;
export const FAN_DELETE_SELF = 0x400;
export const FAN_MOVE_SELF = 0x800;
export const FAN_Q_OVERFLOW = 0x4000;
export const FAN_ONDIR = 0x40000000;
/** What fanotifyMarkFilesystem asks for: every change of content, metadata or names, on files and directories. */
export const FAN_WATCH_MASK =
  FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE | FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR;

export const FAN_EVENT_INFO_TYPE_FID = 1;
export const FAN_EVENT_INFO_TYPE_DFID_NAME = 2;
export const FAN_EVENT_INFO_TYPE_DFID = 3;

/** A decoded event: the raw mask and records, plus the records a watcher needs picked out. */
export interface FanotifyEvent {
  kind: 'event' | 'overflow';
  mask: number;
  pid: number;
  records: FanotifyRecord[];
  /** The object's own handle (FAN_EVENT_INFO_TYPE_FID), when reported. */
  fid: FanotifyRecord | undefined;
  /** The directory's handle and entry name (DFID_NAME, or DFID without a name), when reported. */
  dir: FanotifyRecord | undefined;
}

/**
 * fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET, O_RDONLY | O_LARGEFILE):
 * the kernel's bounded queue (16384 events by default), never FAN_UNLIMITED_QUEUE. Needs CAP_SYS_ADMIN.
 * Close it with closeFd.
 */
export function fanotifyOpen(): number {
  return binding.fanotifyOpen();
}

/** FAN_MARK_ADD | FAN_MARK_FILESYSTEM with FAN_WATCH_MASK on the filesystem holding `path`. */
export function fanotifyMarkFilesystem(fd: number, path: string): void {
  binding.fanotifyMarkFilesystem(v.fd('fd', fd), v.absolutePath('path', path));
}

/** What one fanotifyRead call read, and whether that was everything queued when it began. */
export interface FanotifyBatch {
  events: FanotifyEvent[];
  /**
   * true: every event queued when the call began was read (the read met EAGAIN, or read more events than
   * the group's queue can hold). false: the call stopped at its byte bound first, and events queued before
   * it may still be waiting; the caller must not answer as if it had seen them.
   */
  complete: boolean;
}

/**
 * The events queued on `fd` now: non-blocking reads until EAGAIN, or until more events than `queueLimit`
 * (the group's queue bound, fanotifyQueueLimit when the fd was opened; undefined when not known) were read,
 * or at most 8 MiB per call (what is left stays queued). FAN_Q_OVERFLOW is its own kind. Throws errno
 * errors (EPROTO for a record it cannot decode).
 */
export function fanotifyRead(fd: number, queueLimit?: number): FanotifyBatch {
  // The queue holds at most queueLimit events, plus the one overflow event the kernel adds when it is full.
  const enough = queueLimit === undefined ? 0 : v.integer('queueLimit', queueLimit, 1, 0xfffffffe) + 1;
  const raw = binding.fanotifyRead(v.fd('fd', fd), enough);
  return {
    complete: raw.complete,
    events: raw.events.map((e) => ({
      kind: (e.mask & FAN_Q_OVERFLOW) !== 0 ? 'overflow' : 'event',
      mask: e.mask,
      pid: e.pid,
      records: e.records,
      fid: e.records.find((r) => r.type === FAN_EVENT_INFO_TYPE_FID),
      dir: e.records.find((r) => r.type === FAN_EVENT_INFO_TYPE_DFID_NAME || r.type === FAN_EVENT_INFO_TYPE_DFID),
    })),
  };
}

/**
 * The bound a fanotify group opened now gets on its queue: fs.fanotify.max_queued_events, which the kernel
 * copies into the group at fanotify_init. undefined when it cannot be read.
 */
export function fanotifyQueueLimit(): number | undefined {
  try {
    const n = Number(readFileSync('/proc/sys/fs/fanotify/max_queued_events', 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 && n < 0xffffffff ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * open_by_handle_at(mountFd, handle, flags | O_CLOEXEC); needs CAP_DAC_READ_SEARCH. mountFd is any fd on the
 * filesystem's mount except an O_PATH one (the kernel refuses those with EBADF). Throws errno errors (ESTALE: gone). */
export function openByHandle(mountFd: number, handleType: number, handle: Buffer, flags: number): number {
  if (!Buffer.isBuffer(handle) || handle.length === 0 || handle.length > 128) throw v.valueError('handle', 'must be a Buffer of 1..128 bytes');
  return binding.openByHandle(v.fd('mountFd', mountFd), v.integer('handleType', handleType, -0x80000000, 0x7fffffff), handle, v.flags32('flags', flags));
}

/** What a file handle names now: its path (null: it no longer exists, or is unlinked) and its link count. */
export interface HandleTarget {
  path: string | null;
  nlink: number;
}

/**
 * The path a file handle names now, seen through `mountFd`'s mount (open_by_handle_at(O_PATH) and the
 * /proc/self/fd link), and its link count, in one native call. path null when the object no longer exists
 * (ESTALE, ENOENT; nlink 0) or is unlinked ("... (deleted)"). Throws other errno errors.
 */
export function handleTarget(mountFd: number, record: FanotifyRecord): HandleTarget {
  if (record.handle === undefined || record.handleType === undefined) throw v.valueError('record', `an info record of type ${record.type} has no handle`);
  const handle = record.handle;
  if (!Buffer.isBuffer(handle) || handle.length === 0 || handle.length > 128) throw v.valueError('handle', 'must be a Buffer of 1..128 bytes');
  const r = binding.handleInfo(v.fd('mountFd', mountFd), v.integer('handleType', record.handleType, -0x80000000, 0x7fffffff), handle);
  if (r.link === null) return { path: null, nlink: 0 };
  return { path: r.link.startsWith('/') && !r.link.endsWith(' (deleted)') ? r.link : null, nlink: r.nlink };
}

/**
 * The path a file handle names now, seen through `mountFd`'s mount: open_by_handle_at(O_PATH) and the
 * /proc/self/fd link. null when the object no longer exists (ESTALE, ENOENT) or is unlinked ("... (deleted)").
 */
export function resolveHandle(mountFd: number, record: FanotifyRecord): string | null {
  if (record.handle === undefined || record.handleType === undefined) return null;
  return handleTarget(mountFd, record).path;
}
