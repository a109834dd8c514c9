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
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { controlPlaneBinaries, type ControlPlaneBinaries } from './binaries.js';
import { ensurePki, FRONT_PROXY_CLIENT_NAME, writeKubeconfig, type Pki } from './pki.js';
import { choosePorts } from './ports.js';
import { alive, installHandlers, killGroup, launch, live, run, sleep, tail, terminate, type KubectlResult, type Live, type Proc } from './processes.js';
import { httpGet, httpsGet, waitFor } from './probes.js';

export { controlPlaneVersions } from './binaries.js';
export type { ControlPlaneBinaries } from './binaries.js';

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

/** The control plane's directory: `fixed` (refused while a control plane recorded there still runs), or a new temporary one. */
function controlPlaneDir(fixed: string | undefined): string {
  if (!fixed) return mkdtempSync(join(tmpdir(), 'worldline-controlplane-'));
  const dir = resolve(fixed);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pidsFile = join(dir, 'pids.json');
  if (!existsSync(pidsFile)) return dir;
  const rec = JSON.parse(readFileSync(pidsFile, 'utf8')) as PidsFile;
  if (!alive(rec.etcd) && !alive(rec.apiserver)) return dir;
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
  return dir;
}

function etcdArgs(dir: string, etcdUrl: string, peerUrl: string): string[] {
  return [
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
  ];
}

function apiServerArgs(dir: string, etcdUrl: string, apiPort: number, pki: Pki): string[] {
  return [
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
    // The front proxy, so aggregated APIs (worldline's view.worldline.dev) are served as in a real cluster;
    // with aggregator routing the API server dials an APIService's endpoints, not its (absent) ClusterIP.
    `--requestheader-client-ca-file=${pki.frontProxyCaCert}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_NAME}`,
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${pki.proxyClientCert}`,
    `--proxy-client-key-file=${pki.proxyClientKey}`,
    '--enable-aggregator-routing=true',
  ];
}

/** Applies every CRD file in `crdDir` and waits until all are Established. */
async function applyCrds(crdDir: string, kubectl: ControlPlane['kubectl'], say: (msg: string) => void): Promise<void> {
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

async function waitEtcd(etcdUrl: string, etcdLog: string, deadline: number, procs: Proc[]): Promise<void> {
  await waitFor(`etcd at ${etcdUrl}/health`, deadline, procs, async () => {
    const r = await httpGet(`${etcdUrl}/health`);
    return r.status === 200 && r.body.includes('"health":"true"');
  }).catch((e: Error) => {
    throw new Error(`${e.message}\n--- etcd log tail (${etcdLog}) ---\n${tail(etcdLog)}`);
  });
}

async function waitApiServer(server: string, pki: Pki, logs: { apiLog: string; etcdLog: string }, deadline: number, procs: Proc[]): Promise<void> {
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  await waitFor(`kube-apiserver ${server}/readyz`, deadline, procs, async () => {
    const r = await httpsGet(`${server}/readyz`, tls);
    return r.status === 200;
  }).catch((e: Error) => {
    throw new Error(
      `${e.message}\n--- kube-apiserver log tail (${logs.apiLog}) ---\n${tail(logs.apiLog)}` +
        `\n--- etcd log tail (${logs.etcdLog}) ---\n${tail(logs.etcdLog, 15)}`,
    );
  });
}

/** Starts etcd + kube-apiserver; resolves once /readyz is ok (and CRDs from `crdDir` are Established). */
export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const binaries = controlPlaneBinaries();
  const keep = opts.keep ?? false;
  const started = Date.now();
  const say = (msg: string) => {
    if (!opts.quiet) process.stderr.write(`[controlplane] ${msg}\n`);
  };

  const dir = controlPlaneDir(opts.dir);
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

    const start = (bin: string, args: string[], log: string): Proc => {
      const p = launch(bin, args, log, keep);
      procs.push(p);
      registration.pids.push(p.pid);
      return p;
    };
    const etcd = start(binaries.etcd, etcdArgs(dir, etcdUrl, peerUrl), etcdLog);
    await waitEtcd(etcdUrl, etcdLog, deadline, procs);
    const apiserver = start(binaries.apiserver, apiServerArgs(dir, etcdUrl, apiPort, pki), apiLog);
    await waitApiServer(server, pki, { apiLog, etcdLog }, deadline, procs);

    const kubeconfigPath = join(dir, 'kubeconfig');
    writeKubeconfig(kubeconfigPath, { server, caFile: pki.caCert, certFile: pki.adminCert, keyFile: pki.adminKey });
    const record: PidsFile = { etcd: etcd.pid, apiserver: apiserver.pid, server, binaries };
    await writeFile(join(dir, 'pids.json'), JSON.stringify(record, null, 2) + '\n');

    const kubectl = (args: string[], o: { input?: string } = {}) =>
      run(binaries.kubectl, ['--kubeconfig', kubeconfigPath, ...args], o.input === undefined ? {} : { input: o.input });

    if (opts.crdDir) await applyCrds(resolve(opts.crdDir), kubectl, say);

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
