// Mount points at or below a directory, read from /proc/self/mountinfo. A bind mount from the same
// filesystem keeps st_dev, so comparing devices alone misses it; the mount table does not.
import { readFileSync } from 'node:fs';

/** Undo mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Parse mountinfo text into its mount point paths (field 5). */
export function parseMountPoints(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4];
    if (field !== undefined) out.push(unescapeMountPath(field));
  }
  return out;
}

/** Real paths of mount points equal to `realRoot` or inside it. */
export function mountPointsUnder(realRoot: string): Set<string> {
  const text = readFileSync('/proc/self/mountinfo', 'utf8');
  const prefix = realRoot.endsWith('/') ? realRoot : `${realRoot}/`;
  return new Set(parseMountPoints(text).filter((p) => p === realRoot || p.startsWith(prefix)));
}
