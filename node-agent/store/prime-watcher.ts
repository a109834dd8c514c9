// The PRIME watcher: one fanotify fd on the store's filesystem (FAN_MARK_FILESYSTEM, file-id mode,
// native/fanotify.ts), so that a later step can re-measure only the paths reported changed under a
// watched tree (a generation's payload, a layer directory) instead of re-hashing all of it. It never
// vouches for what it did not see: every gap in observation makes changesSince answer { gap: true } and
// the caller falls back to a full walk.
//
// What is observed: every create, delete, rename (both names), write (FAN_MODIFY), close after writing,
// and metadata change (mode, owner, times, xattrs, link count) of a file, directory or symlink anywhere on
// the filesystem. The kernel reports a directory handle and an entry name; the handle is resolved to a
// path when the queue is drained (open_by_handle_at + /proc/self/fd), so a path is where the directory is
// at drain time. A directory moved in the meantime is still covered: its move was reported under both
// names. A change is attributed to a tree when its path is the tree's directory or below it (compared with
// a trailing '/', so /x/ab never contains /x/abc). A reported directory path stands for everything under it
// (a directory moved in brings its whole subtree).
//
// A directory removed before the drain has a stale handle; it is located by its own removal event in the
// same batch (parent handle + name + the directory's handle), so `rm -r` of a tree between two drains is
// reported by name, not a gap, and so is a staging directory whose content was moved out before it was
// removed (what every collapse does). Where a move in the batch makes that place wrong, the move itself
// marks every tree it crossed (removedDirs says why).
//
// A gap (fail closed) is recorded, for every tree, when: the kernel's bounded queue overflowed
// (FAN_Q_OVERFLOW: events were lost); an event cannot be attributed (its directory no longer exists and
// cannot be located as above — e.g. a file written in a directory that was then moved and removed before
// the drain; an event with no handle at all; a name that is not valid UTF-8, which would read back as
// another name); a resolution failed for another reason; one drain read its bound (8 MiB) of events
// before it had read every event queued when it began — it may have left some of those behind, so it
// cannot say nothing else happened (it has read them all once it has read more events than the queue can
// hold, or met an empty queue); reading the fd failed
// (the watcher then reopens it, which is a restart); a changed non-directory has more than one link (its
// other names, e.g. in other generations sharing it by hard link, are not reported); more than
// maxPathsPerTree paths piled up for one tree. A token from another watcher instance (a restart, or a
// token from before this process) is a gap; so is a token older than the watch() of its tree, and a move
// or removal of the tree's directory or one of its ancestors.
// Not gaps: events reported without a directory of an object that has no name when drained — the "self"
// events of an object whose last name was removed (DELETE_SELF, link-count ATTRIBs), and the metadata of
// a file made without a name (O_TMPFILE: overlayfs builds every copy-up that way in its work directory):
// removing each name was itself reported, with the name, by a DELETE or MOVED_FROM on its directory, and
// a nameless object is in no tree. Link-count changes (ATTRIB without a directory name) are attributed to the
// object's current path.
//
// Honest limits:
// - Writes through a shared writable mmap produce no FAN_MODIFY (page faults write, no write(2) is
//   made). On this kernel (6.18, ext4) nothing is reported while such a mapping lives, even after the fd
//   that made it is closed; FAN_CLOSE_WRITE arrives when the last reference to the open file goes (the
//   munmap, or the process's exit). A tree written through a mapping that is still mapped is therefore
//   reported changed only once the mapping is gone; test/kernel/prime-watcher.test.ts shows exactly this.
// - Metadata changed through a handle opened with open_by_handle_at on a disconnected dentry arrives
//   without a directory name and is attributed to one current name of the object only.
// - The watcher needs CAP_SYS_ADMIN (fanotify with FID reporting on a filesystem mark) and
//   CAP_DAC_READ_SEARCH (open_by_handle_at).
import { realpathSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { relative } from 'node:path';
import * as native from '../../native/index.js';

/** Why changesSince could not list the changes. */
export type WatchGapReason =
  | 'overflow' | 'unattributed' | 'read-failed' | 'restart' | 'not-watched' | 'before-watch' | 'tree-moved' | 'hard-linked' | 'too-many-paths'
  | 'not-observing' | 'read-bounded';

export type ChangesSince = { gap: true; reason: WatchGapReason; detail: string } | { gap: false; paths: string[] };

export interface PrimeWatcherOptions {
  /** How often queued events are drained in the background (ms, default 100; 0: only drain()/mark()). */
  intervalMs?: number;
  /** More distinct changed paths than this under one tree become a gap for it (default 100000). */
  maxPathsPerTree?: number;
}

interface Gap {
  seq: number;
  reason: WatchGapReason;
  detail: string;
}

interface Tree {
  dir: string;
  /** dir with a trailing '/': what a path inside it starts with (made once, not per event). */
  dirSlash: string;
  /** seq at watch(): tokens before it know nothing of this tree. */
  since: number;
  gap: Gap | null;
  /** relative path ('.' for the tree's directory) -> seq of its latest change. */
  changes: Map<string, number>;
  /** seq of the latest change observed under it (0: none since watch()). */
  last: number;
}

const NAME_EVENTS = native.FAN_CREATE | native.FAN_DELETE | native.FAN_MOVED_FROM | native.FAN_MOVED_TO | native.FAN_DELETE_SELF | native.FAN_MOVE_SELF;
const CONTENT_EVENTS = native.FAN_MODIFY | native.FAN_CLOSE_WRITE | native.FAN_ATTRIB;

type Resolved = { path: string | null; nlink: number } | Error;

/** One drain's resolutions: live ones by handle, and where directories removed in the batch were. */
interface Batch {
  memo: Map<string, Resolved>;
  removed: Map<string, string>;
}

function handleKey(record: native.FanotifyRecord): string {
  return `${record.handleType}:${record.handle?.toString('hex')}`;
}

/** One event's paths (absolute), or why it cannot be attributed. */
type Attribution = { paths: string[] } | { unattributed: string; reason: WatchGapReason };

export class PrimeWatcher {
  /** Differs for every watcher: a token names the watcher that issued it. */
  readonly instance = randomUUID();
  readonly storeDir: string;
  private fd: number | null = null;
  /** The queue bound of the fd's group (undefined: not known; then only an empty queue ends a drain). */
  private queueLimit: number | undefined;
  private readonly mountFd: number;
  private readonly mntId: number;
  private seq = 0;
  private lastGap: Gap;
  private readonly trees = new Map<string, Tree>();
  private readonly timer: NodeJS.Timeout | null;
  private readonly maxPaths: number;
  private closed = false;

  /** Marks the filesystem holding storeDir and starts draining; throws errno errors (EPERM without CAP_SYS_ADMIN). */
  constructor(storeDir: string, opts: PrimeWatcherOptions = {}) {
    this.storeDir = realpathSync(storeDir);
    this.maxPaths = opts.maxPathsPerTree ?? 100_000;
    this.mountFd = native.openat2(native.AT_FDCWD, this.storeDir, { flags: native.O_RDONLY | native.O_DIRECTORY, resolve: 0 });
    this.mntId = native.statx(this.mountFd, '', native.AT_EMPTY_PATH).mntId;
    // Starting is a gap: nothing before this moment was seen.
    this.lastGap = { seq: 0, reason: 'restart', detail: 'the watcher started' };
    try {
      this.openFd();
    } catch (err) {
      native.closeFd(this.mountFd);
      throw err;
    }
    const interval = opts.intervalMs ?? 100;
    this.timer = interval > 0 ? setInterval(() => this.drain(), interval).unref() : null;
  }

  /** Increases on every observed change under a watched tree, on every gap and on every watch(). */
  get generation(): number {
    return this.seq;
  }

  /**
   * Registers `dir` (inside the store, on its mount) under `key`; a key watched again starts over.
   * Changes are kept from now on: mark(key) after this gives tokens changesSince can answer.
   */
  watch(key: string, dir: string): void {
    const real = realpathSync(dir);
    if (real !== this.storeDir && !real.startsWith(this.storeDir + '/')) throw new Error(`${dir} is not inside the watched store ${this.storeDir}`);
    if (native.statx(native.AT_FDCWD, real, 0).mntId !== this.mntId && !this.boundOntoItself(real)) throw new Error(`${dir} is on another mount than the store ${this.storeDir}`);
    this.drain();
    // A moment of its own: a token from before it (even with nothing observed since) is a gap for this tree.
    this.trees.set(key, { dir: real, dirSlash: `${real}/`, since: ++this.seq, gap: null, changes: new Map(), last: 0 });
  }

  /**
   * True when the mount at `real` shows the very directory the store's own mount has at that path (a sealed
   * payload: a read-only bind mount of itself, generation-stack.ts), so the events under it, placed by path
   * through the store's mount, name paths inside it. Another directory bound there would not.
   */
  private boundOntoItself(real: string): boolean {
    const fd = native.openDetachedTree(this.storeDir);
    try {
      const below = native.statx(fd, relative(this.storeDir, real), native.AT_SYMLINK_NOFOLLOW);
      const shown = native.statx(native.AT_FDCWD, real, native.AT_SYMLINK_NOFOLLOW);
      return below.devMajor === shown.devMajor && below.devMinor === shown.devMinor && below.ino === shown.ino && below.mntId !== shown.mntId;
    } catch {
      return false;
    } finally {
      native.closeFd(fd);
    }
  }

  unwatch(key: string): void {
    this.trees.delete(key);
  }

  /** Drains, then names this moment: changesSince(key, token) lists what changed after it. */
  mark(key: string): string {
    if (!this.trees.has(key)) throw new Error(`mark: ${key} is not watched`);
    this.drain();
    return `${this.instance}:${this.seq}`;
  }

  /** Drains, then the relative paths changed under key's tree since token, sorted; or the gap that hides them. */
  changesSince(key: string, token: string): ChangesSince {
    if (this.closed) return { gap: true, reason: 'not-observing', detail: 'the watcher is closed' };
    this.drain();
    const tree = this.trees.get(key);
    if (tree === undefined) return { gap: true, reason: 'not-watched', detail: `${key} is not watched` };
    const colon = token.lastIndexOf(':');
    const digits = token.slice(colon + 1);
    const seq = Number(digits);
    if (colon < 0 || token.slice(0, colon) !== this.instance || !/^[0-9]+$/.test(digits) || !Number.isSafeInteger(seq) || seq > this.seq) {
      return { gap: true, reason: 'restart', detail: 'the token was issued by another watcher (a restart), or is not a token' };
    }
    if (seq < tree.since) return { gap: true, reason: 'before-watch', detail: `the token predates watch(${key})` };
    if (this.fd === null) return { gap: true, reason: 'read-failed', detail: this.lastGap.detail };
    for (const g of [this.lastGap, tree.gap]) {
      if (g !== null && g.seq > seq) return { gap: true, reason: g.reason, detail: g.detail };
    }
    const paths = [...tree.changes].filter(([, s]) => s > seq).map(([p]) => p);
    return { gap: false, paths: paths.sort() };
  }

  /**
   * Drains, then one value for the trees under `keys` together: it is the same value later exactly when
   * nothing was observed under any of them and no gap (of one of them, or of all) came in between. null
   * when a key is not watched or the watcher is not observing (a value it cannot stand behind).
   */
  stateOf(keys: readonly string[]): string | null {
    if (this.closed) return null;
    this.drain();
    if (this.fd === null) return null;
    let last = this.lastGap.seq;
    for (const key of keys) {
      const t = this.trees.get(key);
      if (t === undefined) return null;
      last = Math.max(last, t.since, t.gap?.seq ?? 0, t.last);
    }
    return `${this.instance}:${last}`;
  }

  /** The keys watched now. */
  watchedKeys(): string[] {
    return [...this.trees.keys()];
  }

  /** Reads and attributes every queued event now. Never throws: a failure is a gap. */
  drain(): void {
    if (this.closed) return;
    if (this.fd === null) {
      try {
        this.openFd();
        this.gapAll('restart', 'the fanotify fd was reopened after a failure');
      } catch (err) {
        this.gapAll('read-failed', `reopening fanotify: ${(err as Error).message}`);
        return;
      }
    }
    const first = this.read();
    if (first === null) return;
    let events = first.events;
    // A drain stands behind what was written before it only when it read everything queued then.
    if (!first.complete) this.gapAll('read-bounded', 'a drain reached its bound of events before those queued when it began were all read');
    // An event in a directory removed before this drain can only be located by that removal's own event;
    // when it is not in the batch yet (removed between our read and our resolving), read once or twice more.
    const memo = new Map<string, Resolved>();
    let results: Attribution[] = [];
    for (let tries = 0; ; tries++) {
      const batch: Batch = { memo, removed: this.removedDirs(events, memo) };
      results = events.map((e) => (e.kind === 'overflow' ? { unattributed: 'the fanotify queue overflowed: events were lost', reason: 'overflow' } : this.attribute(e, batch)));
      if (tries === 2 || !results.some((r) => 'unattributed' in r && r.reason === 'unattributed')) break;
      const more = this.read();
      if (more === null) return;
      if (more.events.length === 0) break;
      events = events.concat(more.events);
    }
    for (let i = 0; i < results.length; i++) {
      const a = results[i]!;
      if ('unattributed' in a) this.gapAll(a.reason, a.unattributed);
      else for (const p of a.paths) this.record(p, events[i]!.mask);
    }
  }

  /** Stops draining and closes the fds; the watcher answers nothing afterwards. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.fd !== null) native.closeFd(this.fd);
    this.fd = null;
    native.closeFd(this.mountFd);
    this.trees.clear();
  }

  private openFd(): void {
    // The group copies fs.fanotify.max_queued_events when it is made; read around that, take the larger.
    const before = native.fanotifyQueueLimit();
    const fd = native.fanotifyOpen();
    const after = native.fanotifyQueueLimit();
    this.queueLimit = before === undefined || after === undefined ? undefined : Math.max(before, after);
    try {
      native.fanotifyMarkFilesystem(fd, this.storeDir);
    } catch (err) {
      native.closeFd(fd);
      throw err;
    }
    this.fd = fd;
  }

  /** The queued events, up to the read's bound (complete: all of those queued when it began); null (and a gap, the fd closed) when reading fails. */
  private read(): native.FanotifyBatch | null {
    try {
      return native.fanotifyRead(this.fd!, this.queueLimit);
    } catch (err) {
      try {
        native.closeFd(this.fd!);
      } catch {
        // already unusable; it is dropped either way
      }
      this.fd = null;
      this.gapAll('read-failed', `reading fanotify: ${(err as Error).message}`);
      return null;
    }
  }

  /**
   * Where each directory removed in this batch was when it was removed: from its own DELETE event (parent
   * handle + name + the directory's handle), the parent located first (by its path now, or by its own
   * removal). A directory moved in the batch can make that place differ from where an earlier event in
   * the directory happened. That is sound for attribution: a tree whose inside the directory left or
   * entered between the event and its removal has that move (or the move of an ancestor) reported in
   * the same batch, under a path in the tree (MOVED_FROM or MOVED_TO in one of its directories) or at or
   * above its directory (tree-moved); so the tree is marked changed or gapped by this drain either way.
   */
  private removedDirs(events: native.FanotifyEvent[], memo: Map<string, Resolved>): Map<string, string> {
    const removed = new Map<string, string>();
    // Events of one name merge (a directory created and removed between drains is one CREATE|DELETE event,
    // queued before its children's), so repeat until no pass locates another directory.
    const deletions = events.filter((e) => (e.mask & native.FAN_DELETE) !== 0 && (e.mask & native.FAN_ONDIR) !== 0 && e.dir !== undefined && e.fid !== undefined);
    for (let located = true; located; ) {
      located = false;
      for (const e of deletions) {
        const name = e.dir!.name;
        if (name === null || name === undefined || name === '.' || removed.has(handleKey(e.fid!))) continue;
        const parent = this.resolve(e.dir!, { memo, removed });
        if (parent instanceof Error || parent.path === null) continue;
        removed.set(handleKey(e.fid!), `${parent.path === '/' ? '' : parent.path}/${name}`);
        located = true;
      }
    }
    return removed;
  }

  private gapAll(reason: WatchGapReason, detail: string): void {
    this.lastGap = { seq: ++this.seq, reason, detail };
    for (const t of this.trees.values()) t.changes.clear();
  }

  /** A handle's current path and link count; a directory removed in this batch is located where it was. */
  private resolve(record: native.FanotifyRecord, batch: Batch): Resolved {
    const id = handleKey(record);
    let r = batch.memo.get(id);
    if (r === undefined) {
      r = resolveWithLinks(this.mountFd, record);
      batch.memo.set(id, r);
    }
    const was = batch.removed.get(id);
    return !(r instanceof Error) && r.path === null && was !== undefined ? { path: was, nlink: 0 } : r;
  }

  private attribute(e: native.FanotifyEvent, batch: Batch): Attribution {
    const deletedSelf = (e.mask & native.FAN_DELETE_SELF) !== 0;
    const paths: string[] = [];
    let fid: { path: string | null; nlink: number } | null = null;
    if (e.fid !== undefined) {
      const r = this.resolve(e.fid, batch);
      if (r instanceof Error) return { unattributed: `resolving an object's handle: ${r.message}`, reason: 'unattributed' };
      fid = r;
    }
    if (e.dir !== undefined) {
      const r = this.resolve(e.dir, batch);
      if (r instanceof Error) return { unattributed: `resolving a directory handle: ${r.message}`, reason: 'unattributed' };
      const name = e.dir.name;
      const self = name === null || name === undefined || name === '.';
      if (r.path === null) {
        // The directory is gone. Its own removal was reported by name; anything else under it is unknown.
        if (self && deletedSelf) return { paths: [] };
        return { unattributed: `an event (mask 0x${e.mask.toString(16)}) in a directory that no longer exists`, reason: 'unattributed' };
      }
      paths.push(self ? r.path : `${r.path === '/' ? '' : r.path}/${name}`);
      // Content or metadata of a non-directory with other names: those names are not reported.
      if (!self && (e.mask & CONTENT_EVENTS) !== 0 && (e.mask & native.FAN_ONDIR) === 0 && fid !== null && fid.nlink > 1) {
        return { unattributed: `${paths[0]} changed and has ${fid.nlink} links; its other names are not reported`, reason: 'hard-linked' };
      }
    }
    if (fid !== null && fid.path !== null) paths.push(fid.path);
    // A name that is not UTF-8 reads back with U+FFFD: it would name another path, so it names none.
    if (paths.some((p) => p.includes('\uFFFD'))) return { unattributed: 'a path that is not valid UTF-8', reason: 'unattributed' };
    if (paths.length === 0) {
      // An object with no name now (gone, or unlinked and still open) reported without a directory: every
      // tree that held one of its names was told of that name's removal, by name (DELETE / MOVED_FROM);
      // one that never had a name (O_TMPFILE, as an overlayfs copy-up starts) was in no tree.
      if (fid !== null) return { paths: [] };
      return { unattributed: `an event (mask 0x${e.mask.toString(16)}) ${fid === null ? 'without a handle' : 'of an object that no longer exists'}`, reason: 'unattributed' };
    }
    return { paths };
  }

  private record(path: string, mask: number): void {
    const renamed = (mask & NAME_EVENTS) !== 0;
    const pathSlash = path === '/' ? '/' : `${path}/`;
    let bumped = false;
    for (const [key, t] of this.trees) {
      const inside = path.startsWith(t.dirSlash);
      // The tree's directory itself, or one above it, moved, removed or (re)created: not the tree that was watched.
      const replaced = renamed && (path === t.dir || t.dir.startsWith(pathSlash));
      if (!inside && path !== t.dir && !replaced) continue; // outside, or metadata of an ancestor
      if (!bumped) {
        this.seq++;
        bumped = true;
      }
      t.last = this.seq;
      if (replaced) {
        t.gap = { seq: this.seq, reason: 'tree-moved', detail: `${path} was moved, removed or created, at or above ${key}'s directory` };
        t.changes.clear();
      } else {
        t.changes.set(inside ? path.slice(t.dir.length + 1) : '.', this.seq);
        if (t.changes.size > this.maxPaths) {
          t.gap = { seq: this.seq, reason: 'too-many-paths', detail: `more than ${this.maxPaths} changed paths under ${key}` };
          t.changes.clear();
        }
      }
    }
  }
}

/** The object's current path (null: it no longer exists) and link count, or the error that hid them. */
function resolveWithLinks(mountFd: number, record: native.FanotifyRecord): Resolved {
  if (record.handle === undefined || record.handleType === undefined) return new Error(`an info record of type ${record.type} without a handle`);
  try {
    return native.handleTarget(mountFd, record);
  } catch (err) {
    return err as Error;
  }
}
