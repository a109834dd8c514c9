// Capture of one Root's changes: walks ONLY the overlay's upper layer (so the cost follows the size
// of the change), looks up what it touches in the base generation's index and reports the delta. Whiteouts
// and opaque directories become deletions; owners are translated back out of the world's id range;
// the escape rules of adoption apply (EXTERNAL_SYMLINK, EXTERNAL_HARDLINK, SPECIAL_FILE).
import { closeSync, constants as fsc, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { compareEntries, sameEntry, sameRootAttributes, type ManifestEntry, type RootAttributes } from '../../core/manifest.js';
import { compareBytes } from '../../core/relative-path.js';
import { symlinkTargetProblem } from '../../core/symlink-policy.js';
import * as native from '../../native/index.js';
import type { BaseIndex } from './base-index.js';
import { breather } from './breather.js';
import { hashOpenFileYielding } from './hash-file.js';
import type { CaptureProblem, LayerDelta } from './layer-delta.js';

const OPAQUE_XATTR = 'trusted.overlay.opaque';

function isWhiteout(st: { isCharacterDevice(): boolean; rdev: number }): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

const OPEN_FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | fsc.O_NOCTTY;

async function hashFile(abs: string, expect: { dev: number; ino: number }, buffer: Buffer, breathe: () => Promise<void>): Promise<{ sha256: string; size: number } | null> {
  const fd = openSync(abs, OPEN_FLAGS);
  try {
    const st = fstatSync(fd);
    if (st.dev !== expect.dev || st.ino !== expect.ino || !st.isFile()) return null;
    return await hashOpenFileYielding(fd, buffer, breathe);
  } finally {
    closeSync(fd);
  }
}

/**
 * Walks the upper layer and looks each of its entries up in the base (O(log N) each): a whiteout deletes
 * its path and the base entries below it; an opaque directory, or a directory, file or symlink replacing
 * a base directory, hides the base entries below it, which are deleted unless the upper layer re-creates
 * them. Entries equal to the base in every measured field are not changes. The cost follows the upper
 * layer plus the base entries it deletes, whatever the size of the root.
 */
export async function captureLayer(upper: string, base: BaseIndex, idBase: number, idCount: number): Promise<LayerDelta> {
  const capture = new LayerCapture(upper, base, idBase, idCount);
  await capture.walk('', false);
  return capture.result();
}

/** The state of one capture: what the walk found so far, and the steps that record it. */
class LayerCapture {
  private readonly problems: CaptureProblem[] = [];
  private readonly upperFiles: string[] = [];
  private readonly links = new Map<string, { nlink: number; seen: number; path: string }>();
  private readonly upsert: ManifestEntry[] = [];
  private readonly deleted = new Set<string>();
  /** Directories whose base entries below are hidden (outermost only), and what the upper layer put below them. */
  private readonly hidden: string[] = [];
  private readonly present = new Set<string>();
  private added = 0;
  private modified = 0;
  private readonly breathe = breather(10);
  private readonly buffer = Buffer.allocUnsafe(1 << 20);
  private readonly top: Stats;
  private readonly root: RootAttributes | undefined;

  constructor(
    private readonly upper: string,
    private readonly base: BaseIndex,
    private readonly idBase: number,
    private readonly idCount: number,
  ) {
    this.top = lstatSync(upper);
    const rootUid = this.unmapTop(this.top.uid, base.root?.uid);
    const rootGid = this.unmapTop(this.top.gid, base.root?.gid);
    this.root = rootUid !== undefined && rootGid !== undefined ? { mode: this.top.mode & 0o7777, uid: rootUid, gid: rootGid } : undefined;
  }

  private unmap(rel: string, id: number): number | undefined {
    if (id < this.idBase || id >= this.idBase + this.idCount) {
      this.problems.push({ code: 'CAPTURE_OWNER_UNMAPPED', path: rel || '.', message: `${rel || '.'} is owned by host id ${id}, outside the world's range` });
      return undefined;
    }
    return id - this.idBase;
  }

  /**
   * The top directory's owner: mapped like any other, except an owner the world's range cannot hold that
   * is exactly the base's (sandbox/rootfs.ts upperTopOwner keeps such an owner as it is: the world could
   * not change it).
   */
  private unmapTop(id: number, baseId: number | undefined): number | undefined {
    if (baseId !== undefined && baseId >= this.idCount && id === baseId) return baseId;
    return this.unmap('', id);
  }

  private deleteBelow(rel: string): void {
    for (const e of this.base.descendantsOf(rel)) this.deleted.add(e.path);
  }

  private put(e: ManifestEntry, was: ManifestEntry | undefined, inHidden: boolean): void {
    if (inHidden) this.present.add(e.path);
    if (!was) this.added++;
    else if (!sameEntry(was, e)) this.modified++;
    else return;
    this.upsert.push(e);
  }

  /** inHidden: an ancestor in the upper layer hides the base below it (its base entries are handled there). */
  async walk(relDir: string, inHidden: boolean): Promise<void> {
    const names = readdirSync(join(this.upper, relDir)).sort();
    for (const name of names) {
      await this.breathe();
      await this.visit(relDir ? `${relDir}/${name}` : name, inHidden);
    }
  }

  private async visit(rel: string, inHidden: boolean): Promise<void> {
    const abs = join(this.upper, rel);
    const st = lstatSync(abs);
    if (st.dev !== this.top.dev) {
      this.problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is on another device` });
      return;
    }
    const was = this.base.get(rel);
    if (isWhiteout(st)) {
      if (was) this.deleted.add(rel);
      if (was?.type === 'dir' && !inHidden) this.deleteBelow(rel);
      return;
    }
    const uid = this.unmap(rel, st.uid);
    const gid = this.unmap(rel, st.gid);
    if (uid === undefined || gid === undefined) return;
    const mode = st.mode & 0o7777;
    if (st.isDirectory()) {
      const opaque = native.lgetxattr(abs, OPAQUE_XATTR)?.toString() === 'y';
      // A base directory stays merged with this one unless it is opaque; a base file or symlink has nothing below.
      const hides = opaque || was?.type !== 'dir';
      if (hides && !inHidden && was?.type === 'dir') this.hidden.push(rel);
      this.put({ path: rel, type: 'dir', mode, uid, gid }, was, inHidden);
      await this.walk(rel, inHidden || hides);
    } else if (st.isFile()) {
      await this.visitFile(rel, abs, st, { mode, uid, gid }, was, inHidden);
    } else if (st.isSymbolicLink()) {
      const target = readlinkSync(abs);
      if (symlinkTargetProblem(rel, target)) {
        this.problems.push({ code: 'EXTERNAL_SYMLINK', path: rel, message: `${rel} -> ${target} leaves the root` });
        return;
      }
      if (was?.type === 'dir' && !inHidden) this.deleteBelow(rel);
      this.put({ path: rel, type: 'symlink', mode, uid, gid, target }, was, inHidden);
    } else {
      this.problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is a device, fifo or socket` });
    }
  }

  private async visitFile(rel: string, abs: string, st: Stats, attrs: { mode: number; uid: number; gid: number }, was: ManifestEntry | undefined, inHidden: boolean): Promise<void> {
    if (st.nlink > 1) {
      const key = `${st.dev}:${st.ino}`;
      const l = this.links.get(key) ?? { nlink: st.nlink, seen: 0, path: rel };
      l.seen++;
      this.links.set(key, l);
    }
    const h = await hashFile(abs, { dev: st.dev, ino: st.ino }, this.buffer, this.breathe);
    if (!h) {
      this.problems.push({ code: 'CAPTURE_CHANGED_DURING_READ', path: rel, message: `${rel} changed while it was read` });
      return;
    }
    if (was?.type === 'dir' && !inHidden) this.deleteBelow(rel);
    this.put({ path: rel, type: 'file', ...attrs, size: h.size, sha256: h.sha256 }, was, inHidden);
    this.upperFiles.push(rel);
  }

  result(): LayerDelta {
    for (const l of this.links.values()) {
      if (l.seen < l.nlink) this.problems.push({ code: 'EXTERNAL_HARDLINK', path: l.path, message: `${l.path} has ${l.nlink} links, only ${l.seen} inside the world's changes` });
    }
    for (const dir of this.hidden) {
      for (const e of this.base.descendantsOf(dir)) if (!this.present.has(e.path)) this.deleted.add(e.path);
    }
    const b = this.base.root;
    const root = this.root;
    const rootChanged = !sameRootAttributes(b, root);
    return {
      upsert: this.upsert.sort(compareEntries),
      deleted: [...this.deleted].sort(compareBytes),
      ...(rootChanged && root ? { rootAttributes: root } : {}),
      rootChanged,
      added: this.added,
      modified: this.modified,
      upperFiles: this.upperFiles,
      problems: this.problems,
    };
  }
}
