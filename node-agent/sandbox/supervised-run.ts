// The one supervised run worlds and checks share: what runs and as whom (the addon's spawn options,
// less what the run fills in itself), its id range, limits and gate; and the step that starts it —
// cgroup with limits read back, root filesystem, the sandboxed workload behind its gate. The caller
// admits and takes an id slot before, and ends with teardownRun (teardown-run.ts) after.
import type { NsName, SandboxSpawnOptions } from '../../native/index.js';
import { WorldCgroup, type CgroupLayout, type CgroupLimits, type CgroupReadback } from './cgroup.js';
import { assembleRootfs, type RootfsSpec, type RootMount } from './rootfs.js';
import { idMap } from './idmap-namespace.js';
import type { WorldPaths } from './run-paths.js';
import { startWorkload, type RunningWorkload, type StartHooks } from './supervise.js';
import { supervisorCgroupProcs } from './supervisor-cgroup.js';

/** What both a World's run and a Check's run are. */
export interface SupervisedRunSpec extends Pick<SandboxSpawnOptions, 'argv' | 'env' | 'cwd' | 'newNetwork'> {
  runAsUid: number;
  runAsGid: number;
  home: string;
  /** The run's own host id range (its id slot). */
  idBase: number;
  idCount: number;
  limits: CgroupLimits;
  wallTimeMs: number;
  outputLimitBytes: number;
  /** Size of the run's own filesystem for its upper layers (disk-image.ts); unset: the layers stay on the store's filesystem. */
  ephemeralStorageBytes?: number;
  cgroups: CgroupLayout;
  agentNs: Record<NsName, string>;
  /** The isolation gate between "sandbox ready" and "workload runs" (isolation/isolation-gate.ts), given the limits read back. */
  gate?: (cgroup: CgroupReadback) => StartHooks;
}

/** Creates the run's cgroup (`<kind>-<id>`) with its limits applied and read back; the caller removes it in teardown. */
export function runCgroup(spec: Pick<SupervisedRunSpec, 'cgroups' | 'limits'>, name: string): { cgroup: WorldCgroup; readback: CgroupReadback } {
  const cgroup = WorldCgroup.create(spec.cgroups, 'worldline', name);
  return { cgroup, readback: cgroup.applyAndVerify(spec.limits) };
}

/** Assembles the run's root filesystem over `roots`. */
export function runRootfs(spec: SupervisedRunSpec, paths: WorldPaths, roots: RootMount[], extra: Pick<RootfsSpec, 'credential' | 'mountRoot'> = {}): ReturnType<typeof assembleRootfs> {
  return assembleRootfs({ paths, roots, idBase: spec.idBase, idCount: spec.idCount, uid: spec.runAsUid, gid: spec.runAsGid, home: spec.home, ...extra });
}

/** Starts the workload in its sandbox, through the gate, its output going to `outputFile`. */
export function startRun(spec: SupervisedRunSpec, paths: WorldPaths, cgroup: WorldCgroup, readback: CgroupReadback, outputFile: string): Promise<RunningWorkload> {
  const map = idMap(spec.idBase, spec.idCount);
  return startWorkload(
    {
      rootfs: paths.rootfs,
      argv: spec.argv,
      env: spec.env,
      cwd: spec.cwd,
      uid: spec.runAsUid,
      gid: spec.runAsGid,
      uidMap: map,
      gidMap: map,
      newNetwork: spec.newNetwork,
      cgroup,
      outputFile,
      supervisorCgroupProcs: supervisorCgroupProcs(spec.cgroups),
      outputLimitBytes: spec.outputLimitBytes,
      wallTimeMs: spec.wallTimeMs,
    },
    spec.agentNs,
    spec.gate?.(readback) ?? {},
  );
}
