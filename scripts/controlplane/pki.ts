// The control plane's certificates and keys (made once per directory with openssl) and its kubeconfig.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execOk } from './processes.js';

const OPENSSL_CNF = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = worldline
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
  /** The front proxy (aggregated APIs): its own CA and the client certificate kube-apiserver presents to extension servers. */
  frontProxyCaCert: string;
  frontProxyCaKey: string;
  proxyClientCert: string;
  proxyClientKey: string;
}

/** The common name of the front proxy's client certificate (--requestheader-allowed-names). */
export const FRONT_PROXY_CLIENT_NAME = 'front-proxy-client';

export async function ensurePki(pkiDir: string): Promise<Pki> {
  const p: Pki = {
    caCert: join(pkiDir, 'ca.crt'),
    caKey: join(pkiDir, 'ca.key'),
    servingCert: join(pkiDir, 'apiserver.crt'),
    servingKey: join(pkiDir, 'apiserver.key'),
    adminCert: join(pkiDir, 'admin.crt'),
    adminKey: join(pkiDir, 'admin.key'),
    saKey: join(pkiDir, 'sa.key'),
    saPub: join(pkiDir, 'sa.pub'),
    frontProxyCaCert: join(pkiDir, 'front-proxy-ca.crt'),
    frontProxyCaKey: join(pkiDir, 'front-proxy-ca.key'),
    proxyClientCert: join(pkiDir, 'front-proxy-client.crt'),
    proxyClientKey: join(pkiDir, 'front-proxy-client.key'),
  };
  if (Object.values(p as unknown as Record<string, string>).every((f) => existsSync(f))) return p;
  mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
  const cnf = join(pkiDir, 'openssl.cnf');
  await writeFile(cnf, OPENSSL_CNF);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', 'ca', ...key,
    '-keyout', p.caKey, '-out', p.caCert, '-days', '3650', '-subj', '/CN=worldline-test-ca']);
  const leaf = (ext: string, subj: string, out: string, keyOut: string) =>
    execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', ext, ...key, '-CA', p.caCert,
      '-CAkey', p.caKey, '-keyout', keyOut, '-out', out, '-days', '3650', '-subj', subj]);
  await execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', 'ca', ...key,
    '-keyout', p.frontProxyCaKey, '-out', p.frontProxyCaCert, '-days', '3650', '-subj', '/CN=worldline-test-front-proxy-ca']);
  await Promise.all([
    leaf('server', '/CN=kube-apiserver', p.servingCert, p.servingKey),
    leaf('client', '/O=system:masters/CN=admin', p.adminCert, p.adminKey),
    execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', 'client', ...key, '-CA', p.frontProxyCaCert,
      '-CAkey', p.frontProxyCaKey, '-keyout', p.proxyClientKey, '-out', p.proxyClientCert, '-days', '3650', '-subj', `/CN=${FRONT_PROXY_CLIENT_NAME}`]),
  ]);
  const sa = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  await writeFile(p.saKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(p.saPub, sa.publicKey.export({ type: 'spki', format: 'pem' }));
  return p;
}

/** Writes a kubeconfig with embedded CA and client certificate data. */
export function writeKubeconfig(
  path: string,
  o: { server: string; caFile: string; certFile: string; keyFile: string; user?: string; cluster?: string },
): void {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  const cluster = o.cluster ?? 'worldline-test';
  const user = o.user ?? 'admin';
  const text = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${cluster}`,
    '  cluster:',
    `    server: ${o.server}`,
    `    certificate-authority-data: ${b64(o.caFile)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(o.certFile)}`,
    `    client-key-data: ${b64(o.keyFile)}`,
    'contexts:',
    `- name: ${cluster}`,
    '  context:',
    `    cluster: ${cluster}`,
    `    user: ${user}`,
    `current-context: ${cluster}`,
    '',
  ].join('\n');
  writeFileSync(path, text, { mode: 0o600 });
}

// ---------------------------------------------------------------------------------------------------
// exit handlers (only for non-keep control planes)
