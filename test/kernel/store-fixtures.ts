// Shared setup for the store's kernel tests: temporary directories (and mounts) that clean up after
// themselves, a sample tree with owners and special modes, and snapshots to prove "nothing changed".
import { execFile } from 'node:child_process';
import { chmod, chown, lchown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { MNT_DETACH, umount2 } from '../../native/index.js';
import { mountsUnder } from '../../node-agent/store/mount-table.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';
import { manifestDigest } from '../../core/manifest.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the store and collapse kernel tests');

export const run = promisify(execFile);

export interface Scratch {
  dir: string;
  /** Mount a tmpfs at `path`; it is unmounted before the scratch directory is removed. */
  mountTmpfs(path: string): Promise<void>;
  /** Unmount `path` (mounted by the test itself) during cleanup. */
  track(path: string): void;
}

/** A fresh temporary directory, removed (after unmounting what was mounted in it) when the test ends. */
export async function scratch(t: TestContext): Promise<Scratch> {
  const dir = await mkdtemp(join(tmpdir(), 'wl-store-'));
  const mounts: string[] = [];
  t.after(async () => {
    for (const m of mounts.reverse()) await run('umount', [m]);
    // A store's stacked generations are mounted (node-agent/store/generation-stack.ts): deepest first.
    for (const m of mountsUnder(dir)) umount2(m, MNT_DETACH);
    await rm(dir, { recursive: true, force: true });
  });
  return {
    dir,
    async mountTmpfs(path) {
      await mkdir(path, { recursive: true });
      await run('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', path]);
      mounts.push(path);
    },
    track: (path) => void mounts.push(path),
  };
}

export async function openTestStore(t: TestContext, dir: string): Promise<Store> {
  const { store } = await openStore({ dir, now: () => new Date('2025-01-01T00:00:00Z') });
  t.after(() => store.close());
  return store;
}

/** A tree with nested dirs, contained symlinks, special permission bits and a file owned by uid 1000. */
export async function makeSampleTree(root: string): Promise<void> {
  await mkdir(join(root, 'src/lib'), { recursive: true });
  await writeFile(join(root, 'README.md'), '# sample\n');
  await writeFile(join(root, 'src/main.ts'), 'export const x = 1;\n');
  await writeFile(join(root, 'src/lib/util.ts'), 'export const y = 2;\n');
  await writeFile(join(root, 'empty'), '');
  await writeFile(join(root, 'tool'), '#!/bin/sh\n');
  await chmod(join(root, 'tool'), 0o4755);
  await mkdir(join(root, 'shared'));
  await chmod(join(root, 'shared'), 0o1777);
  await writeFile(join(root, 'src/owned'), 'mine\n');
  await chown(join(root, 'src/owned'), 1000, 1000);
  await symlink('src/main.ts', join(root, 'main-link'));
  await symlink('../main.ts', join(root, 'src/lib/up-link'));
  await symlink('lib', join(root, 'src/lib-link'));
  await lchown(join(root, 'src/lib-link'), 1000, 1000);
  await chmod(root, 0o750);
}

/** Everything a walk measures of a tree (problems included), plus the root's inode. */
export function snapshotTree(path: string): unknown {
  const w = walkTreeSync(path);
  return { digest: manifestDigest(w.manifest), manifest: w.manifest, problems: w.problems, dev: w.root.dev, ino: w.root.ino };
}

/** The store's files (the database files aside) and every table's rows. */
export function snapshotStore(store: Store): unknown {
  const w = walkTreeSync(store.dir);
  const entries = w.manifest.entries.filter((e) => !e.path.startsWith('state.db'));
  const tables = ['roots', 'generations', 'worlds', 'intents'].map((name) => store.db.prepare(`SELECT * FROM ${name} ORDER BY 1`).all());
  return { entries, problems: w.problems, tables };
}
