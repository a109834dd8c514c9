// The pieces of the end-to-end test's cluster: the host prepared, the worldline image and the kind node
// image built (each cached by version by its own script), a kind cluster created from a kind-config file,
// the worldline image loaded into its nodes, and helm built. Each step is one project script, the same
// ones the quick start (docs/quickstart-kind.md) runs, so the test exercises the user's path.
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { parse } from 'yaml';
import { lastLine, must, run, type RunResult } from './commands.js';

export interface ClusterPieces {
  /** The worldline image, e.g. worldline.local/worldline:0.1.0. */
  image: string;
  kind: string;
  helm: string;
  kubectl: string;
  kubeconfig: string;
  cluster: string;
  nodes: string[];
  timings: Record<string, number>;
}

const HOUR = 3_600_000;

async function timed<T>(timings: Record<string, number>, name: string, f: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    timings[name] = Math.round((Date.now() - t0) / 1000);
  }
}

/** Builds (or finds cached) every piece and creates (or reuses) the cluster `name` from `config`. */
export async function clusterPieces(repo: string, name: string, config: string): Promise<ClusterPieces> {
  const timings: Record<string, number> = {};
  const sh = (script: string, ...args: string[]) => must('bash', [join(repo, script), ...args], { cwd: repo, timeoutMs: 2 * HOUR });
  await timed(timings, 'host-prep', () => sh('scripts/kind/host-prep.sh'));
  const image = await timed(timings, 'worldline-image', async () => lastLine(await sh('scripts/images/build-local.sh')));
  await timed(timings, 'node-image', () => sh('scripts/kind/build-node-image.sh'));
  const kind = await timed(timings, 'kind', async () => lastLine(await sh('scripts/kind/install-kind.sh')));
  const helm = await timed(timings, 'helm', async () => lastLine(await sh('scripts/helm/build.sh')));
  const kubectl = join(lastLine(await sh('scripts/controlplane/build.sh')), 'kubectl');
  const kubeconfig = await timed(timings, 'cluster', async () => lastLine(await sh('scripts/kind/create-cluster.sh', name, join(repo, config))));
  await timed(timings, 'image-load', () => must(kind, ['load', 'docker-image', image, '--name', name], { timeoutMs: HOUR }));
  const nodes = (await must(kind, ['get', 'nodes', '--name', name])).split('\n').map((l) => l.trim()).filter(Boolean).sort();
  return { image, kind, helm, kubectl, kubeconfig, cluster: name, nodes, timings };
}

/**
 * Deletes each cluster of `names` that exists: one an interrupted run left behind (the machine stopped
 * mid-test, or a run was killed). It would share the host folders of the same kind config, and a kept
 * quick-start cluster would already hold the release the page installs. Returns the names it deleted.
 */
export async function removeLeftoverClusters(repo: string, names: readonly string[], config: string): Promise<string[]> {
  await must('bash', [join(repo, 'scripts/kind/host-prep.sh')], { cwd: repo, timeoutMs: 2 * HOUR });
  const kind = lastLine(await must('bash', [join(repo, 'scripts/kind/install-kind.sh')], { cwd: repo, timeoutMs: 2 * HOUR }));
  const existing = new Set((await must(kind, ['get', 'clusters'])).split('\n').map((l) => l.trim()).filter(Boolean));
  const removed: string[] = [];
  for (const name of names) {
    if (!existing.has(name)) continue;
    await must('bash', [join(repo, 'scripts/kind/delete-cluster.sh'), name, join(repo, config)], { cwd: repo, timeoutMs: 300_000 });
    removed.push(name);
  }
  return removed;
}

/** What a failed install looked like: pods, the namespace's events and its pods' last log lines. */
export async function installDiagnostics(p: ClusterPieces, namespace: string): Promise<string> {
  const k = (args: string[]) => run(p.kubectl, ['--kubeconfig', p.kubeconfig, ...args]).then((r) => `$ kubectl ${args.join(' ')}\n${r.stdout}${r.stderr}`);
  return (await Promise.all([
    k(['get', 'pods', '-A', '-o', 'wide']),
    k(['get', 'events', '-n', namespace, '--sort-by=.lastTimestamp']),
    k(['logs', '-n', namespace, '-l', 'app.kubernetes.io/component=node-agent', '--all-containers', '--tail=40', '--prefix']),
    k(['logs', '-n', namespace, '-l', 'app.kubernetes.io/component=controller', '--all-containers', '--tail=20', '--prefix']),
  ])).join('\n');
}

export function kubectlIn(p: ClusterPieces) {
  return (args: readonly string[], input?: string): Promise<RunResult> =>
    run(p.kubectl, ['--kubeconfig', p.kubeconfig, ...args], input === undefined ? {} : { input });
}

export async function kubectlMust(p: ClusterPieces, args: readonly string[], input?: string): Promise<string> {
  return must(p.kubectl, ['--kubeconfig', p.kubeconfig, ...args], input === undefined ? {} : { input });
}

export function helmIn(p: ClusterPieces, args: readonly string[]): Promise<string> {
  return must(p.helm, ['--kubeconfig', p.kubeconfig, ...args], { timeoutMs: 900_000 });
}

/** Runs `argv` inside kind node `node` (a container) and returns its stdout. */
export function inNode(node: string, argv: readonly string[], input?: string): Promise<string> {
  return must('docker', ['exec', ...(input === undefined ? [] : ['-i']), node, ...argv], input === undefined ? {} : { input });
}

/** Every process of node `node` as "pid args" lines, from the host's view (docker top). */
export async function nodeProcesses(node: string): Promise<string[]> {
  const out = await must('docker', ['top', node, '-eo', 'pid,args']);
  return out.split('\n').slice(1).map((l) => l.trim()).filter(Boolean);
}

/**
 * Sends one merge PATCH to `apiPath` authenticated by `token` alone, straight to the API server (kubectl
 * patch reads the object first, which would test the reader's RBAC instead of the write's admission).
 */
export async function patchAs(p: ClusterPieces, token: string, apiPath: string, body: unknown): Promise<{ status: number; body: string }> {
  const admin = parse(readFileSync(p.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string; 'certificate-authority-data': string } }[] };
  const cluster = admin.clusters[0]?.cluster;
  if (!cluster) throw new Error(`${p.kubeconfig} names no cluster`);
  const url = new URL(apiPath, cluster.server);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: 'PATCH',
        ca: Buffer.from(cluster['certificate-authority-data'], 'base64'),
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/merge-patch+json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
