// node-agent configuration from flags and environment, validated with clear errors.
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { splitHostPort } from '../kube/host-port.js';
import { parseArgs } from 'node:util';
import { ADMISSION_CONFIG_KEYS, admissionConfigFrom } from './admission/admission-policy.js';
import { COMPACT_AT_DEPTH, MAX_STACK_DEPTH } from './store/generation-stack.js';

export interface AgentConfig {
  kubeconfig?: string;
  nodeName: string;
  storeDir: string;
  namespace: string;
  metricsHost: string;
  metricsPort: number;
  /** First host id of the worlds' id ranges; world slot s maps namespace ids 0..65535 onto base + s*65536. */
  idBase: number;
  idSlots: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Fallbacks used before admission; admission's per-world defaults (--world-default-*) replace them. */
  defaultWallTimeSeconds: number;
  defaultOutputBytes: number;
  /** Admission ceilings and per-world limits as configured (text; parsed and validated at start). */
  admissionRaw: Record<string, string | undefined>;
  /** Where node state is measured for admission (default /proc; a test points it elsewhere). */
  observeProcDir: string;
  /** An absolute path the receipt ledger is mirrored to, line for line (see docs/operations.md). */
  receiptsExport?: string;
  /**
   * Where the node's cgroup hierarchies are mounted (default /sys/fs/cgroup). In a pod that is the
   * container's own subtree, which the runtime empties when the pod goes: the chart mounts the node's
   * hierarchies elsewhere and points this at them, so Worlds and their supervisors outlive the pod.
   */
  cgroupRoot: string;
  /**
   * The view server (a World's log and diff, for the controller alone): served when linkTlsDir names the
   * node link's TLS material (ca.crt, tls.crt, tls.key); `viewAddress` is what the heartbeat Lease
   * advertises (HOST:PORT the controller dials).
   */
  view?: { host: string; port: number; linkTlsDir: string; advertiseHost: string; advertisePort?: number };
  /** The trust policy file (JSON): which keys may sign isolation waivers. Without one, no waiver verifies. */
  trustPolicy?: string;
  /** How long an authorized Collapse waits for the controller's grant (when the trust policy pins a grant signer for this node). */
  grantWaitSeconds: number;
  /** How long a World's launch holds its status writes (worlds/world-reconciler.ts; 0: each step is written as it happens). */
  launchStatusHoldMs: number;
  /** How long a Collapse holds its progress statuses, Preparing and Authorized (collapses/progress-hold.ts; 0: written as they happen). */
  collapseStatusHoldMs: number;
  /** Watch the store's filesystem so collapses re-hash PRIME only when a change was observed (default true). */
  primeWatcher: boolean;
  /** Set the kernel's favordynmods cgroup option at start (sandbox/cgroup-dynmods.ts; default true). */
  cgroupFavorDynmods: boolean;
  /** Compact a Root's PRIME in the background once its stack is this deep (default 16; 0: never, only inline at MAX_STACK_DEPTH). */
  compactAtDepth: number;
}

export const USAGE = `usage: worldline-node-agent --node-name NAME [--store DIR] [--kubeconfig PATH] [--namespace NS]
       [--metrics-bind HOST:PORT] [--id-base N] [--id-slots N] [--log-level LEVEL] [--receipts-export PATH] [--cgroup-root DIR]
       [--node-cpu Q] [--node-memory Q] [--node-pids N] [--node-worlds N] [--world-cpu Q] [--world-memory Q] ...
       (admission keys: see docs/operations.md)
  --receipts-export PATH   mirror the receipt ledger to this absolute path (its directory must exist),
                           ideally storage the node's root cannot rewrite (env WORLDLINE_RECEIPTS_EXPORT)
  --cgroup-root DIR        where the node's cgroup hierarchies are mounted (default /sys/fs/cgroup;
                           env WORLDLINE_CGROUP_ROOT); Worlds' and supervisors' cgroups go under DIR/worldline
  --cgroup-favor-dynmods on|off  set the kernel's favordynmods option on the host's cgroup2 mount at start,
                           so a launch's cgroup moves do not wait for an RCU grace period (default on; env
                           WORLDLINE_CGROUP_FAVOR_DYNMODS); off leaves the node's cgroup mounts as they are
  --trust-policy PATH      the trust policy (JSON, see docs/operations.md "Isolation waivers"), re-read for
                           each waiver (env WORLDLINE_TRUST_POLICY); without it every waiver is refused.
                           When it pins a collapse-grant signer for this node, every Collapse waits for the
                           controller's grant (docs/operations.md, "Collapse grants")
  --prime-watcher on|off   watch the store's filesystem (fanotify) so a collapse re-hashes PRIME only when
                           something changed under it since the last measurement (default on; env
                           WORLDLINE_PRIME_WATCHER); off, or when it cannot start, every collapse walks PRIME
  --compact-at-depth N     compact a Root's stack of layers in the background once PRIME is N layers deep
                           (default 16, 2 to 32; env WORLDLINE_COMPACT_AT_DEPTH); 0: never in the background,
                           the collapse onto 32 layers compacts inline instead (PRIME is still
                           measured in the background after an adoption and at start)
  --grant-wait-seconds N   how long an authorized Collapse waits for that grant before GRANT_MISSING (default 30)
  --launch-status-hold-ms N  how long a World's launch holds its status writes: one write then carries every
                           step up to its workload running (default 250, at most 60000; 0: each step is
                           written as it happens)
  --collapse-status-hold-ms N  how long a Collapse holds its Preparing and Authorized statuses: one that
                           finishes sooner writes only its final status (default 250, at most 60000; 0:
                           each is written as it happens; never held while the controller's grant is
                           required)
  --link-tls-dir DIR       serve Worlds' logs and diffs to the controller over TLS with ca.crt, tls.crt and
                           tls.key from DIR (env WORLDLINE_LINK_TLS_DIR); without it nothing is served
  --view-bind HOST:PORT    where that server listens (default 0.0.0.0:9443; env WORLDLINE_VIEW_BIND)
  --view-address HOST[:PORT] what the heartbeat Lease advertises to the controller (env WORLDLINE_VIEW_ADDRESS;
                           default POD_IP; without a port, the bound one)`;

function int(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer in [${min}, ${max}], got "${raw}"\n${USAGE}`);
  return n;
}

/** How long a World's launch holds its status writes by default (--launch-status-hold-ms): a slower launch shows Admitted. */
export const LAUNCH_HOLD_MS = 250;
/** How long a Collapse holds its progress statuses by default (--collapse-status-hold-ms): a slower one shows them. */
export const COLLAPSE_HOLD_MS = 250;

export const ID_RANGE = 65536;

function hostPort(flag: string, raw: string): { host: string; port: number } {
  const hp = splitHostPort(raw);
  if (!hp) throw new Error(`--${flag} must be HOST:PORT, got "${raw}"\n${USAGE}`);
  return { host: hp.host, port: int(`${flag} port`, hp.port, 0, 65535) };
}

function viewConfig(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): AgentConfig['view'] {
  const str = (k: string): string | undefined => {
    const v = values[k];
    return typeof v === 'string' ? v : undefined;
  };
  const linkTlsDir = str('link-tls-dir') ?? (env.WORLDLINE_LINK_TLS_DIR || undefined);
  if (linkTlsDir === undefined) return undefined;
  if (!isAbsolute(linkTlsDir)) throw new Error(`--link-tls-dir must be an absolute directory, got "${linkTlsDir}"\n${USAGE}`);
  const bind = hostPort('view-bind', str('view-bind') ?? (env.WORLDLINE_VIEW_BIND || '0.0.0.0:9443'));
  const advertised = str('view-address') ?? (env.WORLDLINE_VIEW_ADDRESS || env.POD_IP || undefined);
  if (advertised === undefined) throw new Error(`--view-address is needed with --link-tls-dir when POD_IP is not set (where the controller reaches this node-agent)\n${USAGE}`);
  // HOST alone advertises the bound port (a test binds port 0).
  const withPort = splitHostPort(advertised) ? hostPort('view-address', advertised) : undefined;
  const advertiseHost = withPort?.host ?? advertised.replace(/^\[(.*)\]$/, '$1');
  if (advertiseHost === '' || /[\s/]/.test(advertiseHost)) throw new Error(`--view-address must be HOST or HOST:PORT, got "${advertised}"\n${USAGE}`);
  return { ...bind, linkTlsDir, advertiseHost, ...(withPort ? { advertisePort: withPort.port } : {}) };
}

export function parseAgentConfig(argv: readonly string[], env: NodeJS.ProcessEnv): AgentConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: 'string' },
      'node-name': { type: 'string' },
      store: { type: 'string' },
      namespace: { type: 'string' },
      'metrics-bind': { type: 'string' },
      'id-base': { type: 'string' },
      'id-slots': { type: 'string' },
      'log-level': { type: 'string' },
      'observe-proc-dir': { type: 'string' },
      'receipts-export': { type: 'string' },
      'trust-policy': { type: 'string' },
      'grant-wait-seconds': { type: 'string' },
      'launch-status-hold-ms': { type: 'string' },
      'collapse-status-hold-ms': { type: 'string' },
      'prime-watcher': { type: 'string' },
      'cgroup-favor-dynmods': { type: 'string' },
      'compact-at-depth': { type: 'string' },
      'cgroup-root': { type: 'string' },
      'link-tls-dir': { type: 'string' },
      'view-bind': { type: 'string' },
      'view-address': { type: 'string' },
      ...Object.fromEntries(ADMISSION_CONFIG_KEYS.map((k) => [k.key, { type: 'string' as const }])),
    },
    strict: true,
  });
  const nodeName = values['node-name'] ?? env.NODE_NAME ?? hostname();
  if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(nodeName)) throw new Error(`--node-name must be a DNS-1123 subdomain, got "${nodeName}"\n${USAGE}`);
  const bind = values['metrics-bind'] ?? env.WORLDLINE_METRICS_BIND ?? '0.0.0.0:9090';
  const m = /^(.*):(\d+)$/.exec(bind);
  if (!m) throw new Error(`--metrics-bind must be HOST:PORT, got "${bind}"\n${USAGE}`);
  const idBase = int('id-base', values['id-base'] ?? env.WORLDLINE_ID_BASE ?? String(2 ** 30), ID_RANGE, 2 ** 32 - 1);
  const idSlots = int('id-slots', values['id-slots'] ?? '1024', 1, 16384);
  if (idBase + idSlots * ID_RANGE > 2 ** 32 - 2) throw new Error(`--id-base ${idBase} with ${idSlots} slots of ${ID_RANGE} ids overflows 32-bit ids`);
  const level = values['log-level'] ?? env.WORLDLINE_LOG_LEVEL ?? 'info';
  if (!['debug', 'info', 'warn', 'error'].includes(level)) throw new Error(`--log-level must be debug, info, warn or error, got "${level}"`);
  const kubeconfig = values.kubeconfig ?? env.KUBECONFIG;
  const receiptsExport = values['receipts-export'] ?? (env.WORLDLINE_RECEIPTS_EXPORT || undefined);
  if (receiptsExport !== undefined && (!isAbsolute(receiptsExport) || receiptsExport.endsWith('/') || receiptsExport.includes('\0'))) {
    throw new Error(`--receipts-export must be an absolute file path, got "${receiptsExport}"\n${USAGE}`);
  }
  const cgroupRoot = values['cgroup-root'] ?? (env.WORLDLINE_CGROUP_ROOT || '/sys/fs/cgroup');
  if (!isAbsolute(cgroupRoot) || cgroupRoot.includes('\0')) throw new Error(`--cgroup-root must be an absolute directory, got "${cgroupRoot}"\n${USAGE}`);
  const view = viewConfig(values, env);
  const trustPolicy = values['trust-policy'] ?? (env.WORLDLINE_TRUST_POLICY || undefined);
  if (trustPolicy !== undefined && (!isAbsolute(trustPolicy) || trustPolicy.includes('\0'))) throw new Error(`--trust-policy must be an absolute file path, got "${trustPolicy}"\n${USAGE}`);
  const watcherFlag = values['prime-watcher'] ?? (env.WORLDLINE_PRIME_WATCHER || 'on');
  if (watcherFlag !== 'on' && watcherFlag !== 'off') throw new Error(`--prime-watcher must be on or off, got "${watcherFlag}"\n${USAGE}`);
  const dynmodsFlag = values['cgroup-favor-dynmods'] ?? (env.WORLDLINE_CGROUP_FAVOR_DYNMODS || 'on');
  if (dynmodsFlag !== 'on' && dynmodsFlag !== 'off') throw new Error(`--cgroup-favor-dynmods must be on or off, got "${dynmodsFlag}"\n${USAGE}`);
  const grantWaitSeconds = int('grant-wait-seconds', values['grant-wait-seconds'] ?? '30', 1, 600);
  const launchStatusHoldMs = int('launch-status-hold-ms', values['launch-status-hold-ms'] ?? String(LAUNCH_HOLD_MS), 0, 60_000);
  const collapseStatusHoldMs = int('collapse-status-hold-ms', values['collapse-status-hold-ms'] ?? String(COLLAPSE_HOLD_MS), 0, 60_000);
  const compactAtDepth = int('compact-at-depth', values['compact-at-depth'] ?? (env.WORLDLINE_COMPACT_AT_DEPTH || String(COMPACT_AT_DEPTH)), 0, MAX_STACK_DEPTH);
  if (compactAtDepth === 1) throw new Error(`--compact-at-depth must be 0 (off) or 2 to ${MAX_STACK_DEPTH}: a stack of one layer is a full generation already\n${USAGE}`);
  return {
    ...(trustPolicy !== undefined ? { trustPolicy } : {}),
    grantWaitSeconds,
    launchStatusHoldMs,
    collapseStatusHoldMs,
    primeWatcher: watcherFlag === 'on',
    cgroupFavorDynmods: dynmodsFlag === 'on',
    compactAtDepth,
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(view ? { view } : {}),
    nodeName,
    storeDir: values.store ?? env.WORLDLINE_STORE ?? '/var/lib/worldline',
    namespace: values.namespace ?? env.WORLDLINE_NAMESPACE ?? env.POD_NAMESPACE ?? 'worldline-system',
    metricsHost: m[1] ?? '0.0.0.0',
    metricsPort: int('metrics-bind port', m[2] ?? '', 0, 65535),
    idBase,
    idSlots,
    logLevel: level as AgentConfig['logLevel'],
    defaultWallTimeSeconds: 3600,
    defaultOutputBytes: 64 * 1024 * 1024,
    admissionRaw: admissionConfigFrom(values, env),
    observeProcDir: values['observe-proc-dir'] ?? '/proc',
    ...(receiptsExport !== undefined ? { receiptsExport } : {}),
    cgroupRoot,
  };
}
