// What every handler of one Allowlist proxy shares: its allowlist and limits, its logger, its counters,
// and the few actions that touch them (refuse, allow, track an upstream, end a connection).
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../kube/logger.js';
import type { Allowlist } from './allowlist.js';
import { LINGER_MS, reportHost, type AllowedConnection, type NetworkRefusal, type RefusalReason } from './proxy-protocol.js';

export interface ProxyLimits {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  headersTimeoutMs: number;
  maxConnections: number;
  maxHeaderSize: number;
}

export interface ProxyCounts {
  accepted: number;
  allowed: number;
  refused: number;
  upstreamFailures: number;
  bytesOut: number;
  bytesIn: number;
  refusedByReason: Record<RefusalReason, number>;
}

export interface ProxyContext {
  readonly list: Allowlist;
  readonly limits: ProxyLimits;
  readonly log: Logger;
  readonly counts: ProxyCounts;
  readonly clients: Set<Socket>;
  readonly upstreams: Set<Socket>;
  readonly refuse: (host: string, port: number, reason: RefusalReason, detail: string) => void;
  readonly allowed: (host: string, port: number, kind: AllowedConnection['kind']) => void;
  readonly trackUpstream: (s: Socket) => void;
  /** Writes a complete response, half-closes, and destroys the socket shortly after in any case. */
  readonly endWith: (socket: Duplex, response: string) => void;
}

export function createProxyContext(
  list: Allowlist,
  limits: ProxyLimits,
  log: Logger,
  onRefusal: (r: NetworkRefusal) => void,
  onAllowed: ((a: AllowedConnection) => void) | undefined,
): ProxyContext {
  const counts: ProxyCounts = {
    accepted: 0, allowed: 0, refused: 0, upstreamFailures: 0, bytesOut: 0, bytesIn: 0,
    refusedByReason: { NOT_ALLOWED: 0, MALFORMED: 0, UNSUPPORTED: 0, CONNECTION_LIMIT: 0 },
  };
  const upstreams = new Set<Socket>();
  return {
    list,
    limits,
    log,
    counts,
    clients: new Set<Socket>(),
    upstreams,
    refuse: (host, port, reason, detail) => {
      counts.refused++;
      counts.refusedByReason[reason]++;
      const r: NetworkRefusal = { host: reportHost(host), port, time: new Date().toISOString(), reason };
      log.info('network refusal', { ...r, detail });
      try {
        onRefusal(r);
      } catch (err) {
        log.error('onRefusal threw', { err });
      }
    },
    allowed: (host, port, kind) => {
      counts.allowed++;
      try {
        onAllowed?.({ host, port, time: new Date().toISOString(), kind });
      } catch (err) {
        log.error('onAllowed threw', { err });
      }
    },
    trackUpstream: (s) => {
      upstreams.add(s);
      s.on('close', () => {
        upstreams.delete(s);
        counts.bytesIn += s.bytesRead;
        counts.bytesOut += s.bytesWritten;
      });
    },
    endWith: (socket, response) => {
      if (socket.destroyed) return;
      if (socket.writable) socket.end(response);
      socket.resume(); // drain whatever the client still sends, so close does not turn into a reset
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    },
  };
}
