// HOST:PORT as flags, Lease annotations and allowlists write it: IPv6 hosts in brackets.

export interface HostPort {
  /** The host without brackets (a DNS name, IPv4 address, or IPv6 address). */
  host: string;
  port: number;
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatHostPort(hp: HostPort): string {
  return hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
}

/**
 * Splits `HOST:PORT` (`[IPv6]:PORT` for IPv6: a bare IPv6 address is a host with no port) into a non-empty host without brackets and the port's
 * decimal digits, or undefined; the caller judges the port's range (a bind may take 0, a peer may not).
 */
export function splitHostPort(raw: string): { host: string; port: string } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^[\]:]+)):(\d+)$/.exec(raw);
  const host = m?.[1] ?? m?.[2];
  return m && host ? { host, port: m[3] ?? '' } : undefined;
}
