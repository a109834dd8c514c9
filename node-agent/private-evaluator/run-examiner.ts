// One private-evaluator run with its examiner alone: the run's principals, the frozen inputs read-only,
// the staged verifiers read-only at /run/worldline-verifiers, a fresh report directory and the examiner
// broker's socket — all in the examiner's own root filesystem and nobody else's — the examiner supervised
// to its end, then the boundary checked and the report collected. The result is the run's raw record
// (core/private-evaluator/report-admission.ts reads it) and the report's bytes. Starting candidate
// sessions (the examiner broker's requests) and workers (case leases) is not built: the broker's socket
// exists, as the examiner's pins require, and answers every request that it serves none yet.
import { chownSync, chmodSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { ROLE_ID, ROLE_PATHS } from '../../core/private-evaluator/principals.js';
import type { PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import type { NsName } from '../../native/index.js';
import { WorldCgroup, type CgroupLayout, type CgroupLimits } from '../sandbox/cgroup.js';
import { BoundaryFailed, CheckPrincipals } from './check-principals.js';
import type { FrozenTree } from './freeze-tree.js';
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
  /** Host directory of the verifier files staged from PRIME. */
  verifiers: string;
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

/** The examiner broker's socket, 0600 and the examiner's: it serves no request yet and says so. */
async function listenBroker(path: string, examinerHostId: number): Promise<Server> {
  const server = createServer((conn) => {
    conn.end(`${JSON.stringify({ ok: false, error: 'BROKER_UNSUPPORTED', message: 'this node-agent\'s examiner broker serves no request yet' })}\n`);
    conn.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve));
  chownSync(path, examinerHostId, examinerHostId);
  chmodSync(path, 0o600);
  return server;
}

export async function runExaminer(spec: ExaminerRunSpec): Promise<ExaminerRunResult> {
  mkdirSync(spec.dir, { mode: 0o711 });
  const examinerHost = spec.hostBase + ROLE_ID.examiner;
  const principals = CheckPrincipals.open(spec.hostBase, spec.agentNs);
  const rootfs = join(spec.dir, 'examiner');
  const outputFile = join(spec.dir, 'examiner.log');
  let cgroup: WorldCgroup | undefined;
  let broker: Server | undefined;
  try {
    const report = ReportDir.create(join(spec.dir, 'report'), spec.binding, examinerHost);
    const brokerPath = join(spec.dir, 'examiner-broker.sock');
    broker = await listenBroker(brokerPath, examinerHost);
    const binds: RoleBind[] = [
      ...spec.inputs.map((i) => ({ source: i.frozen.dir, target: i.path, readonly: true })),
      { source: spec.verifiers, target: VERIFIERS_PATH, readonly: true },
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
      // Only the examiner runs, and it has ended: every role ended.
      boundary: { problems, rolesCompleted: true, reportMountExclusive },
      report: collected.state === 'collected' ? { state: 'collected', size: collected.size, digest: collected.digest, binding: collected.binding } : collected,
    };
    return { record, ...(collected.state === 'collected' ? { reportBytes: collected.bytes } : {}), outputFile };
  } finally {
    unmountRoleRootfs(rootfs);
    broker?.close();
    principals.close();
    if (cgroup) {
      cgroup.killAll();
      cgroup.remove();
    }
  }
}
