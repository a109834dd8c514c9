// A real test control plane: etcd + kube-apiserver (+ kubectl), built by scripts/controlplane/build.sh
// from the Go module proxy and started the way envtest does it — client-certificate auth, RBAC,
// service-account signing keys, loopback-only random ports, a throwaway directory.
//
// Teardown is guaranteed. Each process runs in its own process group (detached) and `stop()` kills the
// whole group. Unless `keep` is set, the children run under `setpriv --pdeathsig SIGKILL`, so the kernel
// kills them if the test process dies for any reason (even `kill -9`), and process 'exit'/SIGINT/SIGTERM/
// SIGHUP handlers kill them and remove the directory.
//
// Long-running callers (the dev stack) pass `{ dir, keep: true }`: then the processes are detached with
// their output going to files, without pdeathsig and without exit handlers, so they outlive the caller.
// Their pids are in `pids` and in `<dir>/pids.json`; `stopControlPlaneAt(dir)` stops them later from any
// process. With a fixed `dir`, certificates, keys and etcd data are reused across restarts.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ControlPlaneBinaries {
  apiserver: string;
  etcd: string;
  kubectl: string;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ControlPlane {
  /** Directory holding certificates, keys, etcd data, logs and the kubeconfig. */
  readonly dir: string;
  /** Admin kubeconfig: client certificate CN=admin, O=system:masters. */
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  readonly binaries: ControlPlaneBinaries;
  /** Process ids (each is also the id of the process's own process group). */
  readonly pids: { readonly etcd: number; readonly apiserver: number };
  /** etcd's client URL (plain HTTP on loopback), for tests that must act on etcd directly (e.g. compaction). */
  readonly etcdUrl: string;
  /** PEM files, for callers that build their own clients. */
  readonly tls: { readonly caFile: string; readonly adminCertFile: string; readonly adminKeyFile: string };
  /** Runs the pinned kubectl with the admin kubeconfig. Never rejects on a non-zero exit code. */
  kubectl(args: string[], opts?: { input?: string }): Promise<KubectlResult>;
  /** Idempotent: kills both process groups, waits for them, removes `dir` unless `keep`. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Use (and create) this directory instead of a fresh temp dir. Existing certs, keys and etcd data are reused. */
  dir?: string;
  /** Leave processes running when the caller exits, and leave `dir` in place on stop(). */
  keep?: boolean;
  /** Apply every *.yaml / *.yml in this directory after start and wait until the CRDs are Established. */
  crdDir?: string;
  /** No progress lines on stderr. */
  quiet?: boolean;
  /** Both processes append their output here instead of `<dir>/etcd.log` and `<dir>/kube-apiserver.log`. */
  logFile?: string;
  /** How long to wait for /readyz (default 120 s). */
  readyTimeoutMs?: number;
}

const here = dirname(fileURLToPath(import.meta.url));

/** Locates scripts/controlplane/versions.env from the source tree or from its compiled copy under dist/. */
function versionsFile(): string {
  const candidates = [join(here, 'versions.env'), resolve(here, '../../../scripts/controlplane/versions.env')];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`test control plane: versions.env not found (looked at ${candidates.join(', ')})`);
}

/** The pins from scripts/controlplane/versions.env. */
export function controlPlaneVersions(): { kubernetes: string; etcd: string } {
  const vars = new Map<string, string>();
  for (const line of readFileSync(versionsFile(), 'utf8').split('\n')) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)=("?)([^"#\s]*)\2\s*(#.*)?$/.exec(line);
    if (m) vars.set(m[1]!, m[3]!);
  }
  const kubernetes = vars.get('KUBERNETES_VERSION');
  const etcd = vars.get('ETCD_VERSION');
  if (!kubernetes || !etcd) throw new Error(`${versionsFile()} must set KUBERNETES_VERSION and ETCD_VERSION`);
  return { kubernetes, etcd };
}

/** The cached binaries for the pinned version; throws telling how to build them when missing. */
export function controlPlaneBinaries(): ControlPlaneBinaries {
  const { kubernetes, etcd } = controlPlaneVersions();
  const cacheRoot = process.env['WORLDLINE_CACHE'] || join(homedir(), '.cache', 'worldline');
  const dir = join(cacheRoot, 'controlplane', kubernetes);
  const bins: ControlPlaneBinaries = {
    apiserver: join(dir, 'kube-apiserver'),
    etcd: join(dir, 'etcd'),
    kubectl: join(dir, 'kubectl'),
  };
  const missing = [bins.apiserver, bins.etcd, bins.kubectl].filter((p) => !existsSync(p));
  if (missing.length > 0 || !existsSync(join(dir, 'stamp'))) {
    throw new Error(
      `test control plane binaries for Kubernetes ${kubernetes} / etcd ${etcd} are not built ` +
        `(missing: ${missing.length > 0 ? missing.join(', ') : join(dir, 'stamp')}). ` +
        `Run: bash scripts/controlplane/build.sh   (or npm run controlplane:build)`,
    );
  }
  return bins;
}

// ---------------------------------------------------------------------------------------------------
// small process helpers (argv arrays only, never a shell)

function run(file: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<KubectlResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolveRun({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

function execOk(file: string, args: string[]): Promise<void> {
  return new Promise((resolveExec, reject) => {
    execFile(file, args, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolveExec();
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => {
      const srv = createServer();
      return new Promise<ReturnType<typeof createServer>>((ok, bad) => {
        srv.once('error', bad);
        srv.listen(0, '127.0.0.1', () => ok(srv));
      });
    }),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    if (a === null || typeof a === 'string') throw new Error('unexpected listen address');
    return a.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((ok) => s.close(() => ok()))));
  return ports;
}

async function portFree(port: number): Promise<boolean> {
  const srv = createServer();
  return new Promise<boolean>((ok) => {
    srv.once('error', () => ok(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => ok(true)));
  });
}

/** Reuses the ports recorded in `file` when all are still free (stable server URL across restarts), else picks new ones. */
async function choosePorts(file: string): Promise<[number, number, number]> {
  try {
    const prev = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (Array.isArray(prev) && prev.length === 3 && prev.every((p) => Number.isInteger(p))) {
      const ports = prev as [number, number, number];
      if ((await Promise.all(ports.map(portFree))).every(Boolean)) return ports;
    }
  } catch {
    /* none recorded */
  }
  const ports = (await freePorts(3)) as [number, number, number];
  writeFileSync(file, JSON.stringify(ports) + '\n');
  return ports;
}

function tail(file: string, lines = 40): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------------
// certificates

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

interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
}

async function ensurePki(pkiDir: string): Promise<Pki> {
  const p: Pki = {
    caCert: join(pkiDir, 'ca.crt'),
    caKey: join(pkiDir, 'ca.key'),
    servingCert: join(pkiDir, 'apiserver.crt'),
    servingKey: join(pkiDir, 'apiserver.key'),
    adminCert: join(pkiDir, 'admin.crt'),
    adminKey: join(pkiDir, 'admin.key'),
    saKey: join(pkiDir, 'sa.key'),
    saPub: join(pkiDir, 'sa.pub'),
  };
  if ([p.caCert, p.caKey, p.servingCert, p.servingKey, p.adminCert, p.adminKey, p.saKey, p.saPub].every((f) => existsSync(f))) return p;
  mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
  const cnf = join(pkiDir, 'openssl.cnf');
  await writeFile(cnf, OPENSSL_CNF);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', 'ca', ...key,
    '-keyout', p.caKey, '-out', p.caCert, '-days', '3650', '-subj', '/CN=worldline-test-ca']);
  const leaf = (ext: string, subj: string, out: string, keyOut: string) =>
    execOk('openssl', ['req', '-x509', '-new', '-config', cnf, '-extensions', ext, ...key, '-CA', p.caCert,
      '-CAkey', p.caKey, '-keyout', keyOut, '-out', out, '-days', '3650', '-subj', subj]);
  await Promise.all([
    leaf('server', '/CN=kube-apiserver', p.servingCert, p.servingKey),
    leaf('client', '/O=system:masters/CN=admin', p.adminCert, p.adminKey),
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

interface Live {
  pids: number[];
  dir: string;
  removeDir: boolean;
}
const live = new Set<Live>();
let handlersInstalled = false;

/** True when `pid` is gone or a zombie (dead, not yet reaped). */
function deadOrZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return true;
  }
}

function emergencyCleanup(): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const l of live) {
    for (const pid of l.pids) killGroup(pid, 'SIGKILL');
    // Synchronous context (exit/signal): wait briefly for the kernel to finish the kills before removing files.
    for (let i = 0; i < 200 && !l.pids.every(deadOrZombie); i++) Atomics.wait(pause, 0, 0, 10);
    if (l.removeDir) {
      try {
        rmSync(l.dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        /* best effort */
      }
    }
  }
  live.clear();
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', emergencyCleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      emergencyCleanup();
      // Behave as if unhandled unless somebody else also listens: re-raise with the default action.
      if (process.listenerCount(sig) <= 1) {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      }
    };
    process.on(sig, onSignal);
  }
}

// ---------------------------------------------------------------------------------------------------
// start / stop

interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  exited: Promise<void>;
  exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null;
  log: string;
}

function launch(bin: string, args: string[], log: string, keep: boolean): Proc {
  const fd = openSync(log, 'a');
  try {
    const [file, argv] = keep ? [bin, args] : ['setpriv', ['--pdeathsig', 'SIGKILL', '--', bin, ...args]];
    const child = spawn(file, argv, { detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new Error(`failed to spawn ${bin}`);
    const proc: Proc = {
      name: basename(bin),
      pid: child.pid,
      child,
      exitInfo: null,
      log,
      exited: new Promise<void>((ok) => {
        child.once('exit', (code, signal) => {
          proc.exitInfo = { code, signal };
          ok();
        });
      }),
    };
    child.once('error', () => undefined);
    if (keep) child.unref();
    return proc;
  } finally {
    closeSync(fd);
  }
}

/** Stops processes one after the other (callers pass kube-apiserver before etcd): SIGTERM, then SIGKILL after `graceMs`. */
async function terminate(procs: Proc[], graceMs: number): Promise<void> {
  for (const p of procs) {
    if (p.exitInfo === null && graceMs > 0) {
      killGroup(p.pid, 'SIGTERM');
      await Promise.race([p.exited, sleep(graceMs)]);
    }
    killGroup(p.pid, 'SIGKILL');
    await p.exited;
  }
  // The group leaders are reaped; make sure nothing else in their groups lingers.
  for (let i = 0; i < 100 && procs.some((p) => groupAlive(p.pid)); i++) await sleep(20);
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

interface GetResult {
  status: number;
  body: string;
}

function httpsGet(url: string, tls: { ca: Buffer; cert?: Buffer; key?: Buffer }, timeoutMs = 5000): Promise<GetResult> {
  return new Promise((ok, bad) => {
    const req = httpsRequest(url, { ...tls, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', bad);
    req.end();
  });
}

function httpGet(url: string, timeoutMs = 2000): Promise<GetResult> {
  return new Promise((ok, bad) => {
    const req = httpRequest(url, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', bad);
    req.end();
  });
}

async function waitFor(
  what: string,
  deadline: number,
  procs: Proc[],
  probe: () => Promise<boolean>,
): Promise<void> {
  let last = '';
  for (;;) {
    for (const p of procs) {
      if (p.exitInfo !== null) {
        throw new Error(
          `test control plane: ${p.name} (pid ${p.pid}) exited ` +
            `(code ${String(p.exitInfo.code)}, signal ${String(p.exitInfo.signal)}) while waiting for ${what}`,
        );
      }
    }
    try {
      if (await probe()) return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`test control plane: timed out waiting for ${what}${last ? ` (${last})` : ''}`);
    await sleep(100);
  }
}

interface PidsFile {
  etcd: number;
  apiserver: number;
  server: string;
  binaries: ControlPlaneBinaries;
}

/**
 * Stops a control plane started with `keep: true` in `dir` (from any process, e.g. `dev:down`), using
 * `<dir>/pids.json`. Only signals pids whose command line still names the recorded binaries. Returns
 * whether anything was running. Removes `dir` when `remove` is set.
 */
export async function stopControlPlaneAt(dir: string, opts: { remove?: boolean; graceMs?: number } = {}): Promise<boolean> {
  const file = join(dir, 'pids.json');
  let any = false;
  if (existsSync(file)) {
    const rec = JSON.parse(await readFile(file, 'utf8')) as PidsFile;
    const ours = (pid: number, bin: string) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(bin);
      } catch {
        return false;
      }
    };
    const targets = [
      { pid: rec.apiserver, bin: rec.binaries.apiserver },
      { pid: rec.etcd, bin: rec.binaries.etcd },
    ].filter((t) => ours(t.pid, t.bin));
    any = targets.length > 0;
    // kube-apiserver first, then etcd, each SIGTERM then SIGKILL after the grace period.
    for (const t of targets) {
      killGroup(t.pid, 'SIGTERM');
      const deadline = Date.now() + (opts.graceMs ?? 10_000);
      while (alive(t.pid) && ours(t.pid, t.bin) && Date.now() < deadline) await sleep(50);
      killGroup(t.pid, 'SIGKILL');
      while (alive(t.pid) && ours(t.pid, t.bin)) await sleep(20);
    }
    rmSync(file, { force: true });
  }
  if (opts.remove) rmSync(dir, { recursive: true, force: true });
  return any;
}

/** Starts etcd + kube-apiserver; resolves once /readyz is ok (and CRDs from `crdDir` are Established). */
export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const binaries = controlPlaneBinaries();
  const keep = opts.keep ?? false;
  const started = Date.now();
  const say = (msg: string) => {
    if (!opts.quiet) process.stderr.write(`[controlplane] ${msg}\n`);
  };

  let dir: string;
  if (opts.dir) {
    dir = resolve(opts.dir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pidsFile = join(dir, 'pids.json');
    if (existsSync(pidsFile)) {
      const rec = JSON.parse(readFileSync(pidsFile, 'utf8')) as PidsFile;
      if (alive(rec.etcd) || alive(rec.apiserver)) {
        const cmd = (pid: number) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
          } catch {
            return '';
          }
        };
        if (cmd(rec.etcd).includes(rec.binaries.etcd) || cmd(rec.apiserver).includes(rec.binaries.apiserver)) {
          throw new Error(
            `test control plane already running in ${dir} (etcd pid ${rec.etcd}, kube-apiserver pid ${rec.apiserver}, ` +
              `${rec.server}); stop it first with stopControlPlaneAt(dir)`,
          );
        }
      }
    }
  } else {
    dir = mkdtempSync(join(tmpdir(), 'worldline-controlplane-'));
  }
  const removeDir = !keep;
  const registration: Live = { pids: [], dir, removeDir };
  if (!keep) {
    installHandlers();
    live.add(registration);
  }

  const procs: Proc[] = [];
  let stopped = false;
  const stopNow = async (graceMs: number) => {
    if (stopped) return;
    stopped = true;
    await terminate([...procs].reverse(), graceMs);
    live.delete(registration);
    if (removeDir) rmSync(dir, { recursive: true, force: true });
    else rmSync(join(dir, 'pids.json'), { force: true });
  };

  try {
    const pki = await ensurePki(join(dir, 'pki'));
    const [etcdClientPort, etcdPeerPort, apiPort] = await choosePorts(join(dir, 'ports.json'));
    const etcdLog = opts.logFile ? resolve(opts.logFile) : join(dir, 'etcd.log');
    const apiLog = opts.logFile ? resolve(opts.logFile) : join(dir, 'kube-apiserver.log');
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const server = `https://127.0.0.1:${apiPort}`;
    const deadline = started + (opts.readyTimeoutMs ?? 120_000);

    const etcd = launch(
      binaries.etcd,
      [
        '--name=worldline-test',
        `--data-dir=${join(dir, 'etcd-data')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=worldline-test=${peerUrl}`,
        '--initial-cluster-state=new',
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      etcdLog,
      keep,
    );
    procs.push(etcd);
    registration.pids.push(etcd.pid);
    await waitFor(`etcd at ${etcdUrl}/health`, deadline, procs, async () => {
      const r = await httpGet(`${etcdUrl}/health`);
      return r.status === 200 && r.body.includes('"health":"true"');
    }).catch((e: Error) => {
      throw new Error(`${e.message}\n--- etcd log tail (${etcdLog}) ---\n${tail(etcdLog)}`);
    });

    const apiserver = launch(
      binaries.apiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        `--cert-dir=${join(dir, 'apiserver-certs')}`,
        `--tls-cert-file=${pki.servingCert}`,
        `--tls-private-key-file=${pki.servingKey}`,
        `--client-ca-file=${pki.caCert}`,
        `--secure-port=${apiPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--authorization-mode=RBAC',
        `--service-account-key-file=${pki.saPub}`,
        `--service-account-signing-key-file=${pki.saKey}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
      ],
      apiLog,
      keep,
    );
    procs.push(apiserver);
    registration.pids.push(apiserver.pid);

    const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
    await waitFor(`kube-apiserver ${server}/readyz`, deadline, procs, async () => {
      const r = await httpsGet(`${server}/readyz`, tls);
      return r.status === 200;
    }).catch((e: Error) => {
      throw new Error(
        `${e.message}\n--- kube-apiserver log tail (${apiLog}) ---\n${tail(apiLog)}` +
          `\n--- etcd log tail (${etcdLog}) ---\n${tail(etcdLog, 15)}`,
      );
    });

    const kubeconfigPath = join(dir, 'kubeconfig');
    writeKubeconfig(kubeconfigPath, { server, caFile: pki.caCert, certFile: pki.adminCert, keyFile: pki.adminKey });
    const record: PidsFile = { etcd: etcd.pid, apiserver: apiserver.pid, server, binaries };
    await writeFile(join(dir, 'pids.json'), JSON.stringify(record, null, 2) + '\n');

    const kubectl = (args: string[], o: { input?: string } = {}) =>
      run(binaries.kubectl, ['--kubeconfig', kubeconfigPath, ...args], o.input === undefined ? {} : { input: o.input });

    if (opts.crdDir) {
      const crdDir = resolve(opts.crdDir);
      const files = (await readdir(crdDir))
        .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
        .sort()
        .map((f) => join(crdDir, f));
      if (files.length > 0) {
        const fileArgs = files.flatMap((f) => ['-f', f]);
        const applied = await kubectl(['apply', '--server-side', '--force-conflicts', ...fileArgs]);
        if (applied.code !== 0) throw new Error(`test control plane: applying CRDs from ${crdDir} failed:\n${applied.stderr}`);
        const waited = await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
        if (waited.code !== 0) throw new Error(`test control plane: CRDs from ${crdDir} not Established:\n${waited.stderr}`);
        say(`applied ${files.length} file(s) from ${crdDir}`);
      }
    }

    say(`kube-apiserver ${server} ready in ${Date.now() - started} ms (dir ${dir}${keep ? ', keep' : ''})`);
    return {
      dir,
      kubeconfigPath,
      server,
      binaries,
      pids: { etcd: etcd.pid, apiserver: apiserver.pid },
      etcdUrl,
      tls: { caFile: pki.caCert, adminCertFile: pki.adminCert, adminKeyFile: pki.adminKey },
      kubectl,
      // Throwaway control planes are killed outright; kept ones (persistent etcd data) shut down gracefully.
      stop: () => stopNow(keep ? 10_000 : 0),
    };
  } catch (e) {
    const keepDirForDebug = process.env['WORLDLINE_KEEP_FAILED_CONTROLPLANE'] === '1';
    if (keepDirForDebug) {
      stopped = true;
      await terminate(procs, 0);
      live.delete(registration);
    } else {
      await stopNow(0);
    }
    throw e;
  }
}
