// The folders' arrows point one way: core/ stands alone (the error model in core/errors.ts imports
// nothing at all), and kube/ never reaches up into the controller, the node-agent or the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { tsFiles } from '../support/ts-files.js';

const root = resolve(import.meta.dirname, '..', '..', '..');

/** Every module specifier a file imports or re-exports, resolved to a path relative to the repository. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\b[^;]*?from '([^']+)'/gms)].map((m) => {
    const spec = m[1]!;
    return spec.startsWith('.') ? relative(root, resolve(file, '..', spec)) : spec;
  });
}

function crossings(folder: string, forbidden: RegExp): string[] {
  const files = tsFiles(join(root, folder));
  assert.ok(files.length > 0, `no sources in ${folder}`);
  return files.flatMap((f) => imports(f).filter((i) => forbidden.test(i)).map((i) => `${relative(root, f)} -> ${i}`));
}

test('core/ imports nothing from kube/, native/, the controller, the node-agent or the CLI', () => {
  assert.deepEqual(crossings('core', /^(kube|native|controller|node-agent|cli)\//), []);
});

test('core/errors.ts imports nothing', () => {
  assert.deepEqual(imports(join(root, 'core', 'errors.ts')), []);
  assert.ok(imports(join(root, 'kube', 'reconcile.ts')).includes('core/errors.js'), 'the scan sees relative imports');
});

test('kube/ imports nothing from the controller, the node-agent or the CLI', () => {
  assert.deepEqual(crossings('kube', /^(controller|node-agent|cli)\//), []);
});

test('the controller and the node-agent never import each other', () => {
  assert.deepEqual(crossings('controller', /^node-agent\//), []);
  assert.deepEqual(crossings('node-agent', /^controller\//), []);
});

test('inside the node-agent, the store stands on core/, native/, kube/ and crds/ only', () => {
  assert.deepEqual(crossings('node-agent/store', /^(node-agent\/(?!store\/)|controller\/|cli\/)/), []);
});

test('inside the node-agent, the shared machinery never imports a kind', () => {
  const kinds = /^node-agent\/(roots|worlds|checks|collapses)\//;
  for (const shared of ['sandbox', 'isolation', 'evidence', 'network', 'admission', 'receipts']) {
    assert.deepEqual(crossings(join('node-agent', shared), kinds), [], shared);
  }
});
