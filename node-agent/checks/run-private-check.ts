// Runs one private-evaluator-v1 check (docs/architecture.md, "The private evaluator's principals"): the
// check's view of the candidate (candidate bytes, bound verifiers staged from PRIME) is mounted, hashed for
// the executed verifier identity and frozen; the examiner — the Policy's command — runs over the frozen
// input with the staged verifiers of each Root read-only at /run/worldline-verifiers/<Root>, starting
// the candidate's code through its broker; its report is collected and admitted. The verdict is the
// admitted report's: PASS or FAIL. A report that is not admissible is FAIL with REPORT_UNTRUSTED and its
// reasons (it cannot make the Check pass); a boundary that does not hold refuses the run,
// PRIVATE_EVALUATOR_BOUNDARY_FAILED; a candidate that cannot be frozen refuses it, PRIVATE_INPUT_REFUSED.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { classifyError } from '../../core/errors.js';
import { examinerCommandProblem } from '../../core/private-evaluator/examiner-command.js';
import { admitReport, type PrivateRunRecord, type ReportAdmission } from '../../core/private-evaluator/report-admission.js';
import { BoundaryFailed } from '../private-evaluator/check-principals.js';
import { StartRefused } from '../sandbox/supervise.js';
import type { PrivateCheckGate } from './check-gate.js';
import { freezeTree } from '../private-evaluator/freeze-tree.js';
import { runExaminer, VERIFIERS_PATH } from '../private-evaluator/run-examiner.js';
import { mountRunDisk } from '../sandbox/disk-image.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { supervisorCgroupProcs } from '../sandbox/supervisor-cgroup.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';
import { checkRootLayers, executedVerifierIdentity, mergedDirOf, mountCheckViews, prepareCheckLayers } from './materialize.js';
import { executionRecord, type CheckResult, type CheckRunSpec, type ExecutionRecord } from './run-check.js';

/** What a private-evaluator run takes: a check run's identity, view and limits (run-check.ts), and its report's format. */
export type PrivateCheckRunSpec = Pick<
  CheckRunSpec,
  'runId' | 'checksDir' | 'checkName' | 'roots' | 'candidateDir' | 'subject' | 'requirementHash' | 'verifierIdentity' | 'argv' | 'env'
  | 'idBase' | 'idCount' | 'limits' | 'wallTimeMs' | 'outputLimitBytes' | 'ephemeralStorageBytes' | 'cgroups' | 'agentNs' | 'outputFile' | 'now'
> & {
  reportFormat: string;
  /** The check stage's isolation gate, asked at every role's start (check-gate.ts). */
  gate: PrivateCheckGate;
};

export type PrivateCheckResult = CheckResult & {
  admission?: ReportAdmission;
  /** The run's raw record and its report's bytes, kept with the evaluation. */
  privateRun?: { record: PrivateRunRecord; report?: Uint8Array };
};

/** The roles' logs and exit records: in the run's directory, off its disk (mkdir'd before the run). */
function privateLogDir(paths: { dir: string }): string {
  const dir = join(paths.dir, 'logs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** The run's refusal when the gate refused any of its roles. */
function isolationRefused(gate: PrivateCheckGate): StartRefused | undefined {
  const refused = gate.refusals();
  return refused.length > 0 ? new StartRefused('ISOLATION_INSUFFICIENT', `a role of the run is not isolated as spec.isolation.check requires: ${refused.join('; ')}`) : undefined;
}

export async function runPrivateCheck(spec: PrivateCheckRunSpec): Promise<PrivateCheckResult> {
  // Only a staged script under python3 is an examiner (the Policy's schema and controller say so too);
  // a Policy that got past them still runs nothing else.
  const examiner = examinerCommandProblem(spec.argv);
  if (examiner !== undefined) return { verdict: 'REFUSED', code: 'PRIVATE_EXAMINER_INVALID', message: examiner };
  const now = spec.now ?? (() => new Date());
  const paths = worldPaths(spec.checksDir, spec.runId);
  // What an earlier agent left of this run is removed first; the Check then runs from scratch.
  if (existsSync(paths.dir)) throwTeardownErrors(await teardownRun(paths, undefined, () => undefined));
  try {
    // The run's own disk of the reserved size (disk-image.ts), as a legacy check's: the frozen input, every
    // role's copy of it, the case views and the report all live on it, so together they never take more
    // of the node than the Check reserved (a write past it fails ENOSPC inside the run).
    if (spec.ephemeralStorageBytes !== undefined) await mountRunDisk(paths, spec.ephemeralStorageBytes);
    await prepareCheckLayers(paths, spec.roots, spec.candidateDir);
    mountCheckViews(paths, spec.roots, spec.idBase, spec.idCount);
    const executed = executedVerifierIdentity(paths, spec.roots).identity;
    // The frozen input belongs to the examiner (the run's first host id); each Root at its own path.
    const inputs = spec.roots.map((r, i) => ({ frozen: freezeTree(mergedDirOf(paths, r.rootKey), join(paths.layers, `frozen-${i}`), spec.idBase), path: r.path }));
    const verifiers = spec.roots.map((r) => ({ dir: checkRootLayers(paths, r.rootKey).stagingMount, path: `${VERIFIERS_PATH}/${r.name}` }));
    const binding = { run: spec.runId, check: spec.checkName, candidate: spec.subject, verifier: executed };
    const startedAt = now().toISOString();
    const run = await runExaminer({
      dir: join(paths.layers, 'private'), logDir: privateLogDir(paths), hostBase: spec.idBase, agentNs: spec.agentNs, inputs, verifiers,
      argv: spec.argv, env: spec.env, cwd: spec.roots[0]?.path ?? '/', binding, reportFormat: spec.reportFormat,
      cgroups: spec.cgroups, limits: spec.limits, supervisorCgroupProcs: supervisorCgroupProcs(spec.cgroups),
      wallTimeMs: spec.wallTimeMs, outputLimitBytes: spec.outputLimitBytes, gate: spec.gate.gate,
    });
    const finishedAt = now().toISOString();
    copyFileSync(run.outputFile, spec.outputFile);
    // A worker or candidate the gate refused never ran, and the examiner saw its start fail: the run was
    // not the one the Policy allows, whatever its report says (its broker's violation is in the boundary too).
    const refused = isolationRefused(spec.gate);
    if (refused) throw refused;
    if (run.record.boundary.problems.length > 0) throw new BoundaryFailed(run.record.boundary.problems);
    const admission = admitReport(run.record, run.reportBytes, binding);
    const e = run.record.examiner;
    const record = executionRecord(spec, executed, { code: e.code, signal: e.signal, reason: e.reason as ExecutionRecord['exit']['reason'] }, startedAt, finishedAt);
    const privateRun = { record: run.record, ...(run.reportBytes ? { report: run.reportBytes } : {}) };
    return { verdict: admission.classification === 'ADMISSIBLE' ? admission.verdict : 'FAIL', record, admission, privateRun };
  } catch (err) {
    // The examiner refused at the gate: the refusal with what the measurement showed.
    const failure = classifyError(isolationRefused(spec.gate) ?? err);
    if (!failure.terminal) throw err;
    return { verdict: 'REFUSED', code: failure.code, message: failure.message };
  } finally {
    throwTeardownErrors(await teardownRun(paths, undefined, () => undefined));
  }
}
