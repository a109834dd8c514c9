// The helm CLI for the chart tests: built from the Go module proxy by scripts/helm/build.sh (cached by
// version, so this is instant after the first build), run with argv arrays and throwaway helm home
// directories, and `helm template` of charts/worldline parsed into objects.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../../crds/generate.js';
import { run, type KubectlResult } from '../../scripts/controlplane/processes.js';

export const CHART_DIR = join(repoRoot(), 'charts', 'worldline');

let helmPath: Promise<string> | undefined;

/** The path of the pinned helm binary; builds it on first use. Fails saying what is missing (Go, network). */
export function ensureHelm(): Promise<string> {
  helmPath ??= (async () => {
    const script = join(repoRoot(), 'scripts', 'helm', 'build.sh');
    const r = await run('bash', [script]);
    const path = r.stdout.trim().split('\n').pop() ?? '';
    if (r.code !== 0 || !path) {
      throw new Error(`helm is needed by the chart tests and scripts/helm/build.sh could not provide it (exit ${r.code}); it builds helm from the Go module proxy and needs Go >= 1.26 (PATH or /usr/local/go/bin):\n${r.stderr.split('\n').slice(-15).join('\n')}`);
    }
    return path;
  })();
  return helmPath;
}

/** Runs helm with its config, cache and data homes in a temporary directory. Never rejects on a non-zero exit. */
export async function helm(args: string[]): Promise<KubectlResult> {
  const bin = await ensureHelm();
  const home = mkdtempSync(join(tmpdir(), 'worldline-helm-home-'));
  try {
    return await run(bin, args, {
      env: { ...process.env, HELM_CONFIG_HOME: join(home, 'config'), HELM_CACHE_HOME: join(home, 'cache'), HELM_DATA_HOME: join(home, 'data') },
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  release?: string;
  namespace?: string;
  /** Values merged over values.yaml (written to a temporary values file). */
  values?: Record<string, unknown>;
  /** Also render charts/worldline/crds/ (helm template --include-crds). */
  includeCrds?: boolean;
}

/** Runs `helm template`; returns helm's result and the values file it used (removed afterwards). */
export async function helmTemplate(opts: RenderOptions = {}): Promise<KubectlResult> {
  const dir = mkdtempSync(join(tmpdir(), 'worldline-chart-values-'));
  try {
    const valuesFile = join(dir, 'values.json');
    writeFileSync(valuesFile, JSON.stringify(opts.values ?? {}));
    return await helm(['template', opts.release ?? 'worldline', CHART_DIR, '--namespace', opts.namespace ?? 'worldline-system', '--values', valuesFile, ...(opts.includeCrds ? ['--include-crds'] : [])]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `helm template` parsed into objects; throws with helm's error output when rendering fails. */
export async function renderChart(opts: RenderOptions = {}): Promise<K8sObject[]> {
  const r = await helmTemplate(opts);
  if (r.code !== 0) throw new Error(`helm template failed (exit ${r.code}):\n${r.stderr}`);
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(r.stdout)) {
    if (doc.errors.length > 0) throw new Error(`helm template produced invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const obj = doc.toJS() as K8sObject | null;
    if (obj) out.push(obj);
  }
  return out;
}

/** The one object of a kind and name; throws listing what was rendered when absent. */
export function findObject(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`rendered chart has no ${kind} ${name}; it has: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}
