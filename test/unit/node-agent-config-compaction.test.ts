// The node-agent's --compact-at-depth flag (and WORLDLINE_COMPACT_AT_DEPTH): the stack depth at which a
// Root's PRIME is compacted in the background (node-agent/collapses/background-compaction.ts), or 0 for never.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAgentConfig } from '../../node-agent/config.js';
import { COMPACT_AT_DEPTH } from '../../node-agent/store/generation-stack.js';

const base = ['--node-name', 'n1'];

test('--compact-at-depth defaults to COMPACT_AT_DEPTH and takes 0 or 2..32 from the flag or the environment', () => {
  assert.equal(parseAgentConfig(base, {}).compactAtDepth, COMPACT_AT_DEPTH);
  assert.equal(COMPACT_AT_DEPTH, 16);
  assert.equal(parseAgentConfig([...base, '--compact-at-depth', '2'], {}).compactAtDepth, 2);
  assert.equal(parseAgentConfig([...base, '--compact-at-depth', '0'], {}).compactAtDepth, 0);
  assert.equal(parseAgentConfig(base, { WORLDLINE_COMPACT_AT_DEPTH: '32' }).compactAtDepth, 32);
  assert.equal(parseAgentConfig([...base, '--compact-at-depth', '8'], { WORLDLINE_COMPACT_AT_DEPTH: '4' }).compactAtDepth, 8, 'the flag wins');
  assert.equal(parseAgentConfig(base, { WORLDLINE_COMPACT_AT_DEPTH: '' }).compactAtDepth, COMPACT_AT_DEPTH, 'an empty variable is unset');
});

test('a depth of 1, past 32, or not an integer is refused with the usage', () => {
  assert.throws(() => parseAgentConfig([...base, '--compact-at-depth', '1'], {}), /--compact-at-depth must be 0 \(off\) or 2 to 32[\s\S]*usage:/);
  assert.throws(() => parseAgentConfig([...base, '--compact-at-depth', '33'], {}), /--compact-at-depth must be an integer in \[0, 32\], got "33"[\s\S]*usage:/);
  assert.throws(() => parseAgentConfig([...base, '--compact-at-depth', 'deep'], {}), /--compact-at-depth must be an integer/);
});
