// Every code a status can carry is listed in docs/codes.md: the outcome list of the API, the reasons
// of the two collapse decisions, every UPPER_SNAKE literal the controller and node-agent write, and the
// code of every refusal class of the error model (core/errors.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { OUTCOMES } from '../../crds/outcomes.js';
import { REASONS } from '../../core/collapse/decide.js';
import { ISOLATION_REASONS } from '../../core/isolation/reasons.js';
import { StoreErrorCodes } from '../../node-agent/store/store-errors.js';
import { Reasons } from '../../controller/reasons.js';
import { tsFiles } from '../support/ts-files.js';

const root = resolve(import.meta.dirname, '..', '..', '..');
const doc = readFileSync(join(root, 'docs', 'codes.md'), 'utf8');

/** Codes listed generically in the doc (identity pairs of the collapse decision). */
function documented(code: string): boolean {
  if (doc.includes(`\`${code}\``)) return true;
  const pair = /^IDENTITY_(ABSENT|MISMATCH)_([A-Z_]+)$/.exec(code);
  return pair !== null && doc.includes('IDENTITY_ABSENT_<PAIR>') && doc.includes(pair[2]!);
}

test('every outcome, collapse decision reason and store code is documented', () => {
  const missing = [...OUTCOMES, ...REASONS, ...ISOLATION_REASONS, ...Object.values(StoreErrorCodes), ...Object.values(Reasons).map((r) => r.code)].filter((c) => !documented(c));
  assert.deepEqual(missing, []);
});

test('every receipt ledger, signing key and receipts CLI code is documented', () => {
  // The union types are the source: ReceiptLedgerCode (node-agent/receipts/errors.ts), LineProblem (the
  // verify command's, cli/receipts-lines.ts) and StatusProblem (cli/). Read from the source text, since a
  // type has no runtime value.
  const sources = ['node-agent/receipts/errors.ts', 'cli/receipts-lines.ts', 'cli/receipts-verify-status.ts'];
  const codes = new Set<string>();
  for (const f of sources) {
    const text = readFileSync(join(root, f), 'utf8');
    for (const union of text.matchAll(/export type (?:ReceiptLedgerCode|LineProblem|StatusProblem) =([^;]+);/g)) {
      for (const m of union[1]!.matchAll(/'([A-Z][A-Z0-9_]+)'/g)) codes.add(m[1]!);
    }
  }
  assert.ok(codes.size >= 25, `found only ${codes.size} codes in ${sources.join(', ')}`);
  assert.deepEqual([...codes].filter((c) => !documented(c)).sort(), []);
});

test('every status code the controller and the node-agent write is documented', () => {
  // Internal protocol codes of the proxy, the receipt ledger and key handling never reach a status.
  const scanned = [join(root, 'controller'), ...['roots', 'worlds', 'checks', 'collapses', 'sandbox', 'admission', 'isolation', 'store'].map((p) => join(root, 'node-agent', p))];
  const files = scanned.flatMap((p) => (statSync(p).isDirectory() ? tsFiles(p) : [p]));
  const found = new Set<string>();
  for (const f of files) {
    for (const m of readFileSync(f, 'utf8').matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) found.add(m[1]!);
  }
  const notStatus = /^(WORLDLINE_|O_|MS_|MNT_|AT_|ERR_|SQLITE_)/;
  const missing = [...found].filter((c) => !notStatus.test(c) && !documented(c)).sort();
  assert.ok(found.size > 20, `scan found only ${found.size} codes`);
  assert.deepEqual(missing, []);
});

test('every code of a refusal class (core/errors.ts) is documented', () => {
  // A Refusal subclass names its code as a literal in its body (a literal type, or the code it passes up).
  const files = ['core', 'kube', 'controller', 'node-agent', 'cli'].flatMap((d) => tsFiles(join(root, d)));
  const codes = new Set<string>();
  let classes = 0;
  for (const f of files) {
    for (const cls of readFileSync(f, 'utf8').matchAll(/class \w+ extends (?:Refusal|TransientFailure) \{([\s\S]*?)\n\}/g)) {
      classes++;
      for (const m of cls[1]!.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) codes.add(m[1]!);
    }
  }
  assert.ok(classes >= 12, `found only ${classes} refusal classes`);
  assert.ok(codes.size >= 15, `found only ${codes.size} codes`);
  assert.deepEqual([...codes].filter((c) => !documented(c)).sort(), []);
});
