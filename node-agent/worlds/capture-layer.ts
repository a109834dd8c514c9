// Capture of one Root's changes: walks ONLY the overlay's upper layer (so the cost follows the size
// of the change), looks up what it touches in the base generation's index and reports the delta. Whiteouts
// and opaque directories become deletions; owners are translated back out of the world's id range;
// the escape rules of adoption apply (EXTERNAL_SYMLINK, EXTERNAL_HARDLINK, SPECIAL_FILE).
import { createHash } from 'node:crypto';
import { closeSync, constants as fsc, fstatSync, lstatSync, openSync, readSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { compareEntries, sameEntry, type ManifestEntry } from '../../core/manifest.js';
import { compareBytes } from '../../core/relative-path.js';
import { symlinkTargetProblem } from '../../core/symlink-policy.js';
import * as native from '../../native/index.js';
import type { BaseIndex } from '../store/base-index.js';
import { breather } from '../store/breather.js';
import type { CaptureProblem, LayerDelta } from '../store/layer-delta.js';

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
    const hash = createHash('sha256');
    let size = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      size += n;
      await breathe();
    }
    return { sha256: hash.digest('hex'), size };
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
  const problems: CaptureProblem[] = [];
  const upperFiles: string[] = [];
  const links = new Map<string, { nlink: number; seen: number; path: string }>();
  const upsert: ManifestEntry[] = [];
  const deleted = new Set<string>();
  /** Directories whose base entries below are hidden (outermost only), and what the upper layer put below them. */
  const hidden: string[] = [];
  const present = new Set<string>();
  let added = 0;
  let modified = 0;
  const unmap = (rel: string, id: number): number | undefined => {
    if (id < idBase || id >= idBase + idCount) {
      problems.push({ code: 'CAPTURE_OWNER_UNMAPPED', path: rel || '.', message: `${rel || '.'} is owned by host id ${id}, outside the world's range` });
      return undefined;
    }
    return id - idBase;
  };
  const deleteBelow = (rel: string): void => {
    for (const e of base.descendantsOf(rel)) deleted.add(e.path);
  };
  const put = (e: ManifestEntry, was: ManifestEntry | undefined, inHidden: boolean): void => {
    if (inHidden) present.add(e.path);
    if (!was) added++;
    else if (!sameEntry(was, e)) modified++;
    else return;
    upsert.push(e);
  };

  const breathe = breather(10);
  const buffer = Buffer.allocUnsafe(1 << 20);
  const top = lstatSync(upper);
  const rootUid = unmap('', top.uid);
  const rootGid = unmap('', top.gid);
  const root = rootUid !== undefined && rootGid !== undefined ? { mode: top.mode & 0o7777, uid: rootUid, gid: rootGid } : undefined;

  /** inHidden: an ancestor in the upper layer hides the base below it (its base entries are handled there). */
  const walk = async (relDir: string, inHidden: boolean): Promise<void> => {
    const names = readdirSync(join(upper, relDir)).sort();
    for (const name of names) {
      await breathe();
      const rel = relDir ? `${relDir}/${name}` : name;
      const abs = join(upper, rel);
      const st = lstatSync(abs);
      if (st.dev !== top.dev) {
        problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is on another device` });
        continue;
      }
      const was = base.get(rel);
      if (isWhiteout(st)) {
        if (was) deleted.add(rel);
        if (was?.type === 'dir' && !inHidden) deleteBelow(rel);
        continue;
      }
      const uid = unmap(rel, st.uid);
      const gid = unmap(rel, st.gid);
      if (uid === undefined || gid === undefined) continue;
      const mode = st.mode & 0o7777;
      if (st.isDirectory()) {
        const opaque = native.lgetxattr(abs, OPAQUE_XATTR)?.toString() === 'y';
        // A base directory stays merged with this one unless it is opaque; a base file or symlink has nothing below.
        const hides = opaque || was?.type !== 'dir';
        if (hides && !inHidden && was?.type === 'dir') hidden.push(rel);
        put({ path: rel, type: 'dir', mode, uid, gid }, was, inHidden);
        await walk(rel, inHidden || hides);
      } else if (st.isFile()) {
        if (st.nlink > 1) {
          const key = `${st.dev}:${st.ino}`;
          const l = links.get(key) ?? { nlink: st.nlink, seen: 0, path: rel };
          l.seen++;
          links.set(key, l);
        }
        const h = await hashFile(abs, { dev: st.dev, ino: st.ino }, buffer, breathe);
        if (!h) {
          problems.push({ code: 'CAPTURE_CHANGED_DURING_READ', path: rel, message: `${rel} changed while it was read` });
          continue;
        }
        if (was?.type === 'dir' && !inHidden) deleteBelow(rel);
        put({ path: rel, type: 'file', mode, uid, gid, size: h.size, sha256: h.sha256 }, was, inHidden);
        upperFiles.push(rel);
      } else if (st.isSymbolicLink()) {
        const target = readlinkSync(abs);
        if (symlinkTargetProblem(rel, target)) {
          problems.push({ code: 'EXTERNAL_SYMLINK', path: rel, message: `${rel} -> ${target} leaves the root` });
          continue;
        }
        if (was?.type === 'dir' && !inHidden) deleteBelow(rel);
        put({ path: rel, type: 'symlink', mode, uid, gid, target }, was, inHidden);
      } else {
        problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is a device, fifo or socket` });
      }
    }
  };
  await walk('', false);
  for (const l of links.values()) {
    if (l.seen < l.nlink) problems.push({ code: 'EXTERNAL_HARDLINK', path: l.path, message: `${l.path} has ${l.nlink} links, only ${l.seen} inside the world's changes` });
  }
  for (const dir of hidden) {
    for (const e of base.descendantsOf(dir)) if (!present.has(e.path)) deleted.add(e.path);
  }
  const b = base.root;
  const rootChanged = (b === undefined) !== (root === undefined) || (b !== undefined && root !== undefined && (b.mode !== root.mode || b.uid !== root.uid || b.gid !== root.gid));
  return {
    upsert: upsert.sort(compareEntries),
    deleted: [...deleted].sort(compareBytes),
    ...(rootChanged && root ? { rootAttributes: root } : {}),
    rootChanged,
    added,
    modified,
    upperFiles,
    problems,
  };
}
