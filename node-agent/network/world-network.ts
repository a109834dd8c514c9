// Wiring of the Allowlist network policy into one world: the proxy environment the workload is started
// with, and the proxy itself, served on 127.0.0.1:3128 inside the world's (empty) network namespace.
//
// Order of use, for a world spawned with newNetwork: true:
//   1. before spawn:  env = withProxyEnv(env)             (the variables must be in the spawn options)
//   2. after spawnSandbox returned, before the go-ahead:
//                     net = await attachAllowlist(handle.pid, allow, onRefusal, { pidfd: handle.pidfd })
//      The workload has not exec'd yet, so nothing of the world can already hold port 3128.
//   3. go-ahead; the world runs; every refusal reaches onRefusal.
//   4. when the world has ended (or is torn down): await net.close().
//
// A World outlives its agent (docs/architecture.md); its listener does not. A new agent opens it again
// (resume-allowlist.ts) with expectNetns, the namespace recorded at start, and an agent leaving on SIGTERM
// closes every listener it serves (closeWorldNetworks) before it exits, so the next one binds the same port.
import { closeSync, readlinkSync } from 'node:fs';
import { Refusal } from '../../core/errors.js';
import { listenInNetns, socketNetnsId } from '../../native/index.js';
import type { Logger } from '../../kube/logger.js';
import { startAllowlistProxy, type AllowedConnection, type AllowlistProxyOptions, type AllowlistProxyStats, type NetworkRefusal } from './allowlist-proxy.js';

/** The proxy's fixed address inside every Allowlist world. */
export const PROXY_HOST = '127.0.0.1';
export const PROXY_PORT = 3128;

/** Every proxy this process serves (attachAllowlist adds, close removes). */
const served = new Set<WorldNetwork>();

const PROXY_VARS = new Set(['http_proxy', 'https_proxy', 'all_proxy', 'no_proxy', 'ftp_proxy']);

/**
 * The environment entries that point HTTP clients at the proxy: HTTP_PROXY, HTTPS_PROXY (both spellings)
 * and empty NO_PROXY/no_proxy, so no destination is exempted from the proxy.
 */
export function proxyEnv(port: number = PROXY_PORT): string[] {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`proxy port must be 1..65535, got ${String(port)}`);
  const url = `http://${PROXY_HOST}:${port}`;
  return [`HTTP_PROXY=${url}`, `HTTPS_PROXY=${url}`, `http_proxy=${url}`, `https_proxy=${url}`, 'NO_PROXY=', 'no_proxy='];
}

/**
 * env without any proxy variable it already had (in any letter case: a world's spec must not be able to
 * point them elsewhere or exempt hosts), followed by proxyEnv(port).
 */
export function withProxyEnv(env: readonly string[], port: number = PROXY_PORT): string[] {
  const kept = env.filter((e) => !PROXY_VARS.has(e.slice(0, Math.max(0, e.indexOf('='))).toLowerCase()));
  return [...kept, ...proxyEnv(port)];
}

export class WorldNetworkError extends Refusal {
  constructor(override readonly code: 'NETWORK_NAMESPACE_SHARED' | 'NETWORK_NAMESPACE_MISMATCH', message: string) {
    super(code, message);
    this.name = 'WorldNetworkError';
  }
}

export interface AttachOptions {
  /** The world's pidfd (SandboxHandle.pidfd): the namespace is then entered through it, immune to pid reuse. */
  pidfd?: number;
  /** Port inside the world (default 3128); must match the port given to proxyEnv. */
  port?: number;
  /**
   * The network namespace ("net:[…]") the world was recorded in at start: the listener is opened only if
   * the process is in exactly that one now (else NETWORK_NAMESPACE_MISMATCH, nothing opened).
   */
  expectNetns?: string;
  logger?: Logger;
  onAllowed?: (a: AllowedConnection) => void;
  proxy?: Pick<AllowlistProxyOptions, 'connectTimeoutMs' | 'idleTimeoutMs' | 'headersTimeoutMs' | 'maxConnections' | 'maxHeaderSize'>;
}

export interface WorldNetwork {
  /** The spawn environment entries (proxyEnv(port)); already in the spawn options if step 1 was followed. */
  env: string[];
  /** The network namespace the listener was verified to live in ("net:[…]"), the world's. */
  netns: string;
  /** The canonical allowlist in force. */
  allow: readonly string[];
  stats(): AllowlistProxyStats;
  /** Stops the proxy and closes every socket of it. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the Allowlist proxy for the world whose pid 1 is `pid`: a listener on 127.0.0.1:port created in
 * that process's network namespace, verified to be there (and not in the agent's), served by
 * startAllowlistProxy. Throws (and leaves nothing open) if the world shares the agent's network namespace,
 * if an allow entry is invalid (AllowlistEntryError), or if the listener cannot be created (errno errors of
 * listenInNetns).
 */
export async function attachAllowlist(
  pid: number,
  allow: readonly string[],
  onRefusal: (r: NetworkRefusal) => void,
  opts: AttachOptions = {},
): Promise<WorldNetwork> {
  const port = opts.port ?? PROXY_PORT;
  const env = proxyEnv(port);
  const worldNet = readlinkSync(`/proc/${pid}/ns/net`);
  const agentNet = readlinkSync('/proc/self/ns/net');
  if (worldNet === agentNet) {
    throw new WorldNetworkError('NETWORK_NAMESPACE_SHARED', `world pid ${pid} shares the agent's network namespace (${agentNet}); Allowlist needs its own`);
  }
  if (opts.expectNetns !== undefined && worldNet !== opts.expectNetns) {
    throw new WorldNetworkError('NETWORK_NAMESPACE_MISMATCH', `world pid ${pid} is in network namespace ${worldNet}, not in ${opts.expectNetns} recorded when the world started`);
  }
  const fd = listenInNetns(opts.pidfd !== undefined ? { pidfd: opts.pidfd } : pid, PROXY_HOST, port);
  let netns: string;
  try {
    netns = socketNetnsId(fd);
    if (netns !== worldNet) {
      throw new WorldNetworkError('NETWORK_NAMESPACE_MISMATCH', `listener landed in ${netns}, not in world pid ${pid}'s ${worldNet}`);
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  // From here the proxy owns fd (it closes it itself if it throws or fails to listen).
  const proxy = startAllowlistProxy({
    listenFd: fd,
    allow,
    onRefusal,
    ...(opts.onAllowed ? { onAllowed: opts.onAllowed } : {}),
    ...(opts.logger ? { logger: opts.logger.child({ component: 'allowlist-proxy', worldPid: pid }) } : {}),
    ...opts.proxy,
  });
  try {
    await proxy.listening;
  } catch (err) {
    await proxy.close();
    throw err;
  }
  const net: WorldNetwork = {
    env,
    netns,
    allow: proxy.allow,
    stats: () => proxy.stats(),
    close: () => {
      served.delete(net);
      return proxy.close();
    },
  };
  served.add(net);
  return net;
}

/**
 * Closes every proxy this process serves, listeners and connections: the agent leaving (SIGTERM) lets the
 * next agent bind 127.0.0.1:3128 in each world again. The worlds keep running, with loopback only until
 * then. Each listening socket is closed before this returns (net.Server.close closes its handle at once);
 * `closed` settles when every connection is gone too.
 */
export function closeWorldNetworks(): { proxies: number; closed: Promise<void> } {
  const all = [...served];
  return { proxies: all.length, closed: Promise.all(all.map((n) => n.close())).then(() => undefined) };
}
