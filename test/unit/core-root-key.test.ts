// Root keys and generation ids (core/root-key.ts): a generation id names its root key and number exactly,
// so an owner's view, named by its base generation's id, says which Root it is of without a record.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { generationIdFor, parseGenerationId, rootKeyFor } from '../../core/root-key.js';

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
const rootName = fc.array(label, { minLength: 1, maxLength: 12 }).map((parts) => parts.join('.')).filter((n) => n.length <= 253);
const digest = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`);

test('parseGenerationId gives back the root key and number generationIdFor was given, long names included', () => {
  fc.assert(
    fc.property(rootName, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), digest, (name, n, d) => {
      const rootKey = rootKeyFor(name);
      assert.deepEqual(parseGenerationId(generationIdFor(rootKey, n, d)), { rootKey, generation: n });
    }),
    { numRuns: 2000 },
  );
});

test('a name generationIdFor never makes parses to nothing', () => {
  for (const id of ['', 'repo', 'repo_g0_0123456789abcdef', 'repo_g01_0123456789abcdef', 'repo_g1_0123456789abcde', 'repo_g1_0123456789ABCDEF', 'a_b_g1_0123456789abcdef', 'repo_g1_0123456789abcdef.tmp', '_g1_0123456789abcdef', 'repo_g99999999999999999_0123456789abcdef']) {
    assert.equal(parseGenerationId(id), undefined, id);
  }
});
