// Runs one check command on a candidate, in the sandbox a world runs in (no network, limits read back,
// wall time = the check's timeout), over the check's view (materialize.ts): candidate bytes, with bound
// verifiers staged from PRIME. The verdict is the exit status the agent itself observed — 0 is PASS,
// anything else FAIL; a check refused while it was set up is REFUSED with the refusal's code, and a
// transient failure (an errno, core/errors.ts) rejects, so that the Check is retried. Nothing the check writes
// (report files included) is read; its scratch layer is thrown away with the rest of its directory.
import { classifyError } from '../../core/errors.js';
import type { NsName } from '../../native/index.js';
import { WorldCgroup, type CgroupLayout, type CgroupLimits, type CgroupReadback } from '../sandbox/cgroup.js';
import { assembleRootfs, idMap } from '../sandbox/rootfs.js';
import { startWorkload, type ExitReason, type RunningWorkload, type StartHooks } from '../sandbox/supervise.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { executedVerifierIdentity, mountCheckRoot, prepareCheckLayers, type CheckRoot } from './materialize.js';

export const CHECK_ENV_BASE = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8'];

export interface CheckRunSpec {
  /** Identifies this run (its directory and cgroup): [A-Za-z0-9-]+. */
  runId: string;
  /** Parent directory of check runs (in the node store, on a filesystem that supports idmapped mounts). */
  checksDir: string;
  checkName: string;
  argv: string[];
  /** Environment of the check (forwarded variables already resolved), NAME=value. */
  env: string[];
  /** Working directory inside the sandbox (usually the first Root's path). */
  cwd: string;
  runAsUid: number;
  runAsGid: number;
  home: string;
  roots: CheckRoot[];
  /** The stored candidate's directory (candidates/<hex>); its name is the subject digest. */
  candidateDir: string;
  subject: string;
  requirementHash: string;
  /** The verifier identity the policy authorizes (from PRIME's resolved verifier list). */
  verifierIdentity: string;
  idBase: number;
  idCount: number;
  limits: CgroupLimits;
  timeoutMs: number;
  outputLimitBytes: number;
  /** Where the check's output goes (never interpreted). */
  outputFile: string;
  cgroups: CgroupLayout;
  agentNs: Record<NsName, string>;
  /** The isolation gate between "sandbox ready" and "check runs" (isolation/isolation-gate.ts), given the limits read back. */
  gate?: (cgroup: CgroupReadback) => StartHooks;
  now?: () => Date;
}

export interface ExecutionRecord {
  check: string;
  requirementHash: string;
  verifierIdentity: string;
  executedVerifierIdentity: string;
  subject: string;
  exit: { code: number | null; signal: string | null; reason: ExitReason };
  startedAt: string;
  finishedAt: string;
}

export type CheckResult =
  | { verdict: 'PASS' | 'FAIL'; record: ExecutionRecord }
  | { verdict: 'REFUSED'; code: string; message: string };

export async function runCheck(spec: CheckRunSpec): Promise<CheckResult> {
  const now = spec.now ?? (() => new Date());
  const paths = worldPaths(spec.checksDir, spec.runId);
  let cgroup: WorldCgroup | undefined;
  let workload: RunningWorkload | undefined;
  try {
    cgroup = WorldCgroup.create(spec.cgroups, 'worldline', `check-${spec.runId}`);
    const readback = cgroup.applyAndVerify(spec.limits);
    await prepareCheckLayers(paths, spec.roots, spec.candidateDir);
    assembleRootfs({
      paths,
      roots: spec.roots.map((r) => ({ rootKey: r.rootKey, payload: r.basePayload, path: r.path })),
      idBase: spec.idBase,
      idCount: spec.idCount,
      uid: spec.runAsUid,
      gid: spec.runAsGid,
      home: spec.home,
      mountRoot: mountCheckRoot(spec.roots),
    });
    // What is mounted now is what runs: hash the staged verifiers through the check's own view.
    const executed = executedVerifierIdentity(paths, spec.roots).identity;
    const map = idMap(spec.idBase, spec.idCount);
    const startedAt = now().toISOString();
    workload = await startWorkload(
      {
        rootfs: paths.rootfs,
        argv: spec.argv,
        env: spec.env,
        cwd: spec.cwd,
        uid: spec.runAsUid,
        gid: spec.runAsGid,
        uidMap: map,
        gidMap: map,
        newNetwork: true,
        cgroup,
        outputFile: spec.outputFile,
        outputLimitBytes: spec.outputLimitBytes,
        wallTimeMs: spec.timeoutMs,
      },
      spec.agentNs,
      spec.gate?.(readback),
    );
    const end = await workload.done;
    const finishedAt = now().toISOString();
    const record: ExecutionRecord = {
      check: spec.checkName,
      requirementHash: spec.requirementHash,
      verifierIdentity: spec.verifierIdentity,
      executedVerifierIdentity: executed,
      subject: spec.subject,
      exit: { code: end.code, signal: end.signal, reason: end.reason },
      startedAt,
      finishedAt,
    };
    const passed = end.reason === 'Completed' && end.code === 0 && end.signal === null;
    return { verdict: passed ? 'PASS' : 'FAIL', record };
  } catch (err) {
    // A refusal (CheckSetupError, CgroupError, ObservationRefused, StartRefused…) is the verdict; anything
    // else (an errno such as EBUSY, a bug) is thrown on, for the reconciler to retry.
    const failure = classifyError(err);
    if (!failure.terminal) throw err;
    return { verdict: 'REFUSED', code: failure.code, message: failure.message };
  } finally {
    throwTeardownErrors(await teardownRun(paths, cgroup, () => workload?.kill()));
  }
}
