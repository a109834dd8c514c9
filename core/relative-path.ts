// Paths inside a root, as manifests and policies name them: relative, '/'-separated, no leading or
// trailing '/', no empty, '.' or '..' segment, no NUL. The root itself has no path of its own.

export function isCleanRelativePath(p: string): boolean {
  if (p.length === 0 || p.includes('\0')) return false;
  for (const segment of p.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') return false;
  }
  return true;
}

/** The parent of a clean relative path, or '' for a top-level entry. */
export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
}

/**
 * Compare two strings in the order of their UTF-8 bytes (which is Unicode code point order). JavaScript's
 * `<` compares UTF-16 code units, which disagrees for characters above U+FFFF versus U+E000–U+FFFF.
 */
export function compareBytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (isSurrogate(x) !== isSurrogate(y)) return isSurrogate(x) ? 1 : -1; // surrogates encode > U+FFFF
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

function isSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdfff;
}
