// Controller configuration from flags and environment, validated with clear errors.
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { splitHostPort } from '../kube/host-port.js';
import { parseArgs } from 'node:util';

export interface ControllerConfig {
  kubeconfig?: string;
  namespace: string;
  metricsHost: string;
  metricsPort: number;
  identity: string;
  leaderElect: boolean;
  leaseDurationSeconds: number;
  workers: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /**
   * The aggregated view API (view.worldline.dev: a World's log and diff): served when both TLS
   * directories are given — `servingTlsDir` (tls.crt, tls.key: what the APIService's caBundle vouches
   * for) and `linkTlsDir` (ca.crt, tls.crt, tls.key: the controller's end of the node link).
   */
  view?: { host: string; port: number; servingTlsDir: string; linkTlsDir: string };
  /**
   * The trust policy file (JSON; the chart mounts ConfigMap <release>-trust-policy): with it, a node's
   * ledger head is recorded only when its receipt verifies under a key the policy pins for that node.
   */
  trustPolicy?: string;
  /**
   * The collapse grant key (a PKCS#8 PEM Ed25519 private key; the chart mounts it from a Secret): with it
   * and a trust policy, the controller verifies each authorized Collapse's evidence graph and signs a
   * single-use grant the node-agent spends before the exchange. `grantIssuer` labels it in logs.
   */
  grantKey?: string;
  grantIssuer: string;
}

/**
 * Reconciles in flight per kind. A reconcile mostly waits on the apiserver (one or two writes), so a few
 * in flight keep up with a burst of creates; 2 fell behind 1,000 Worlds (docs/benchmarks.md, controller).
 */
export const DEFAULT_WORKERS = 8;

export const USAGE = `usage: worldline-controller [--kubeconfig PATH] [--namespace NS] [--metrics-bind HOST:PORT]
       [--identity ID] [--leader-elect=true|false] [--lease-duration SECONDS] [--workers N] [--log-level LEVEL]
       [--view-bind HOST:PORT --view-tls-dir DIR --link-tls-dir DIR] [--trust-policy PATH]
       [--grant-key PATH [--grant-issuer LABEL]]
  --trust-policy PATH  record a node's ledger head only when its receipt is signed by a key this trust policy
                       pins for the node (env WORLDLINE_TRUST_POLICY; docs/operations.md, "Receipt keys")
  --grant-key PATH     verify each authorized Collapse's evidence graph against the trust policy and sign its
                       collapse grant with this Ed25519 key (PKCS#8 PEM; env WORLDLINE_GRANT_KEY; needs
                       --trust-policy; docs/operations.md, "Collapse grants")
  --grant-issuer LABEL how logs and Events name the grant key (default worldline-controller)
  --view-tls-dir DIR   serve the aggregated API view.worldline.dev (Worlds' logs and diffs) with tls.crt and
                       tls.key from DIR (env WORLDLINE_VIEW_TLS_DIR); needs --link-tls-dir
  --link-tls-dir DIR   the node link: ca.crt, tls.crt and tls.key the controller presents to node-agents
                       (env WORLDLINE_LINK_TLS_DIR)
  --view-bind HOST:PORT  where the view API listens (default 0.0.0.0:8443; env WORLDLINE_VIEW_BIND)`;

function intFlag(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer in [${min}, ${max}], got "${raw}"\n${USAGE}`);
  return n;
}

function viewConfig(bindRaw: string | undefined, servingTlsDir: string | undefined, linkTlsDir: string | undefined): ControllerConfig['view'] {
  if (servingTlsDir === undefined && linkTlsDir === undefined) {
    if (bindRaw !== undefined) throw new Error(`--view-bind needs --view-tls-dir and --link-tls-dir\n${USAGE}`);
    return undefined;
  }
  if (servingTlsDir === undefined || linkTlsDir === undefined) throw new Error(`the view API needs both --view-tls-dir and --link-tls-dir\n${USAGE}`);
  for (const [flag, dir] of [['view-tls-dir', servingTlsDir], ['link-tls-dir', linkTlsDir]] as const) {
    if (!isAbsolute(dir)) throw new Error(`--${flag} must be an absolute directory, got "${dir}"\n${USAGE}`);
  }
  const bind = bindRaw ?? '0.0.0.0:8443';
  const hp = splitHostPort(bind);
  if (!hp) throw new Error(`--view-bind must be HOST:PORT, got "${bind}"\n${USAGE}`);
  return { host: hp.host, port: intFlag('view-bind port', hp.port, 0, 65535), servingTlsDir, linkTlsDir };
}

export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ControllerConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'metrics-bind': { type: 'string' },
      identity: { type: 'string' },
      'leader-elect': { type: 'string' },
      'lease-duration': { type: 'string' },
      workers: { type: 'string' },
      'log-level': { type: 'string' },
      'view-bind': { type: 'string' },
      'view-tls-dir': { type: 'string' },
      'link-tls-dir': { type: 'string' },
      'trust-policy': { type: 'string' },
      'grant-key': { type: 'string' },
      'grant-issuer': { type: 'string' },
    },
    strict: true,
  });
  const bind = values['metrics-bind'] ?? env.WORLDLINE_METRICS_BIND ?? '0.0.0.0:8080';
  const m = /^(.*):(\d+)$/.exec(bind);
  if (!m) throw new Error(`--metrics-bind must be HOST:PORT, got "${bind}"\n${USAGE}`);
  const leaderRaw = values['leader-elect'] ?? env.WORLDLINE_LEADER_ELECT ?? 'true';
  if (leaderRaw !== 'true' && leaderRaw !== 'false') throw new Error(`--leader-elect must be true or false, got "${leaderRaw}"`);
  const level = values['log-level'] ?? env.WORLDLINE_LOG_LEVEL ?? 'info';
  if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new Error(`--log-level must be debug, info, warn or error, got "${level}"`);
  const kubeconfig = values.kubeconfig ?? env.KUBECONFIG;
  const view = viewConfig(values['view-bind'] ?? env.WORLDLINE_VIEW_BIND, values['view-tls-dir'] ?? (env.WORLDLINE_VIEW_TLS_DIR || undefined), values['link-tls-dir'] ?? (env.WORLDLINE_LINK_TLS_DIR || undefined));
  const trustPolicy = values['trust-policy'] ?? (env.WORLDLINE_TRUST_POLICY || undefined);
  if (trustPolicy !== undefined && (!isAbsolute(trustPolicy) || trustPolicy.includes('\0'))) throw new Error(`--trust-policy must be an absolute file path, got "${trustPolicy}"\n${USAGE}`);
  const grantKey = values['grant-key'] ?? (env.WORLDLINE_GRANT_KEY || undefined);
  if (grantKey !== undefined && (!isAbsolute(grantKey) || grantKey.includes('\0'))) throw new Error(`--grant-key must be an absolute file path, got "${grantKey}"\n${USAGE}`);
  if (grantKey !== undefined && trustPolicy === undefined) throw new Error(`--grant-key needs --trust-policy: the evidence graph is verified against it\n${USAGE}`);
  const grantIssuer = values['grant-issuer'] ?? 'worldline-controller';
  if (!/^[A-Za-z0-9._-]{1,253}$/.test(grantIssuer)) throw new Error(`--grant-issuer must be 1 to 253 characters of A-Z a-z 0-9 . _ -, got "${grantIssuer}"\n${USAGE}`);
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(grantKey !== undefined ? { grantKey } : {}),
    grantIssuer,
    ...(view ? { view } : {}),
    ...(trustPolicy !== undefined ? { trustPolicy } : {}),
    namespace: values.namespace ?? env.WORLDLINE_NAMESPACE ?? env.POD_NAMESPACE ?? 'worldline-system',
    metricsHost: m[1] ?? '0.0.0.0',
    metricsPort: intFlag('metrics-bind port', m[2] ?? '', 0, 65535),
    identity: values.identity ?? env.POD_NAME ?? `${hostname()}-${process.pid}`,
    leaderElect: leaderRaw === 'true',
    leaseDurationSeconds: intFlag('lease-duration', values['lease-duration'] ?? env.WORLDLINE_LEASE_DURATION ?? '15', 3, 600),
    workers: intFlag('workers', values.workers ?? String(DEFAULT_WORKERS), 1, 64),
    logLevel: level as ControllerConfig['logLevel'],
  };
}
