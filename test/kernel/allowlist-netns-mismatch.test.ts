// The Allowlist proxy is attached to a world only in the network namespace recorded for it: a process
// found in another namespace (what a reused pid would be) is refused with NETWORK_NAMESPACE_MISMATCH and
// nothing is opened in it; in the recorded one the listener is created there. Real processes, each in its
// own network namespace (unshare -n), as root.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { attachAllowlist, PROXY_PORT, WorldNetworkError } from '../../node-agent/network/world-network.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the network namespace mismatch test (it creates network namespaces)');

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

const LISTEN_3128 = `0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, '0')}`;

/** A process in a network namespace of its own (only loopback, down); resolves once it is in it. */
async function inOwnNetns(): Promise<{ pid: number; netns: string }> {
  const child = spawn('unshare', ['-n', 'sleep', '600'], { stdio: 'ignore' });
  children.push(child);
  const pid = child.pid;
  if (pid === undefined) throw new Error('unshare did not start');
  const agentNet = readlinkSync('/proc/self/ns/net');
  for (let i = 0; i < 200; i++) {
    const netns = readlinkSync(`/proc/${pid}/ns/net`);
    if (netns !== agentNet && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep') return { pid, netns };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`process ${pid} never entered a network namespace of its own`);
}

/** Whether something listens on 127.0.0.1:3128 in `pid`'s network namespace. */
function proxyListening(pid: number): boolean {
  return readFileSync(`/proc/${pid}/net/tcp`, 'utf8').trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/)).some((f) => f[1] === LISTEN_3128 && f[3] === '0A');
}

test('a world process found in another network namespace than the one recorded is refused with NETWORK_NAMESPACE_MISMATCH; nothing listens there', async () => {
  const world = await inOwnNetns();
  const other = await inOwnNetns();
  assert.notEqual(world.netns, other.netns);

  await assert.rejects(
    attachAllowlist(world.pid, ['127.0.0.1:1'], () => undefined, { expectNetns: other.netns }),
    (e: unknown) => e instanceof WorldNetworkError && e.code === 'NETWORK_NAMESPACE_MISMATCH' && e.message.includes(world.netns) && e.message.includes(other.netns),
  );
  assert.equal(proxyListening(world.pid), false, 'no listener was opened in the process\'s namespace');

  // The namespace recorded for it: attached, the listener lives there and nowhere else.
  const net = await attachAllowlist(world.pid, ['127.0.0.1:1'], () => undefined, { expectNetns: world.netns });
  try {
    assert.equal(net.netns, world.netns);
    assert.equal(proxyListening(world.pid), true, 'the proxy listens in the recorded namespace');
    assert.equal(proxyListening(other.pid), false);
  } finally {
    await net.close();
  }
});
