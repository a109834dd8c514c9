// Copy a measured tree to another filesystem, keeping types, permission bits (setuid included), owners
// and symlink targets. Used only when adoption cannot rename across filesystems (EXDEV); the caller
// walks the copy afterwards and requires the same manifest digest. Timestamps and xattrs are not kept,
// and hardlinks inside the tree become separate files.
import { constants } from 'node:fs';
import { chmod, chown, lchown, mkdir, open, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Manifest } from '../../core/manifest.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export async function copyTree(src: string, dst: string, manifest: Manifest): Promise<void> {
  await mkdir(dst, { mode: 0o700 });
  const dirs: { path: string; mode: number; uid: number; gid: number }[] = [];
  for (const e of manifest.entries) {
    const to = join(dst, e.path);
    if (e.type === 'dir') {
      await mkdir(to, { mode: 0o700 });
      dirs.push({ path: to, mode: e.mode, uid: e.uid, gid: e.gid });
    } else if (e.type === 'symlink') {
      await symlink(e.target!, to);
      await lchown(to, e.uid, e.gid);
    } else {
      await copyFileNoFollow(join(src, e.path), to);
      await chown(to, e.uid, e.gid); // before chmod: chown clears setuid and setgid
      await chmod(to, e.mode);
    }
  }
  // Directories last and deepest first, so a read-only directory is filled before it is closed.
  for (const d of dirs.reverse()) {
    await chown(d.path, d.uid, d.gid);
    await chmod(d.path, d.mode);
  }
  if (manifest.root) {
    await chown(dst, manifest.root.uid, manifest.root.gid);
    await chmod(dst, manifest.root.mode);
  }
}

async function copyFileNoFollow(from: string, to: string): Promise<void> {
  const input = await open(from, READ_FLAGS);
  try {
    const output = await open(to, WRITE_FLAGS, 0o600);
    try {
      const buffer = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        let written = 0;
        while (written < bytesRead) written += (await output.write(buffer, written, bytesRead - written)).bytesWritten;
      }
      await output.sync();
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
}
