// Where the control-plane binaries come from: the pins in versions.env and the cache that
// scripts/controlplane/build.sh fills (one directory per Kubernetes version).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ControlPlaneBinaries {
  apiserver: string;
  etcd: string;
  kubectl: string;
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
