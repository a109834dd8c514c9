// A non-loopback address of the test's own on this host, so network probes never depend on what
// interfaces the machine happens to have: a veth pair whose host end carries 203.0.113.<n>/30
// (TEST-NET-3, documentation space) and whose peer end sits in a network namespace the test creates
// itself. Nothing outside this machine is ever addressed. Needs root and iproute2 (`ip`); when either is
// missing, creating it throws saying so — a probe is never replaced by a literal.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';

export interface TestHostAddress {
  /** The address on the host's side (in the host network namespace). */
  host: string;
  /** The peer's address, inside the test's own namespace. */
  peer: string;
  /** The host-side interface name. */
  link: string;
  remove(): void;
}

function ip(args: string[]): void {
  try {
    execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const e = err as Error & { code?: string; stderr?: Buffer };
    if (e.code === 'ENOENT') throw new Error('the test host address needs iproute2 (`ip`): apt-get install iproute2');
    throw new Error(`ip ${args.join(' ')} failed: ${e.stderr?.toString().trim() ?? e.message}`);
  }
}

export function createTestHostAddress(): TestHostAddress {
  if (process.getuid?.() !== 0) throw new Error('the test host address needs root (a veth pair and a network namespace)');
  const tag = randomBytes(3).toString('hex');
  const link = `wlt-${tag}`;
  const peerLink = `wlp-${tag}`;
  const ns = `wlt-${tag}`;
  const base = 4 * randomInt(0, 64);
  const host = `203.0.113.${base + 1}`;
  const peer = `203.0.113.${base + 2}`;
  const remove = (): void => {
    for (const args of [['link', 'del', link], ['netns', 'del', ns]]) {
      try {
        execFileSync('ip', args, { stdio: 'ignore' });
      } catch {
        // already gone
      }
    }
  };
  try {
    ip(['netns', 'add', ns]);
    ip(['link', 'add', link, 'type', 'veth', 'peer', 'name', peerLink]);
    ip(['link', 'set', peerLink, 'netns', ns]);
    ip(['addr', 'add', `${host}/30`, 'dev', link]);
    ip(['link', 'set', link, 'up']);
    ip(['-n', ns, 'addr', 'add', `${peer}/30`, 'dev', peerLink]);
    ip(['-n', ns, 'link', 'set', peerLink, 'up']);
  } catch (err) {
    remove();
    throw err;
  }
  return { host, peer, link, remove };
}
