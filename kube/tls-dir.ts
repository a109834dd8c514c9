// TLS material kept as a directory of PEM files, the layout a kubernetes.io/tls Secret mounts with its CA
// beside it: ca.crt (the authority the peer must chain to), tls.crt and tls.key (this side's certificate
// and key). Read once, with a message that names the missing file.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PeerCertificate } from 'node:tls';

export interface TlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function readIn(dir: string, file: string, what: string): Buffer {
  try {
    return readFileSync(join(dir, file));
  } catch (err) {
    throw new Error(`${what}: cannot read ${join(dir, file)}: ${(err as Error).message}`);
  }
}

export function readTlsDir(dir: string, what: string): TlsMaterial {
  return { ca: readIn(dir, 'ca.crt', what), cert: readIn(dir, 'tls.crt', what), key: readIn(dir, 'tls.key', what) };
}

/** A serving certificate and key alone (tls.crt, tls.key), as a kubernetes.io/tls Secret mounts them. */
export function readCertPair(dir: string, what: string): { cert: Buffer; key: Buffer } {
  return { cert: readIn(dir, 'tls.crt', what), key: readIn(dir, 'tls.key', what) };
}

/** The subject common name of a peer certificate (one value; a repeated CN counts as none). */
export function commonName(cert: PeerCertificate | undefined): string | undefined {
  // Node gives a repeated attribute as an array, whatever the declared type says.
  const cn: unknown = cert?.subject?.CN;
  return typeof cn === 'string' ? cn : undefined;
}

/**
 * Names the two ends of the node link: the controller's client certificate and every node-agent's serving
 * certificate carry these common names, both issued by the link's own CA (never the cluster's).
 */
export const LINK_CLIENT_NAME = 'worldline-controller';
export const LINK_SERVER_NAME = 'worldline-node-agent';
