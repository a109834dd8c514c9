// The TypeScript source files below a directory, recursively (for tests that read the code itself:
// layering, documented codes, codes produced by tests).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? tsFiles(p) : name.endsWith('.ts') ? [p] : [];
  });
}
