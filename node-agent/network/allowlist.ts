// The Allowlist network policy's destination list: parsing, normalisation and matching of `host:port`
// entries. Pure; no I/O, no DNS.
//
// Matching is exact. An entry names one host and one port; there are no wildcards, no suffix matches
// ("*.example.com" or ".example.com" are refused as malformed), no CIDR ranges and no port ranges. The host
// is compared in one canonical spelling:
//   - DNS names in lowercase, without a trailing dot (a trailing dot is refused rather than stripped, so a
//     request cannot name a different resolver path than the entry);
//   - IPv4 only as a plain dotted quad without leading zeros (127.1, 0x7f.0.0.1 or 2130706433 are refused:
//     resolvers disagree on what they mean, so an entry or request spelled that way is never matched);
//   - IPv6 in brackets, compared in its compressed lowercase form ([0:0::1] equals [::1]).
// Nothing is resolved here: an allowed name is connected to by name, from the agent's own network, and
// matching a name says nothing about the addresses it resolves to.
import { formatHostPort, type HostPort } from '../../kube/host-port.js';
import { isIPv4, isIPv6 } from 'node:net';
import { Refusal } from '../../core/errors.js';

// A HostPort's host here is canonical: lowercase DNS name, dotted-quad IPv4, or IPv6 without brackets.
export type { HostPort };
export { formatHostPort };

export type HostKind = 'dns' | 'ipv4' | 'ipv6';

export class AllowlistEntryError extends Refusal {
  declare readonly code: 'ALLOWLIST_ENTRY_INVALID';
  constructor(readonly entry: string, reason: string) {
    super('ALLOWLIST_ENTRY_INVALID', `allowlist entry ${JSON.stringify(entry.length > 80 ? entry.slice(0, 80) + '…' : entry)}: ${reason}`);
    this.name = 'AllowlistEntryError';
  }
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DOTTED_QUAD = /^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/;
const MAX_ENTRY = 300;

/** The canonical form of an IPv6 literal (compressed, lowercase), or null if it is not one. */
function canonicalIPv6(s: string): string | null {
  if (!isIPv6(s) || s.includes('%')) return null;
  try {
    const h = new URL(`http://[${s}]/`).hostname;
    return h.slice(1, -1);
  } catch {
    return null;
  }
}

/** Classifies and canonicalises a bare host (IPv6 without brackets); throws on anything else. */
export function normalizeHost(raw: string): { host: string; kind: HostKind } {
  if (raw.length === 0) throw new AllowlistEntryError(raw, 'empty host');
  if (raw.includes(':')) {
    const v6 = canonicalIPv6(raw);
    if (v6 === null) throw new AllowlistEntryError(raw, 'not an IPv6 address');
    return { host: v6, kind: 'ipv6' };
  }
  const host = raw.toLowerCase();
  if (isIPv4(host)) {
    if (!DOTTED_QUAD.test(host)) throw new AllowlistEntryError(raw, 'IPv4 addresses must be dotted quads without leading zeros');
    return { host, kind: 'ipv4' };
  }
  if (host.length > 253) throw new AllowlistEntryError(raw, 'DNS name longer than 253 characters');
  const labels = host.split('.');
  if (!labels.every((l) => LABEL.test(l))) {
    throw new AllowlistEntryError(raw, 'not a DNS name (letters, digits and inner hyphens per label; no wildcards, no trailing dot)');
  }
  // A name whose last label is all digits reads as an IPv4 shorthand to some resolvers (127.1, 10.1.2).
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) throw new AllowlistEntryError(raw, 'a numeric last label is not a DNS name and not a dotted-quad IPv4 address');
  return { host, kind: 'dns' };
}

function parsePort(raw: string, entry: string): number {
  if (!/^[0-9]{1,5}$/.test(raw)) throw new AllowlistEntryError(entry, 'port must be decimal digits');
  const port = Number(raw);
  if (port < 1 || port > 65535) throw new AllowlistEntryError(entry, 'port must be 1..65535');
  return port;
}

/**
 * Parses one `host:port` (a DNS name or IPv4 address, or `[IPv6]`, then a port 1..65535) into its canonical
 * HostPort. Throws AllowlistEntryError for anything else, including wildcards and a missing port.
 */
export function parseHostPort(entry: string): HostPort {
  if (entry.length > MAX_ENTRY) throw new AllowlistEntryError(entry, `longer than ${MAX_ENTRY} characters`);
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0 || entry[close + 1] !== ':') throw new AllowlistEntryError(entry, 'expected [IPv6]:port');
    const inner = entry.slice(1, close);
    const host = canonicalIPv6(inner);
    if (host === null) throw new AllowlistEntryError(entry, 'not an IPv6 address inside the brackets');
    return { host, port: parsePort(entry.slice(close + 2), entry) };
  }
  const colon = entry.lastIndexOf(':');
  if (colon < 0) throw new AllowlistEntryError(entry, 'missing :port');
  const rawHost = entry.slice(0, colon);
  if (rawHost.includes(':')) throw new AllowlistEntryError(entry, 'an IPv6 address must be written in brackets');
  const { host } = normalizeHost(rawHost);
  return { host, port: parsePort(entry.slice(colon + 1), entry) };
}


/** A parsed, deduplicated allowlist. */
export interface Allowlist {
  /** Canonical entries, in first-seen order. */
  readonly entries: readonly string[];
  readonly keys: ReadonlySet<string>;
}

/** Parses every entry (throws AllowlistEntryError on the first bad one) and deduplicates canonical forms. */
export function parseAllowlist(entries: readonly string[]): Allowlist {
  const raw: unknown = entries;
  if (!Array.isArray(raw)) throw new AllowlistEntryError('(not an array)', 'allowlist must be an array of host:port strings');
  const keys = new Set<string>();
  const ordered: string[] = [];
  for (const e of raw as unknown[]) {
    if (typeof e !== 'string') throw new AllowlistEntryError(typeof e, 'entries must be strings');
    const key = formatHostPort(parseHostPort(e));
    if (!keys.has(key)) {
      keys.add(key);
      ordered.push(key);
    }
  }
  return { entries: ordered, keys };
}

/**
 * Whether host:port is exactly one of the allowlist's entries, after canonicalising host the same way.
 * A host that does not canonicalise (malformed, wildcard, IPv4 shorthand) is never allowed.
 */
export function isAllowed(allow: Allowlist | readonly string[], host: string, port: number): boolean {
  const list = (allow as Allowlist).keys instanceof Set ? (allow as Allowlist) : parseAllowlist(allow as readonly string[]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return false;
  let canonical: string;
  try {
    canonical = normalizeHost(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host).host;
  } catch {
    return false;
  }
  return list.keys.has(formatHostPort({ host: canonical, port }));
}
