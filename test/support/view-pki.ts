// The TLS material of worldline's view path, made with openssl the way the chart makes it with helm's
// genCA/genSignedCert: one internal CA that signs the controller's serving certificate for the
// aggregated API (the APIService's caBundle), the controller's node-link client certificate and the
// node-agents' node-link serving certificate. Each directory holds what one component mounts.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LINK_CLIENT_NAME, LINK_SERVER_NAME } from '../../kube/tls-dir.js';

export interface ViewPki {
  /** PEM of the internal CA (the APIService caBundle). */
  caPem: string;
  /** tls.crt, tls.key: the controller's serving certificate for `serviceHost`. */
  servingDir: string;
  /** ca.crt, tls.crt, tls.key: the controller's end of the node link. */
  controllerLinkDir: string;
  /** ca.crt, tls.crt, tls.key: a node-agent's end of the node link. */
  agentLinkDir: string;
}

const CNF = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = worldline
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
[serving]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:\${ENV::WL_SAN}
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
[agent]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
`;

const KEY_ARGS = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** One more client certificate (clientAuth) of the CA made in `dir`, with common name `cn`: an impostor for tests. */
export function signClientCert(dir: string, cn: string): { cert: Buffer; key: Buffer } {
  const out = mkdtempSync(join(dir, 'client-'));
  execFileSync('openssl', ['req', '-x509', '-new', '-config', join(dir, 'openssl.cnf'), '-extensions', 'client', ...KEY_ARGS, '-CA', join(dir, 'ca.crt'), '-CAkey', join(dir, 'ca.key'),
    '-keyout', join(out, 'tls.key'), '-out', join(out, 'tls.crt'), '-days', '1', '-subj', `/CN=${cn}`], { env: { ...process.env, WL_SAN: 'unused' }, stdio: ['ignore', 'ignore', 'pipe'] });
  return { cert: readFileSync(join(out, 'tls.crt')), key: readFileSync(join(out, 'tls.key')) };
}

/** Makes the material under `dir`; `serviceHost` is the view Service's DNS name (NAME.NAMESPACE.svc). */
export function makeViewPki(dir: string, serviceHost: string, caName = 'worldline-test-internal-ca'): ViewPki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const cnf = join(dir, 'openssl.cnf');
  writeFileSync(cnf, CNF);
  const env = { ...process.env, WL_SAN: serviceHost };
  const key = KEY_ARGS;
  const ssl = (args: string[]): void => void execFileSync('openssl', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const caCrt = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  ssl(['req', '-x509', '-new', '-config', cnf, '-extensions', 'ca', ...key, '-keyout', caKey, '-out', caCrt, '-days', '365', '-subj', `/CN=${caName}`]);
  const leaf = (sub: string, ext: string, cn: string, withCa: boolean): string => {
    const out = join(dir, sub);
    mkdirSync(out, { recursive: true, mode: 0o700 });
    ssl(['req', '-x509', '-new', '-config', cnf, '-extensions', ext, ...key, '-CA', caCrt, '-CAkey', caKey, '-keyout', join(out, 'tls.key'), '-out', join(out, 'tls.crt'), '-days', '365', '-subj', `/CN=${cn}`]);
    if (withCa) copyFileSync(caCrt, join(out, 'ca.crt'));
    return out;
  };
  return {
    caPem: readFileSync(caCrt, 'utf8'),
    servingDir: leaf('serving', 'serving', 'worldline-controller-view', false),
    controllerLinkDir: leaf('controller-link', 'client', LINK_CLIENT_NAME, true),
    agentLinkDir: leaf('agent-link', 'agent', LINK_SERVER_NAME, true),
  };
}
