// Generated trees for the node-level benchmarks: N small files (a few hundred bytes each) in nested
// directories of 100 files, the same tree committed to a git repository, and the 10 files a capture
// run changes. Deterministic, so two trees generated with the same N are identical.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const FILES_PER_DIR = 100;

/** Relative path of file k: top/mid/fNN.txt, 100 files per leaf directory, at most 100 leaves per top directory. */
export function filePath(k: number): string {
  const top = Math.floor(k / (FILES_PER_DIR * 100));
  const mid = Math.floor(k / FILES_PER_DIR) % 100;
  return `d${top}/d${String(mid).padStart(2, '0')}/f${String(k % FILES_PER_DIR).padStart(2, '0')}.txt`;
}

function content(k: number): string {
  const line = `file ${k}: the quick brown fox jumps over the lazy dog.\n`;
  return line.repeat(4 + (k % 5)); // 200-500 bytes
}

/** Writes `files` files under `dir` (created), every entry owned by `owner`. Synchronous: fast enough for 100k. */
export function generateTree(dir: string, files: number, owner: { uid: number; gid: number }): void {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chownSync(dir, owner.uid, owner.gid);
  let lastDir = '';
  for (let k = 0; k < files; k++) {
    const rel = filePath(k);
    const parent = rel.slice(0, rel.lastIndexOf('/'));
    if (parent !== lastDir) {
      const top = parent.slice(0, parent.indexOf('/'));
      if (!lastDir.startsWith(`${top}/`)) {
        mkdirSync(join(dir, top), { mode: 0o755 });
        chownSync(join(dir, top), owner.uid, owner.gid);
      }
      mkdirSync(join(dir, parent), { mode: 0o755 });
      chownSync(join(dir, parent), owner.uid, owner.gid);
      lastDir = parent;
    }
    const abs = join(dir, rel);
    writeFileSync(abs, content(k), { mode: 0o644 });
    chownSync(abs, owner.uid, owner.gid);
  }
}

/** The files a capture run modifies: 10 spread over the tree (relative paths). */
export function changedFiles(files: number, count = 10): string[] {
  const step = Math.max(1, Math.floor(files / count));
  return Array.from({ length: Math.min(count, files) }, (_, i) => filePath(i * step));
}

/** Runs a command from an argv array (no shell); throws with its stderr when it fails. */
export function runArgv(argv: readonly string[], cwd?: string): void {
  const [cmd, ...args] = argv;
  const r = spawnSync(cmd!, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited with ${r.status ?? r.signal}: ${r.stderr}`);
}

const GIT_IDENTITY = ['-c', 'user.email=bench@worldline.invalid', '-c', 'user.name=worldline bench', '-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', '-c', 'safe.directory=*'];

export function git(repo: string, ...args: string[]): void {
  runArgv(['git', ...GIT_IDENTITY, '-C', repo, ...args]);
}

/** Generates the same tree in `repo` and commits it there (one commit on branch main). */
export function generateGitRepo(repo: string, files: number, owner: { uid: number; gid: number }): void {
  generateTree(repo, files, owner);
  git(repo, 'init', '--quiet', '--initial-branch=main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '--quiet', '--no-verify', '-m', `${files} files`);
}
