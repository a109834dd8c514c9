// The node-agent's status holds: --launch-status-hold-ms (how long a World's launch holds its status
// writes, worlds/world-reconciler.ts) and --collapse-status-hold-ms (how long a Collapse holds its
// progress statuses, collapses/progress-hold.ts). 0 writes each step as it happens; anything but a whole
// number of milliseconds up to a minute is refused with the usage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COLLAPSE_HOLD_MS, LAUNCH_HOLD_MS, parseAgentConfig } from '../../node-agent/config.js';

const base = ['--node-name', 'n1'];
const FLAGS = [
  { flag: 'launch-status-hold-ms', field: 'launchStatusHoldMs', default: LAUNCH_HOLD_MS },
  { flag: 'collapse-status-hold-ms', field: 'collapseStatusHoldMs', default: COLLAPSE_HOLD_MS },
] as const;

test('each hold defaults to 250 ms and takes 0 up to 60000, independently of the other', () => {
  for (const f of FLAGS) {
    assert.equal(f.default, 250, f.flag);
    assert.equal(parseAgentConfig(base, {})[f.field], 250, f.flag);
    assert.equal(parseAgentConfig([...base, `--${f.flag}`, '0'], {})[f.field], 0, f.flag);
    const long = parseAgentConfig([...base, `--${f.flag}`, '60000'], {});
    assert.equal(long[f.field], 60_000, f.flag);
    const other = FLAGS.find((g) => g !== f)!;
    assert.equal(long[other.field], 250, `--${f.flag} leaves --${other.flag} alone`);
  }
});

test('a hold past a minute, negative or not a number is refused with the usage', () => {
  for (const f of FLAGS) {
    for (const bad of ['60001', '-1', 'soon', '1.5']) {
      assert.throws(() => parseAgentConfig([...base, `--${f.flag}=${bad}`], {}), new RegExp(`${f.flag}[\\s\\S]*usage:`), `${f.flag}=${bad}`);
    }
  }
});
