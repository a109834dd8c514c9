// `worldline logs` and `worldline diff` (as a kubectl plugin: `kubectl worldline logs|diff`): a World's
// output and its candidate's change, read through the Kubernetes API server's aggregated API
// view.worldline.dev, so the cluster authenticates and authorizes the caller (docs/security-model.md).
// The bytes come from the World's node; nothing here reads a node's disk.
import { parseArgs } from 'node:util';
import { worldViewPath } from '../crds/api-group.js';
import { ApiError } from '../kube/api-error.js';
import { httpClientFor } from '../kube/http.js';
import { WORLD_COMMAND_OPTIONS, worldCluster } from './world-cluster.js';
import type { Output } from './receipts-verify.js';

export const LOGS_USAGE = `usage: worldline logs WORLD [-n NAMESPACE] [-f] [--kubeconfig PATH]

Prints what the World's agent wrote (stdout and stderr), through the Kubernetes API.
  -f, --follow        keep printing while the World runs; ends when its run does
  -n, --namespace NS  the World's namespace (default: the kubeconfig context's, else "default")
Needs: get worlds (worldline.dev) and get worlds/log (view.worldline.dev) on that World.
Exit status: 0 printed; 1 refused or failed (the reason is printed); 2 usage error.`;

export const DIFF_USAGE = `usage: worldline diff WORLD [-n NAMESPACE] [--stat | --name-only] [--kubeconfig PATH]

Prints the World's captured candidate against the generation it was forked from, through the
Kubernetes API: a unified diff for text files, one line for a binary, too-large, mode or owner change.
  --stat              changed paths with added/removed line counts, like git diff --stat
  --name-only         changed paths only
  -n, --namespace NS  the World's namespace (default: the kubeconfig context's, else "default")
Needs: get worlds (worldline.dev) and get worlds/diff (view.worldline.dev) on that World.
Exit status: 0 printed; 1 refused or failed (the reason is printed); 2 usage error.`;

interface Streams extends Output {
  /** Raw bytes to standard output (a diff or log is not necessarily UTF-8). */
  write(chunk: Buffer): Promise<void>;
}

export async function runWorldView(which: 'logs' | 'diff', args: readonly string[], io: Streams): Promise<number> {
  const usage = which === 'logs' ? LOGS_USAGE : DIFF_USAGE;
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        ...WORLD_COMMAND_OPTIONS,
        ...(which === 'logs' ? { follow: { type: 'boolean', short: 'f' } } : { stat: { type: 'boolean' }, 'name-only': { type: 'boolean' } }),
      },
      strict: true,
    });
  } catch (err) {
    io.err(`worldline ${which}: ${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help) {
    io.out(`${usage}\n`);
    return 0;
  }
  const [world, ...extra] = parsed.positionals;
  if (world === undefined || extra.length > 0) {
    io.err(`worldline ${which}: name exactly one World\n${usage}\n`);
    return 2;
  }
  if (v.stat && v['name-only']) {
    io.err(`worldline diff: --stat and --name-only exclude each other\n${usage}\n`);
    return 2;
  }
  const { kc, namespace } = worldCluster(v);
  const sub = which === 'logs' ? 'log' : 'diff';
  const query = which === 'logs' ? (v.follow ? { follow: 'true' } : {}) : { format: v.stat ? 'stat' : v['name-only'] ? 'name-only' : 'patch' };
  const http = httpClientFor(kc);
  try {
    const res = await http.stream({
      path: worldViewPath(namespace, world, sub),
      query,
      // A followed log may be quiet for as long as the World runs.
      timeoutMs: v.follow ? 0 : 60_000,
    });
    for await (const chunk of res) await io.write(chunk as Buffer);
    if (res.headers['x-worldline-truncated'] === 'true') io.err('worldline diff: the output was truncated (its last line says what was left out)\n');
    return 0;
  } catch (err) {
    const msg = err instanceof ApiError ? `${err.message} (HTTP ${err.statusCode})` : (err as Error).message;
    io.err(`worldline ${which}: ${msg}\n`);
    return 1;
  }
}
