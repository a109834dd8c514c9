// Listening sockets created inside another process's network namespace (a world's), while the agent's own
// threads stay in the host namespace: the addon does setns on a short-lived dedicated thread, so only that
// thread ever enters the world's namespace. socketNetnsId tells which namespace a socket belongs to.
import { isIPv4, isIPv6 } from 'node:net';
import { binding } from './binding.js';
import * as v from './validate.js';

/** Whose network namespace: a host pid, or a pidfd (immune to pid reuse; Linux >= 5.8). */
export type NetnsTarget = number | { pidfd: number };

const MAX_PID = 0x3fffffff;

/**
 * A listening TCP socket fd (O_CLOEXEC, O_NONBLOCK, SO_REUSEADDR) bound to host:port inside the network
 * namespace of `target`. host must be an IP address literal (IPv4 expected; an IPv6 literal is bound
 * v6-only). The caller owns the fd: hand it to net.Server.listen({ fd }) or close it.
 * Throws errno-faithful errors: open of /proc/<pid>/ns/net (ENOENT: no such process), setns, socket,
 * bind (EADDRINUSE), listen.
 */
export function listenInNetns(target: NetnsTarget, host: string, port: number, backlog = 511): number {
  let pid = 0;
  let pidfd = -1;
  if (typeof target === 'number') pid = v.integer('pid', target, 1, MAX_PID);
  else pidfd = v.fd('target.pidfd', v.object('target', target)['pidfd']);
  const h = v.nonEmptyString('host', host);
  if (!isIPv4(h) && !isIPv6(h)) throw v.valueError('host', `"${h}" is not an IP address literal`);
  return binding.listenInNetns(pid, pidfd, h, v.integer('port', port, 0, 65535), v.integer('backlog', backlog, 1, 65535));
}

/** The network namespace of a socket fd, as "net:[inode]" (the format of readlink /proc/<pid>/ns/net). */
export function socketNetnsId(fd: number): string {
  return binding.socketNetnsId(v.fd('fd', fd));
}

/** A connected unix socket's peer as of its connect (SO_PEERCRED), in the caller's pid and user namespaces. */
export function peerCredentials(fd: number): { pid: number; uid: number; gid: number } {
  return binding.peerCredentials(v.fd('fd', fd));
}
