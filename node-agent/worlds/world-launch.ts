// Turns a World bound to this node into a WorldRunSpec: the Roots it forks (read through the store),
// who the agent runs as, its environment, credential, network and limits. Refusals carry a code.
import { lstatSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { World, WorldSpec } from '../../crds/index.js';
import { parseDuration, parseQuantity } from '../../crds/common.js';
import { Refusal } from '../../core/errors.js';
import { isNotFound } from '../../kube/api-error.js';
import { objectPath } from '../../kube/api-paths.js';
import { httpClientFor } from '../../kube/http.js';
import type { Manifest } from '../../core/manifest.js';
import type { NsName } from '../../native/index.js';
import type { AgentConfig } from '../config.js';
import { ID_RANGE } from '../config.js';
import type { WorldResources } from '../admission/admission-policy.js';
import { AllowlistEntryError, parseAllowlist } from '../network/allowlist.js';
import { withProxyEnv } from '../network/world-network.js';
import type { CgroupLayout } from '../sandbox/cgroup.js';
import { checkRoutingSettled } from '../store/routing.js';
import { StoreError } from '../store/store-errors.js';
import type { Store } from '../store/open-store.js';
import { refs } from '../api-refs.js';
import type { WorldRoot, WorldRunSpec } from './run-world.js';
import { generationManifest } from '../store/world-records.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { diskBytes, MIN_EPHEMERAL_STORAGE_BYTES } from '../sandbox/disk-image.js';
import type { RunDiskPool } from '../sandbox/disk-pool.js';

export class LaunchRefused extends Refusal {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'LaunchRefused';
  }
}

export interface LaunchContext {
  store: Store;
  kubeConfig: KubeConfig;
  config: AgentConfig;
  cgroups: CgroupLayout;
  agentNs: Record<NsName, string>;
  rootPaths: (rootName: string) => string | undefined;
  /** The network the Policy governing these Roots gives Worlds that set no spec.network (none without a Policy). */
  policyNetwork?: (roots: string[]) => WorldSpec['network'];
  /** Run disks made ahead (sandbox/disk-pool.ts); without it every launch makes its own. */
  disks?: Pick<RunDiskPool, 'take' | 'refill'>;
}

const BASE_ENV = ['PATH=/usr/local/bin:/usr/bin:/bin', 'LANG=C.UTF-8'];
const HOME = '/home/agent';

async function readCredential(kc: KubeConfig, namespace: string, c: { secretName: string; key: string }): Promise<Buffer> {
  try {
    const secret = await httpClientFor(kc).request<{ data?: Record<string, string> }>({ path: objectPath(refs.Secret, c.secretName, namespace) });
    const v = secret.data?.[c.key];
    if (v === undefined) throw new LaunchRefused('CREDENTIALS_UNAVAILABLE', `Secret ${namespace}/${c.secretName} has no key "${c.key}"`);
    return Buffer.from(v, 'base64');
  } catch (err) {
    if (isNotFound(err)) throw new LaunchRefused('CREDENTIALS_UNAVAILABLE', `Secret ${namespace}/${c.secretName} does not exist`);
    throw err;
  }
}

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

export async function buildRunSpec(world: Pick<World, 'metadata' | 'spec'>, ctx: LaunchContext): Promise<LaunchPlan> {
  const uid = world.metadata.uid ?? '';
  const ns = world.metadata.namespace ?? '';
  const spec = world.spec;
  const roots: WorldRoot[] = [];
  for (const name of spec.roots) {
    const routing = await checkRoutingSettled(ctx.store, name);
    const { db } = ctx.store;
    const { rootKey, generation } = routing.root;
    // Parsed at capture, not here: a 100k-entry manifest costs ~100 ms to parse and tens of MB to hold for the world's life.
    const manifest = (): Manifest => {
      const m = generationManifest(db, rootKey, generation);
      if (!m) throw new StoreError('LIVE_MAPPING_BROKEN', `generation ${generation} of Root ${name} has no manifest`);
      return m;
    };
    const path = ctx.rootPaths(name) ?? routing.root.nodePath;
    roots.push({ name, rootKey, path, payload: routing.payloadPath, layers: routing.layers, generation, digest: routing.root.digest, manifest });
  }
  const first = roots[0];
  if (!first) throw new LaunchRefused('ROOT_NOT_FOUND', 'the World names no Root');
  const owner = lstatSync(first.layers?.[0] ?? first.payload); // the merged root's owner: its topmost layer's root
  const runAsUid = spec.agent.runAsUser ?? owner.uid;
  const runAsGid = spec.agent.runAsUser ?? owner.gid;
  if (runAsUid >= ID_RANGE || runAsGid >= ID_RANGE) {
    throw new LaunchRefused('RUN_AS_USER_UNMAPPABLE', `the agent would run as ${runAsUid}:${runAsGid}, outside the world's ids 0-${ID_RANGE - 1}; set spec.agent.runAsUser`);
  }
  const cwd = spec.agent.workingDir ?? first.path;
  let credential: { path: string; value: Buffer } | undefined;
  const cred = spec.agent.credentials;
  if (cred) {
    const inRoot = roots.find((r) => isUnder(cred.path, r.path));
    if (inRoot) throw new LaunchRefused('CREDENTIALS_PATH_CONFLICT', `credentials.path ${cred.path} lies inside Root ${inRoot.name} (${inRoot.path}); it would be captured as a change`);
    credential = { path: cred.path, value: await readCredential(ctx.kubeConfig, ns, cred) };
  }
  const r = spec.resources ?? {};
  const cpu = r.cpu !== undefined ? parseQuantity(r.cpu) : undefined;
  const memory = r.memory !== undefined ? parseQuantity(r.memory) : undefined;
  const wall = r.wallTime !== undefined ? parseDuration(r.wallTime) : undefined;
  const out = r.outputBytes !== undefined ? parseQuantity(r.outputBytes) : undefined;
  const disk = r.ephemeralStorage !== undefined ? parseQuantity(r.ephemeralStorage) : undefined;
  for (const [field, v, raw] of [['cpu', cpu, r.cpu], ['memory', memory, r.memory], ['wallTime', wall, r.wallTime], ['outputBytes', out, r.outputBytes], ['ephemeralStorage', disk, r.ephemeralStorage]] as const) {
    if (raw !== undefined && (v === undefined || !(v > 0))) throw new LaunchRefused('RESOURCE_POLICY_INVALID', `spec.resources.${field} "${String(raw)}" is not a positive amount`);
  }
  if (disk !== undefined && disk < MIN_EPHEMERAL_STORAGE_BYTES) {
    throw new LaunchRefused('RESOURCE_POLICY_INVALID', `spec.resources.ephemeralStorage "${String(r.ephemeralStorage)}" is below the smallest run disk of 1Mi`);
  }
  // spec.network, else the governing Policy's default, else None.
  const network = spec.network ?? ctx.policyNetwork?.(spec.roots);
  const policy = network?.policy ?? 'None';
  let env = [...BASE_ENV, `HOME=${HOME}`, ...(spec.agent.env ?? []).map((e) => `${e.name}=${e.value}`)];
  let allow: string[] = [];
  if (policy === 'Allowlist') {
    try {
      parseAllowlist(network?.allow ?? []);
      allow = [...(network?.allow ?? [])];
    } catch (err) {
      if (err instanceof AllowlistEntryError) throw new LaunchRefused('NETWORK_POLICY_INVALID', `spec.network.allow: ${err.message}`);
      throw err;
    }
    env = withProxyEnv(env);
  }
  const requested: Partial<WorldResources> = {
    ...(cpu !== undefined ? { cpuMillis: Math.round(cpu * 1000) } : {}),
    ...(memory !== undefined ? { memoryBytes: Math.floor(memory / 4096) * 4096 } : {}),
    ...(r.pids !== undefined ? { pids: r.pids } : {}),
    ...(wall !== undefined ? { wallTimeSeconds: Math.ceil(wall) } : {}),
    ...(out !== undefined ? { outputBytes: Math.floor(out) } : {}),
    ...(disk !== undefined ? { ephemeralStorageBytes: diskBytes(disk) } : {}),
  };
  const runSpec: WorldRunSpec = {
    uid,
    paths: worldPaths(ctx.store.layout.worlds, uid),
    roots,
    argv: spec.agent.command,
    env,
    cwd,
    runAsUid,
    runAsGid,
    home: HOME,
    ...(credential ? { credential } : {}),
    newNetwork: policy !== 'Shared',
    // The id range is the run's reservation (applyReservation); until then it maps nothing.
    idBase: 0,
    idCount: ID_RANGE,
    limits: {
      ...(cpu !== undefined ? { cpuMillis: Math.round(cpu * 1000) } : {}),
      ...(memory !== undefined ? { memoryBytes: Math.floor(memory / 4096) * 4096 } : {}),
      ...(r.pids !== undefined ? { pids: r.pids } : {}),
    },
    wallTimeMs: Math.round((wall ?? ctx.config.defaultWallTimeSeconds) * 1000),
    outputLimitBytes: Math.floor(out ?? ctx.config.defaultOutputBytes),
    cgroups: ctx.cgroups,
    agentNs: ctx.agentNs,
    candidatesDir: ctx.store.layout.candidates,
    ...(ctx.disks ? { disks: ctx.disks } : {}),
  };
  return {
    spec: runSpec,
    requested,
    network: { policy, allow },
    envNames: env.map((kv) => kv.slice(0, kv.indexOf('='))),
    credentialPaths: credential ? [credential.path] : [],
  };
}

/** A World's run, plus what admission and the isolation gate need to know about it. */
export interface LaunchPlan {
  spec: WorldRunSpec;
  /** Resources the World asks for (unset fields take the node's per-world defaults at admission). */
  requested: Partial<WorldResources>;
  network: { policy: 'None' | 'Allowlist' | 'Shared'; allow: string[] };
  envNames: string[];
  credentialPaths: string[];
}

/** Puts the reservation on the run: its id range, and the admitted cgroup limits, wall time, output limit and disk size. */
export function applyReservation(spec: WorldRunSpec, r: { reserve: WorldResources; idBase: number; idCount: number }): WorldRunSpec {
  const reserve = r.reserve;
  return {
    ...spec,
    idBase: r.idBase,
    idCount: r.idCount,
    limits: { cpuMillis: reserve.cpuMillis, memoryBytes: reserve.memoryBytes, pids: reserve.pids },
    wallTimeMs: reserve.wallTimeSeconds * 1000,
    outputLimitBytes: reserve.outputBytes,
    ephemeralStorageBytes: reserve.ephemeralStorageBytes,
  };
}
