// The names of the Checks the controller makes for a rebased candidate (controller/rebase-checks.ts):
// one per Collapse, check and candidate, always a valid object name of at most 253 characters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rebaseCheckName } from '../../controller/rebase-checks.js';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

test('the name joins Collapse, check and 10 hex of the candidate; another candidate gets another name', () => {
  const c1 = `sha256:${'ab'.repeat(32)}`;
  const c2 = `sha256:${'cd'.repeat(32)}`;
  assert.equal(rebaseCheckName('fix-col', 'verify', c1), 'fix-col-verify-ababababab');
  assert.notEqual(rebaseCheckName('fix-col', 'verify', c1), rebaseCheckName('fix-col', 'verify', c2));
  assert.notEqual(rebaseCheckName('fix-col', 'verify', c1), rebaseCheckName('fix-col', 'lint', c1));
});

test('a long Collapse name is cut so the whole stays a valid name of at most 253 characters', () => {
  const long = `${'a'.repeat(200)}.${'b'.repeat(40)}-x`;
  const n = rebaseCheckName(long, 'a-check-name-of-sixty-three-characters-at-most-xxxxxxxxxxxxxxx', `sha256:${'0'.repeat(64)}`);
  assert.ok(n.length <= 253, `${n.length}`);
  assert.match(n, SUBDOMAIN);
  assert.ok(n.endsWith('-a-check-name-of-sixty-three-characters-at-most-xxxxxxxxxxxxxxx-0000000000'));
});
