// One private-evaluator run: the run's principals, the frozen inputs read-only, the staged verifiers
// read-only at /run/worldline-verifiers, a fresh report directory and the examiner broker's socket — all
// in the examiner's own root filesystem and nobody else's — the examiner supervised to its end, candidate
// sessions started through its broker (examiner-broker.ts) each over its own copy of the inputs, then
// every session ended, the boundary checked and the report collected. The result is the run's raw record
// (core/private-evaluator/report-admission.ts reads it) and the report's bytes. Workers and their case
// leases are not built.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROLE_ID, ROLE_PATHS } from '../../core/private-evaluator/principals.js';
import type { PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import type { NsName } from '../../native/index.js';
import { WorldCgroup, type CgroupLayout, type CgroupLimits } from '../sandbox/cgroup.js';
import { BoundaryFailed, CheckPrincipals } from './check-principals.js';
import { ExaminerBroker, type StartSession } from './examiner-broker.js';
import { copyFrozen, type FrozenTree } from './freeze-tree.js';
import { ReportDir, type ReportBinding } from './report-dir.js';
import { assembleRoleRootfs, unmountRoleRootfs, type RoleBind } from './role-rootfs.js';

export const VERIFIERS_PATH = '/run/worldline-verifiers';

export interface ExaminerRunSpec {
  /** The run's own host directory; it must not exist. */
  dir: string;
  /** The run's host ids start here (examiner, worker, candidate). */
  hostBase: number;
  agentNs: Record<NsName, string>;
  /** Frozen inputs (owned by the examiner's host id) and where each appears, read-only. */
  inputs: { frozen: FrozenTree; path: string }[];
  /** Host directories of the verifier files staged from PRIME, and where each appears (read-only, under VERIFIERS_PATH). */
  verifiers: { dir: string; path: string }[];
  argv: string[];
  env: string[];
  cwd: string;
  binding: ReportBinding;
  reportFormat: string;
  cgroups: CgroupLayout;
  limits: CgroupLimits;
  supervisorCgroupProcs: string[];
  wallTimeMs: number;
  outputLimitBytes: number;
}

export interface ExaminerRunResult {
  record: PrivateRunRecord;
  /** The collected report's bytes (absent when it was not collected). */
  reportBytes?: Buffer;
  /** The examiner's stdout and stderr: data the candidate may have shaped, never evidence. */
  outputFile: string;
}

/** The environment of a candidate session: nothing of the examiner's or the node-agent's. */
export const CANDIDATE_ENV = ['PATH=/usr/local/bin:/usr/bin:/bin', 'LANG=C.UTF-8'];

/**
 * Starts one candidate session for the broker: a disposable copy of every frozen input, owned by the
 * candidate and at the same path as the examiner sees it, in the candidate's own root filesystem (no
 * report, no broker, no verifiers), its own cgroup with the run's limits, started as the candidate.
 */
function sessionStarter(spec: ExaminerRunSpec, principals: CheckPrincipals): StartSession {
  const candidateHost = spec.hostBase + ROLE_ID.candidate;
  return async (req, id) => {
    const dir = join(spec.dir, 'sessions', id);
    mkdirSync(dir, { recursive: true, mode: 0o711 });
    const rootfs = join(dir, 'rootfs');
    const outputFile = join(dir, 'output.log');
    let cgroup: WorldCgroup | undefined;
    const cleanup = async (): Promise<void> => {
      const left = unmountRoleRootfs(rootfs);
      cgroup?.killAll();
      cgroup?.remove();
      // Never remove through a mount that is still there.
      if (left.length === 0) rmSync(dir, { recursive: true, force: true });
      await Promise.resolve();
    };
    try {
      const binds = spec.inputs.map((input, k) => ({ source: copyFrozen(input.frozen, join(dir, `input-${k}`), candidateHost), target: input.path, readonly: false }));
      assembleRoleRootfs(rootfs, binds);
      cgroup = WorldCgroup.create(spec.cgroups, 'worldline', `pe-${spec.binding.run}-${id}`);
      cgroup.applyAndVerify(spec.limits);
      const running = await principals.start('candidate', {
        rootfs, argv: req.argv, env: CANDIDATE_ENV, cwd: req.cwd, cgroup, outputFile,
        supervisorCgroupProcs: spec.supervisorCgroupProcs, outputLimitBytes: spec.outputLimitBytes, wallTimeMs: req.timeoutMs,
      });
      const signal = (sig: 'SIGTERM' | 'SIGKILL'): void => {
        try {
          process.kill(-running.pid, sig); // its process group: pid 1 of its namespace is the group's leader
        } catch {
          /* already gone */
        }
        if (sig === 'SIGKILL') running.kill();
      };
      return { done: running.done.then((e) => ({ code: e.code, signal: e.signal, reason: e.reason })), signal, outputFile, cleanup };
    } catch (err) {
      await cleanup();
      throw err;
    }
  };
}

export async function runExaminer(spec: ExaminerRunSpec): Promise<ExaminerRunResult> {
  mkdirSync(spec.dir, { mode: 0o711 });
  const examinerHost = spec.hostBase + ROLE_ID.examiner;
  const principals = CheckPrincipals.open(spec.hostBase, spec.agentNs);
  const rootfs = join(spec.dir, 'examiner');
  const outputFile = join(spec.dir, 'examiner.log');
  let cgroup: WorldCgroup | undefined;
  let broker: ExaminerBroker | undefined;
  try {
    const report = ReportDir.create(join(spec.dir, 'report'), spec.binding, examinerHost);
    const brokerPath = join(spec.dir, 'examiner-broker.sock');
    broker = new ExaminerBroker(brokerPath, examinerHost, sessionStarter(spec, principals));
    await broker.listen();
    const binds: RoleBind[] = [
      ...spec.inputs.map((i) => ({ source: i.frozen.dir, target: i.path, readonly: true })),
      ...spec.verifiers.map((v) => ({ source: v.dir, target: v.path, readonly: true })),
      { source: report.dir, target: ROLE_PATHS.report, readonly: false },
      { source: brokerPath, target: ROLE_PATHS.examinerBroker, readonly: false, file: true },
    ];
    assembleRoleRootfs(rootfs, binds);
    cgroup = WorldCgroup.create(spec.cgroups, 'worldline', `pe-${spec.binding.run}-examiner`);
    cgroup.applyAndVerify(spec.limits);
    const running = await principals.start('examiner', {
      rootfs, argv: spec.argv, env: spec.env, cwd: spec.cwd, cgroup, outputFile,
      supervisorCgroupProcs: spec.supervisorCgroupProcs, outputLimitBytes: spec.outputLimitBytes, wallTimeMs: spec.wallTimeMs,
    });
    const end = await running.done;
    const brokerProblems = await broker.close();
    let problems: string[] = [];
    try {
      principals.assertBoundary();
    } catch (err) {
      if (!(err instanceof BoundaryFailed)) throw err;
      problems = err.problems;
    }
    const frames = principals.observations();
    const reportMountExclusive = frames.every((o) => o.frame.paths[ROLE_PATHS.report] === (o.role === 'examiner' ? 'present' : 'absent'));
    const collected = report.collect();
    const record: PrivateRunRecord = {
      profile: 'private-evaluator-v1',
      reportFormat: spec.reportFormat,
      binding: spec.binding,
      examiner: { code: end.code, signal: end.signal, reason: end.reason },
      // The examiner has ended, and broker.close() ended every session (one the examiner left open is among its problems).
      boundary: { problems: [...brokerProblems, ...problems], rolesCompleted: !brokerProblems.some((p) => p.includes('still open')), reportMountExclusive },
      report: collected.state === 'collected' ? { state: 'collected', size: collected.size, digest: collected.digest, binding: collected.binding } : collected,
    };
    return { record, ...(collected.state === 'collected' ? { reportBytes: collected.bytes } : {}), outputFile };
  } finally {
    unmountRoleRootfs(rootfs);
    await broker?.close();
    principals.close();
    if (cgroup) {
      cgroup.killAll();
      cgroup.remove();
    }
  }
}
