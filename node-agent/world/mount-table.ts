// Reads this process's mount table, to unmount a world's mounts deepest first and to refuse to
// delete a directory anything is still mounted under.
import { readFileSync } from 'node:fs';

/** Decodes the octal escapes mountinfo uses for space, tab, newline and backslash. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function mountPoints(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ');
    if (f.length > 4 && f[4]) out.push(unescape(f[4]));
  }
  return out;
}

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return mountPoints()
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}
