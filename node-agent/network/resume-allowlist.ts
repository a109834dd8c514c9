// Re-opens an Allowlist World's proxy for a node-agent that did not start the World (it re-attached to
// the World's supervisor after a restart). The listener died with the agent that served it; the World
// kept its network namespace, with loopback only. What the agent recorded at start names the namespace
// and the process to reach it through: the World's pid 1 (pid and kernel start time, so a recycled pid is
// never taken for it) and the namespace id ("net:[…]"). The listener is opened only in that namespace,
// proven twice (the process is in it before, the socket is in it after); anything else is refused by name
// and the World runs on without a proxy (it fails closed: loopback only, never an open network).
import { closeSync } from 'node:fs';
import { Refusal } from '../../core/errors.js';
import type { Logger } from '../../kube/logger.js';
import { openRecordedProcess } from '../sandbox/supervisor-record.js';
import type { NetworkRefusal } from './allowlist-proxy.js';
import { attachAllowlist, WorldNetworkError, type WorldNetwork } from './world-network.js';

/** An Allowlist World's network as the agent that started it recorded it (WorldSupervisor.network). */
export interface RecordedNetwork {
  /** The World's spec.network.allow at start. */
  allow: string[];
  /** The World's network namespace, "net:[inode]" (the sandbox's observation frame, where the proxy was verified). */
  netns: string;
  /** The World's pid 1 on the host, and its /proc/<pid>/stat field 22. */
  pid: number;
  startTime: string;
}

const NETNS_ID = /^net:\[\d+\]$/;

/** The outcome: the proxy is served again, or the World's pid 1 is gone (the World is ending: nothing to serve). */
export type ReopenedNetwork = { state: 'served'; network: WorldNetwork } | { state: 'ended' };

/**
 * Opens the proxy again at 127.0.0.1:3128 in the recorded namespace. Throws WorldNetworkError
 * NETWORK_NAMESPACE_MISMATCH (nothing left open) when the record is missing or malformed, when the World's
 * pid 1 is in another namespace than the recorded one, or when the listener cannot be created there (a
 * process of the World holding the port, an errno); its message says which.
 */
export async function reopenAllowlist(rec: RecordedNetwork | undefined, onRefusal: (r: NetworkRefusal) => void, logger?: Logger): Promise<ReopenedNetwork> {
  if (!rec) throw new WorldNetworkError('NETWORK_NAMESPACE_MISMATCH', 'the world\'s network namespace was not recorded when it started, so it cannot be verified; the proxy is not re-opened');
  if (!NETNS_ID.test(rec.netns) || !Number.isInteger(rec.pid) || rec.pid < 1 || !Array.isArray(rec.allow)) {
    throw new WorldNetworkError('NETWORK_NAMESPACE_MISMATCH', `the recorded network of the world is malformed (namespace "${String(rec.netns)}", pid ${String(rec.pid)}); the proxy is not re-opened`);
  }
  const pidfd = openRecordedProcess(rec);
  if (pidfd === undefined) return { state: 'ended' };
  try {
    const network = await attachAllowlist(rec.pid, rec.allow, onRefusal, { pidfd, expectNetns: rec.netns, ...(logger ? { logger } : {}) });
    return { state: 'served', network };
  } catch (err) {
    if (err instanceof Refusal) throw err;
    // The process ended between the checks: the World is over, not refused.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') return { state: 'ended' };
    throw new WorldNetworkError('NETWORK_NAMESPACE_MISMATCH', `the proxy's listener could not be re-opened at 127.0.0.1:3128 in ${rec.netns}: ${(err as Error).message}`);
  } finally {
    closeSync(pidfd);
  }
}
