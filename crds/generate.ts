// Writes the generated artifacts of the API — crds/<plural>.worldline.dev.yaml (and the same bytes in the
// Helm chart's charts/worldline/crds/), docs/schemas/<kind>.schema.json, docs/api.md,
// docs/schemas/isolation-*.schema.json — from the zod definitions. `--check` writes nothing and exits 1
// listing every file whose content differs from what would be generated.
//
//   node dist/crds/generate.js [--check]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isolationJsonSchemas } from '../core/isolation/json-schema.js';
import { GROUP } from './api-group.js';
import { definitions } from './index.js';
import { renderApiReference } from './api-reference.js';
import { renderCrdYaml, renderSpecJsonSchema } from './render.js';

/** Where the Helm chart keeps its copy of the CRDs (relative to the repository root). */
export const CHART_CRD_DIR = 'charts/worldline/crds';

export interface GeneratedFile {
  /** Path relative to the repository root. */
  path: string;
  content: string;
}

/** Everything the generator produces, computed in memory. */
export function generatedFiles(): GeneratedFile[] {
  const files: GeneratedFile[] = [];
  for (const def of definitions) {
    files.push({ path: `crds/${def.plural}.${GROUP}.yaml`, content: renderCrdYaml(def) });
  }
  // The chart installs the same CRDs (Helm applies charts/<chart>/crds/ before the templates).
  for (const def of definitions) {
    files.push({ path: `${CHART_CRD_DIR}/${def.plural}.${GROUP}.yaml`, content: renderCrdYaml(def) });
  }
  for (const def of definitions) {
    files.push({ path: `docs/schemas/${def.kind.toLowerCase()}.schema.json`, content: renderSpecJsonSchema(def) });
  }
  files.push({ path: 'docs/api.md', content: renderApiReference(definitions) });
  for (const [file, schema] of Object.entries(isolationJsonSchemas())) {
    files.push({ path: `docs/schemas/${file}`, content: JSON.stringify(schema, null, 2) + '\n' });
  }
  return files;
}

/** Repository root, derived from this module's location (dist/crds/ or crds/). */
export function repoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const up = resolve(here, '..');
  return here.split(/[\\/]/).includes('dist') ? resolve(up, '..') : up;
}

/** Paths (relative to root) whose on-disk content differs from the generated content. */
export function driftedFiles(root = repoRoot()): string[] {
  const drifted: string[] = [];
  for (const f of generatedFiles()) {
    let current: string | undefined;
    try {
      current = readFileSync(join(root, f.path), 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== f.content) drifted.push(f.path);
  }
  return drifted;
}

export function writeGenerated(root = repoRoot()): string[] {
  const written: string[] = [];
  for (const f of generatedFiles()) {
    const target = join(root, f.path);
    mkdirSync(dirname(target), { recursive: true });
    let current: string | undefined;
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== f.content) {
      writeFileSync(target, f.content);
      written.push(f.path);
    }
  }
  return written;
}

function main(argv: string[]): number {
  const root = repoRoot();
  if (argv.includes('--check')) {
    const drifted = driftedFiles(root);
    if (drifted.length > 0) {
      console.error(`generated files are out of date (run: node dist/crds/generate.js):\n  ${drifted.join('\n  ')}`);
      return 1;
    }
    console.log(`generated files are up to date (${generatedFiles().length} files)`);
    return 0;
  }
  const written = writeGenerated(root);
  console.log(written.length > 0 ? `wrote:\n  ${written.join('\n  ')}` : 'generated files already up to date');
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
