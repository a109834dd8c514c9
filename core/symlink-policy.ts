// Which symlink targets may live inside a root.
//
// A target is contained only if the kernel, resolving it from the link's directory, cannot leave the
// root, whatever the other links in the root point at. Lexical normalization is not enough: with
// `d/x -> .` and `d/y -> x/../..`, normalizing `d/y` gives the root itself, but the kernel enters `x`
// (back to `d`), takes `..` to the root and `..` again to the root's parent. A `..` after a name is
// resolved from wherever the name led, and the name may be a link, so any target with a `..` after a
// name is refused. What remains allowed is a run of leading `..` (and `.`) segments, which climb through
// the link's own real parent directories, followed by names only; that run must not climb above the
// root. Every such link stays inside, so by induction a chain of them does too.
import { isCleanRelativePath } from './relative-path.js';

export type SymlinkProblem = 'EXTERNAL_SYMLINK';

/**
 * Null when `target` is a contained target for a link at `linkPath` (a clean path relative to the root),
 * else 'EXTERNAL_SYMLINK'. Throws a TypeError when linkPath itself is not a clean relative path.
 */
export function symlinkTargetProblem(linkPath: string, target: string): null | SymlinkProblem {
  if (!isCleanRelativePath(linkPath)) throw new TypeError(`link path is not a clean relative path: ${JSON.stringify(linkPath)}`);
  if (target.length === 0 || target.includes('\0') || target.startsWith('/')) return 'EXTERNAL_SYMLINK';
  const linkDirDepth = linkPath.split('/').length - 1;
  let climbed = 0;
  let seenName = false;
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (seenName) return 'EXTERNAL_SYMLINK'; // name-then-`..`: resolved through the name, maybe a link
      climbed++;
      if (climbed > linkDirDepth) return 'EXTERNAL_SYMLINK';
      continue;
    }
    seenName = true;
  }
  return null;
}
