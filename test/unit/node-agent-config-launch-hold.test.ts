// The node-agent's --launch-status-hold-ms flag: how long a World's launch holds its status writes
// (worlds/world-reconciler.ts). 0 writes each step as it happens; anything but a whole number of
// milliseconds up to a minute is refused with the usage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAUNCH_HOLD_MS, parseAgentConfig } from '../../node-agent/config.js';

const base = ['--node-name', 'n1'];

test('--launch-status-hold-ms defaults to LAUNCH_HOLD_MS and takes 0 up to 60000', () => {
  assert.equal(LAUNCH_HOLD_MS, 250);
  assert.equal(parseAgentConfig(base, {}).launchStatusHoldMs, 250);
  assert.equal(parseAgentConfig([...base, '--launch-status-hold-ms', '0'], {}).launchStatusHoldMs, 0);
  assert.equal(parseAgentConfig([...base, '--launch-status-hold-ms', '60000'], {}).launchStatusHoldMs, 60_000);
});

test('a hold past a minute, negative or not a number is refused with the usage', () => {
  for (const bad of ['60001', '-1', 'soon', '1.5']) {
    assert.throws(() => parseAgentConfig([...base, `--launch-status-hold-ms=${bad}`], {}), /launch-status-hold-ms[\s\S]*usage:/, bad);
  }
});
