// The node-agent's --cgroup-root flag (and WORLDLINE_CGROUP_ROOT): where the node's cgroup hierarchies
// are; the chart points it at the node's own hierarchies so Worlds outlive the agent's pod.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAgentConfig } from '../../node-agent/config.js';

const base = ['--node-name', 'n1'];

test('--cgroup-root defaults to /sys/fs/cgroup and takes an absolute directory from the flag or the environment', () => {
  assert.equal(parseAgentConfig(base, {}).cgroupRoot, '/sys/fs/cgroup');
  assert.equal(parseAgentConfig([...base, '--cgroup-root', '/host/sys/fs/cgroup'], {}).cgroupRoot, '/host/sys/fs/cgroup');
  assert.equal(parseAgentConfig(base, { WORLDLINE_CGROUP_ROOT: '/host/cg' }).cgroupRoot, '/host/cg');
  assert.equal(parseAgentConfig([...base, '--cgroup-root', '/a'], { WORLDLINE_CGROUP_ROOT: '/b' }).cgroupRoot, '/a', 'the flag wins');
  assert.equal(parseAgentConfig(base, { WORLDLINE_CGROUP_ROOT: '' }).cgroupRoot, '/sys/fs/cgroup', 'an empty variable is unset');
});

test('a relative --cgroup-root is refused with the usage', () => {
  assert.throws(() => parseAgentConfig([...base, '--cgroup-root', 'sys/fs/cgroup'], {}), /--cgroup-root must be an absolute directory, got "sys\/fs\/cgroup"[\s\S]*usage:/);
});
