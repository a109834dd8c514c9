// One private-evaluator run: the run's principals, the frozen inputs read-only, the staged verifiers
// read-only at /run/worldline-verifiers, a fresh report directory and the examiner broker's socket — all
// in the examiner's own root filesystem and nobody else's — the examiner supervised to its end, candidate
// sessions started through its broker (examiner-broker.ts) each over its own view of the inputs, then
// every session ended, the boundary checked and the report collected. The result is the run's raw record
// (core/private-evaluator/report-admission.ts reads it) and the report's bytes. Workers, started through
// the examiner's broker, get their own copy of the inputs, the verifiers and the worker broker
// (worker-broker.ts), whose case leases start candidates over case views.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERIFIERS_MOUNT } from '../../core/private-evaluator/examiner-command.js';
import { ROLE_ID, ROLE_PATHS, type Role } from '../../core/private-evaluator/principals.js';
import type { PrivateRunRecord } from '../../core/private-evaluator/report-admission.js';
import type { NsName } from '../../native/index.js';
import { WorldCgroup, type CgroupLayout, type CgroupLimits, type CgroupReadback } from '../sandbox/cgroup.js';
import type { StartHooks } from '../sandbox/supervise.js';
import { BoundaryFailed, CheckPrincipals } from './check-principals.js';
import { ExaminerBroker, type StartSession } from './examiner-broker.js';
import type { RoleEnds, Session } from './session-table.js';
import { LeaseLedger, WorkerBroker, type StartLeased } from './worker-broker.js';
import { copyFrozen, type FrozenTree } from './freeze-tree.js';
import { ReportDir, type ReportBinding } from './report-dir.js';
import { assembleRoleRootfs, unmountRoleRootfs, type RoleBind } from './role-rootfs.js';
import { overlayFrozen } from './session-view.js';
import { unmountAllUnder } from '../sandbox/rootfs.js';

export const VERIFIERS_PATH = VERIFIERS_MOUNT;

/** A role about to start, as the node-agent prepared it: what the check stage's isolation gate measures against. */
export interface RoleStart {
  role: Role;
  /** "examiner", a worker's "w1", a session's "c1", a leased candidate's "leased-…". */
  id: string;
  binds: readonly RoleBind[];
  env: readonly string[];
  /** The role's cgroup limits, read back from the kernel. */
  cgroup: CgroupReadback;
}

/** The check stage's isolation gate, asked once per role start (checks/check-gate.ts); its refusal ends that start. */
export type RoleGate = (start: RoleStart) => StartHooks;

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
  /**
   * Where every role's output log and exit record go (default: `dir`). Off the run's disk when it has
   * one: a candidate that fills the disk must not stop a supervisor from writing how a role ended (each
   * log is bounded by outputLimitBytes anyway).
   */
  logDir?: string;
  /** Asked before each role's workload runs (after its pins hold); absent, roles are not gated. */
  gate?: RoleGate;
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

/** Where a leased candidate's stdin is, when its start gave one (read-only; the command's stdin is redirected from it). */
export const STDIN_PATH = '/run/worldline-stdin';

interface RoleRun {
  role: 'worker' | 'candidate';
  argv: string[];
  env: string[];
  cwd: string;
  timeoutMs: number;
  /** The role's binds besides its copies or views of the inputs (a case view, stdin, the verifiers, its broker's socket); `dir` is its directory. */
  binds: (dir: string) => RoleBind[];
}

/**
 * Starts one worker or candidate for a broker: its own copy or view of every frozen input, owned by the role
 * and at the same path as the examiner sees it, plus the role's own binds, in the role's own root
 * filesystem (never the report or the examiner's broker), its own cgroup with the run's limits.
 */
async function startRole(spec: ExaminerRunSpec, principals: CheckPrincipals, id: string, run: RoleRun, onCleanup?: () => Promise<void>): Promise<Session> {
  const host = spec.hostBase + ROLE_ID[run.role];
  const dir = roleDir(spec, id);
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  const rootfs = join(dir, 'rootfs');
  const outputFile = spec.logDir === undefined ? join(dir, 'output.log') : join(spec.logDir, `${id}.log`);
  let cgroup: WorldCgroup | undefined;
  const cleanup = async (): Promise<void> => {
    await onCleanup?.();
    // The root filesystem's mounts, then the session's views of the inputs and their lower layers.
    const left = [...unmountRoleRootfs(rootfs), ...unmountAllUnder(dir)];
    cgroup?.killAll();
    cgroup?.remove();
    // Never remove through a mount that is still there.
    if (left.length === 0) rmSync(dir, { recursive: true, force: true });
  };
  try {
    // A candidate's is an overlay view of the frozen input, O(1) to make; a worker's is a whole copy, for
    // its case leases exchange directories in it (case-copy.ts), which an overlay's lower directories refuse.
    const own = (input: ExaminerRunSpec['inputs'][number], k: number): string =>
      run.role === 'worker' ? copyFrozen(input.frozen, roleInputDir(spec, id, k), host) : overlayFrozen(input.frozen, roleInputDir(spec, id, k), join(dir, `layers-${k}`), host);
    const copies = spec.inputs.map((input, k) => ({ source: own(input, k), target: input.path, readonly: false }));
    const binds = [...copies, ...run.binds(dir)];
    assembleRoleRootfs(rootfs, binds);
    cgroup = WorldCgroup.create(spec.cgroups, budgetPath(spec.binding.run), id);
    const readback = cgroup.applyAndVerify(spec.limits);
    const running = await principals.start(run.role, {
      rootfs, argv: run.argv, env: run.env, cwd: run.cwd, cgroup, outputFile,
      supervisorCgroupProcs: spec.supervisorCgroupProcs, outputLimitBytes: spec.outputLimitBytes, wallTimeMs: run.timeoutMs,
    }, spec.gate?.({ role: run.role, id, binds, env: run.env, cgroup: readback }));
    // Every process of the role's cgroup, through pidfds: never a process group by number, which an
    // unrelated host process could hold once the role's processes are gone.
    const roleCgroup = cgroup;
    const signal = (sig: 'SIGTERM' | 'SIGKILL'): void => {
      roleCgroup.signalAll(sig);
      if (sig === 'SIGKILL') running.kill();
    };
    return { done: running.done.then((e) => ({ code: e.code, signal: e.signal, reason: e.reason })), signal, outputFile, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** The examiner's candidate sessions: the inputs and nothing else. */
function sessionStarter(spec: ExaminerRunSpec, principals: CheckPrincipals): StartSession {
  return (req, id) => startRole(spec, principals, id, { role: 'candidate', argv: req.argv, env: CANDIDATE_ENV, cwd: req.cwd, timeoutMs: req.timeoutMs, binds: () => [] });
}

/** A leased candidate: its inputs with the case view over the lease's path, its stdin (if any) read-only. */
function leasedStarter(spec: ExaminerRunSpec, principals: CheckPrincipals): StartLeased {
  return (req, id) => {
    const stdin = req.stdin;
    // Its own directory and cgroup name: a worker's candidate ids are counted apart from the examiner's.
    return startRole(spec, principals, `leased-${id}`, {
      role: 'candidate',
      // A fixed program, the command as its arguments: nothing of the request is parsed by the shell.
      argv: stdin === undefined ? req.argv : ['/bin/sh', '-c', `exec "$@" < ${STDIN_PATH}`, 'sh', ...req.argv],
      env: [...CANDIDATE_ENV, ...req.env],
      cwd: req.cwd,
      timeoutMs: req.timeoutMs,
      binds: (dir) => {
        const binds: RoleBind[] = [{ source: req.view, target: req.path, readonly: false }];
        if (stdin !== undefined) {
          writeFileSync(join(dir, 'stdin'), stdin, { mode: 0o444 });
          binds.push({ source: join(dir, 'stdin'), target: STDIN_PATH, readonly: true, file: true });
        }
        return binds;
      },
    });
  };
}

/** A worker: its inputs, the verifiers read-only and its own broker, served while it runs. */
function workerStarter(spec: ExaminerRunSpec, principals: CheckPrincipals, ledger: LeaseLedger, problems: string[], roleEnds: RoleEnds[]): StartSession {
  return async (req, id) => {
    const host = spec.hostBase + ROLE_ID.worker;
    const dir = join(spec.dir, 'workers', id);
    mkdirSync(dir, { recursive: true, mode: 0o711 });
    const socket = join(dir, 'worker-broker.sock');
    let broker: WorkerBroker | undefined;
    const closeBroker = async (): Promise<void> => {
      if (broker === undefined) return;
      const b = broker;
      broker = undefined;
      problems.push(...(await b.close()));
      roleEnds.push(b.roleEnds());
    };
    const inputs = spec.inputs.map((input, k) => ({ path: input.path, hostDir: roleInputDir(spec, id, k) }));
    broker = new WorkerBroker(socket, host, spec.hostBase + ROLE_ID.candidate, inputs, join(dir, 'cases'), ledger, leasedStarter(spec, principals));
    await broker.listen();
    try {
      const session = await startRole(spec, principals, id, {
        role: 'worker', argv: req.argv, env: spec.env, cwd: req.cwd, timeoutMs: req.timeoutMs,
        binds: () => [
          ...spec.verifiers.map((v) => ({ source: v.dir, target: v.path, readonly: true })),
          { source: socket, target: ROLE_PATHS.workerBroker, readonly: false, file: true },
        ],
      }, closeBroker);
      // Served only while the worker runs: its end closes the broker (a lease still open is a violation).
      // A worker that ran out of time or output refuses the run as a violation would.
      void session.done.then(
        (e) => {
          if (e.reason === 'WallTimeExceeded' || e.reason === 'OutputLimitExceeded') problems.push(`worker ${id}: ${e.reason}`);
        },
        () => problems.push(`worker ${id}: its supervisor was lost`),
      ).finally(() => void closeBroker());
      return session;
    } catch (err) {
      await closeBroker();
      throw err;
    }
  };
}

export async function runExaminer(spec: ExaminerRunSpec): Promise<ExaminerRunResult> {
  mkdirSync(spec.dir, { mode: 0o711 });
  const examinerHost = spec.hostBase + ROLE_ID.examiner;
  const principals = CheckPrincipals.open(spec.hostBase, spec.agentNs);
  const rootfs = join(spec.dir, 'examiner');
  const outputFile = join(spec.logDir ?? spec.dir, 'examiner.log');
  let cgroup: WorldCgroup | undefined;
  let broker: ExaminerBroker | undefined;
  let budget: WorldCgroup | undefined;
  const ledger = new LeaseLedger();
  const workerProblems: string[] = [];
  const workerRoleEnds: RoleEnds[] = [];
  try {
    // The run's budget: every role's cgroup is created beneath it, so together they never exceed the check's limits.
    budget = WorldCgroup.create(spec.cgroups, BUDGET_PARENT, budgetName(spec.binding.run));
    budget.applyAndVerify(spec.limits);
    const report = ReportDir.create(join(spec.dir, 'report'), spec.binding, examinerHost);
    const brokerPath = join(spec.dir, 'examiner-broker.sock');
    broker = new ExaminerBroker(brokerPath, examinerHost, sessionStarter(spec, principals), workerStarter(spec, principals, ledger, workerProblems, workerRoleEnds));
    await broker.listen();
    const binds: RoleBind[] = [
      ...spec.inputs.map((i) => ({ source: i.frozen.dir, target: i.path, readonly: true })),
      ...spec.verifiers.map((v) => ({ source: v.dir, target: v.path, readonly: true })),
      { source: report.dir, target: ROLE_PATHS.report, readonly: false },
      { source: brokerPath, target: ROLE_PATHS.examinerBroker, readonly: false, file: true },
    ];
    assembleRoleRootfs(rootfs, binds);
    cgroup = WorldCgroup.create(spec.cgroups, budgetPath(spec.binding.run), 'examiner');
    const readback = cgroup.applyAndVerify(spec.limits);
    const running = await principals.start('examiner', {
      rootfs, argv: spec.argv, env: spec.env, cwd: spec.cwd, cgroup, outputFile,
      supervisorCgroupProcs: spec.supervisorCgroupProcs, outputLimitBytes: spec.outputLimitBytes, wallTimeMs: spec.wallTimeMs,
    }, spec.gate?.({ role: 'examiner', id: 'examiner', binds, env: spec.env, cgroup: readback }));
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
      boundary: {
        problems: [...brokerProblems, ...workerProblems, ...problems],
        // Every worker and candidate ended on its own, with a known end: none was left for a broker to tear down
        // and no supervisor was lost. (The examiner's own end is in `examiner`.)
        rolesCompleted: [broker.roleEnds(), ...workerRoleEnds].every((r) => r.leftOpen.length === 0 && r.lost.length === 0),
        reportMountExclusive,
        ...(ledger.leases.length > 0 ? { leases: ledger.leases } : {}),
      },
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
    if (budget) await sweepPrivateRunCgroups(spec.cgroups, spec.binding.run);
  }
}

/** A worker's or candidate's own directory in the run (its root filesystem, input copies, output). */
function roleDir(spec: ExaminerRunSpec, id: string): string {
  return join(spec.dir, 'sessions', id);
}

/** Where a role's copy or view of input `k` is on the host (the worker broker's leases live in a worker's). */
function roleInputDir(spec: ExaminerRunSpec, id: string, k: number): string {
  return join(roleDir(spec, id), `input-${k}`);
}

/** The run's budget cgroup, the parent of every role's own: BUDGET_PARENT/budgetName(run). */
const BUDGET_PARENT = 'worldline';
const budgetName = (run: string): string => `pe-${run}`;
const budgetPath = (run: string): string => `${BUDGET_PARENT}/${budgetName(run)}`;

/**
 * What a run cut short (the agent killed mid-run) leaves of its cgroups: every role's, then the budget,
 * each emptied (SIGKILL to what is left) and removed. Returns the directories that could not be removed.
 */
export async function sweepPrivateRunCgroups(layout: CgroupLayout, run: string): Promise<string[]> {
  const budget = WorldCgroup.attach(layout, BUDGET_PARENT, budgetName(run));
  const top = budget.dirs()[0];
  if (top === undefined || !existsSync(top)) return [];
  const roles = readdirSync(top, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => WorldCgroup.attach(layout, budgetPath(run), e.name));
  const left: string[] = [];
  for (const cg of [...roles, budget]) {
    cg.killAll();
    // A killed process leaves its cgroup when it is reaped: the directory is busy until then (as in teardown-run.ts).
    let rest = cg.remove();
    for (let i = 0; i < 50 && rest.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rest = cg.remove();
    }
    left.push(...rest);
  }
  return left;
}
