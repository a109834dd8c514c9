// Runs one check command on a candidate, in the sandbox a world runs in (no network, limits read back,
// wall time = the check's timeout), over the check's view (materialize.ts): candidate bytes, with bound
// verifiers staged from PRIME. The verdict is the exit status the agent itself observed — 0 is PASS,
// anything else FAIL; a check refused while it was set up is REFUSED with the refusal's code, and a
// transient failure (an errno, core/errors.ts) rejects, so that the Check is retried. Nothing the check writes
// (report files included) is read; its scratch layer is thrown away with the rest of its directory.
import { classifyError } from '../../core/errors.js';
import { existsSync, rmSync } from 'node:fs';
import { WorldCgroup } from '../sandbox/cgroup.js';
import { exitFileFor } from '../sandbox/supervisor-record.js';
import type { ExitReason, RunningWorkload } from '../sandbox/supervise.js';
import { mountRunDisk } from '../sandbox/disk-image.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { executedVerifierIdentity, mountCheckRoot, prepareCheckLayers, type CheckRoot } from './materialize.js';
import { runCgroup, runRootfs, startRun, type SupervisedRunSpec } from '../sandbox/supervised-run.js';

export const CHECK_ENV_BASE = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8'];

export interface CheckRunSpec extends SupervisedRunSpec {
  /** Identifies this run (its directory and cgroup): [A-Za-z0-9-]+. */
  runId: string;
  /** Parent directory of check runs (in the node store, on a filesystem that supports idmapped mounts). */
  checksDir: string;
  checkName: string;
  roots: CheckRoot[];
  /** The stored candidate's directory (candidates/<hex>); its name is the subject digest. */
  candidateDir: string;
  subject: string;
  requirementHash: string;
  /** The verifier identity the policy authorizes (from PRIME's resolved verifier list). */
  verifierIdentity: string;
  /** Where the check's output goes (never interpreted). */
  outputFile: string;
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

/** The record of one finished run of a check (either profile). */
export function executionRecord(
  spec: Pick<CheckRunSpec, 'checkName' | 'requirementHash' | 'verifierIdentity' | 'subject'>,
  executedVerifierIdentity: string,
  exit: ExecutionRecord['exit'],
  startedAt: string,
  finishedAt: string,
): ExecutionRecord {
  return { check: spec.checkName, requirementHash: spec.requirementHash, verifierIdentity: spec.verifierIdentity, executedVerifierIdentity, subject: spec.subject, exit, startedAt, finishedAt };
}

export async function runCheck(spec: CheckRunSpec): Promise<CheckResult> {
  const now = spec.now ?? (() => new Date());
  const paths = worldPaths(spec.checksDir, spec.runId);
  let cgroup: WorldCgroup | undefined;
  let workload: RunningWorkload | undefined;
  // A run a previous agent started and did not finish (its workload outlives the agent under its own
  // supervisor): its processes are killed through its cgroup and everything it had is removed, then the
  // Check runs again from scratch on the same candidate.
  const previous = WorldCgroup.attach(spec.cgroups, 'worldline', `check-${spec.runId}`);
  if (existsSync(paths.dir) || previous.dirs().some((d) => existsSync(d))) throwTeardownErrors(await teardownRun(paths, previous, () => previous.killAll()));
  rmSync(exitFileFor(spec.outputFile), { force: true });
  try {
    const made = runCgroup(spec, `check-${spec.runId}`);
    cgroup = made.cgroup;
    // The scratch upper layers' own filesystem of the reserved size (disk-image.ts), read back.
    if (spec.ephemeralStorageBytes !== undefined) await mountRunDisk(paths, spec.ephemeralStorageBytes);
    await prepareCheckLayers(paths, spec.roots, spec.candidateDir);
    runRootfs(spec, paths, spec.roots.map((r) => ({ rootKey: r.rootKey, payload: r.basePayload, path: r.path })), { mountRoot: mountCheckRoot(spec.roots) });
    // What is mounted now is what runs: hash the staged verifiers through the check's own view.
    const executed = executedVerifierIdentity(paths, spec.roots).identity;
    const startedAt = now().toISOString();
    workload = await startRun(spec, paths, cgroup, made.readback, spec.outputFile);
    const end = await workload.done;
    const finishedAt = now().toISOString();
    const record = executionRecord(spec, executed, { code: end.code, signal: end.signal, reason: end.reason }, startedAt, finishedAt);
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
