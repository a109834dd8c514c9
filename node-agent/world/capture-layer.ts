// Capture of one Root's changes: walks ONLY the overlay's upper layer (so the cost follows the size
// of the change), applies it to the base generation's manifest and reports what changed. Whiteouts
// and opaque directories become deletions; owners are translated back out of the world's id range;
// the escape rules of adoption apply (EXTERNAL_SYMLINK, EXTERNAL_HARDLINK, SPECIAL_FILE).
import { createHash } from 'node:crypto';
import { open, lstat, readdir, readlink } from 'node:fs/promises';
import { constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { compareEntries, type Manifest, type ManifestEntry } from '../../core/manifest.js';
import { symlinkTargetProblem } from '../../core/symlink-policy.js';
import * as native from '../../native/index.js';

export interface CaptureProblem {
  code: 'EXTERNAL_SYMLINK' | 'EXTERNAL_HARDLINK' | 'SPECIAL_FILE' | 'CAPTURE_OWNER_UNMAPPED' | 'CAPTURE_CHANGED_DURING_READ';
  path: string;
  message: string;
}

export interface LayerCapture {
  next: Manifest;
  /** Paths (files) whose content lives in the upper layer. */
  upperFiles: string[];
  problems: CaptureProblem[];
}

const OPAQUE_XATTR = 'trusted.overlay.opaque';

function isWhiteout(st: { isCharacterDevice(): boolean; rdev: number }): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

async function hashFile(abs: string, expect: { dev: number; ino: number }): Promise<{ sha256: string; size: number } | null> {
  const fh = await open(abs, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    if (st.dev !== expect.dev || st.ino !== expect.ino) return null;
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of fh.createReadStream({ autoClose: false }) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
    }
    return { sha256: hash.digest('hex'), size };
  } finally {
    await fh.close();
  }
}

export async function captureLayer(upper: string, base: Manifest, idBase: number, idCount: number): Promise<LayerCapture> {
  const entries = new Map<string, ManifestEntry>(base.entries.map((e) => [e.path, e]));
  const problems: CaptureProblem[] = [];
  const upperFiles: string[] = [];
  const links = new Map<string, { nlink: number; seen: number; path: string }>();
  const unmap = (rel: string, id: number): number | undefined => {
    if (id < idBase || id >= idBase + idCount) {
      problems.push({ code: 'CAPTURE_OWNER_UNMAPPED', path: rel || '.', message: `${rel || '.'} is owned by host id ${id}, outside the world's range` });
      return undefined;
    }
    return id - idBase;
  };
  const dropBelow = (rel: string): void => {
    const prefix = `${rel}/`;
    for (const p of [...entries.keys()]) if (p.startsWith(prefix)) entries.delete(p);
  };

  const top = await lstat(upper);
  const rootUid = unmap('', top.uid);
  const rootGid = unmap('', top.gid);
  const next: Manifest = { entries: [] };
  if (rootUid !== undefined && rootGid !== undefined) next.root = { mode: top.mode & 0o7777, uid: rootUid, gid: rootGid };

  const walk = async (relDir: string): Promise<void> => {
    const names = (await readdir(join(upper, relDir))).sort();
    for (const name of names) {
      const rel = relDir ? `${relDir}/${name}` : name;
      const abs = join(upper, rel);
      const st = await lstat(abs);
      if (st.dev !== top.dev) {
        problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is on another device` });
        continue;
      }
      if (isWhiteout(st)) {
        entries.delete(rel);
        dropBelow(rel);
        continue;
      }
      const uid = unmap(rel, st.uid);
      const gid = unmap(rel, st.gid);
      if (uid === undefined || gid === undefined) continue;
      const mode = st.mode & 0o7777;
      if (st.isDirectory()) {
        const opaque = native.lgetxattr(abs, OPAQUE_XATTR)?.toString() === 'y';
        if (opaque || entries.get(rel)?.type !== 'dir') dropBelow(rel);
        entries.set(rel, { path: rel, type: 'dir', mode, uid, gid });
        await walk(rel);
      } else if (st.isFile()) {
        if (st.nlink > 1) {
          const key = `${st.dev}:${st.ino}`;
          const l = links.get(key) ?? { nlink: st.nlink, seen: 0, path: rel };
          l.seen++;
          links.set(key, l);
        }
        const h = await hashFile(abs, { dev: st.dev, ino: st.ino });
        if (!h) {
          problems.push({ code: 'CAPTURE_CHANGED_DURING_READ', path: rel, message: `${rel} changed while it was read` });
          continue;
        }
        dropBelow(rel);
        entries.set(rel, { path: rel, type: 'file', mode, uid, gid, size: h.size, sha256: h.sha256 });
        upperFiles.push(rel);
      } else if (st.isSymbolicLink()) {
        const target = await readlink(abs);
        if (symlinkTargetProblem(rel, target)) {
          problems.push({ code: 'EXTERNAL_SYMLINK', path: rel, message: `${rel} -> ${target} leaves the root` });
          continue;
        }
        dropBelow(rel);
        entries.set(rel, { path: rel, type: 'symlink', mode, uid, gid, target });
      } else {
        problems.push({ code: 'SPECIAL_FILE', path: rel, message: `${rel} is a device, fifo or socket` });
      }
    }
  };
  await walk('');
  for (const l of links.values()) {
    if (l.seen < l.nlink) problems.push({ code: 'EXTERNAL_HARDLINK', path: l.path, message: `${l.path} has ${l.nlink} links, only ${l.seen} inside the world's changes` });
  }
  next.entries = [...entries.values()].sort(compareEntries);
  return { next, upperFiles, problems };
}
