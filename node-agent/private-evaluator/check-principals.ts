// A private-evaluator run's principals on the node: one user namespace mapping exactly the examiner (0),
// the worker (1) and the candidate (2) onto three host ids of the run's own id range, and every role
// started into it by the supervised sandbox spawn — its own mount, PID, IPC, UTS, cgroup and empty network
// namespaces, its own uid and gid, no groups, no capabilities, NoNewPrivs. Each role's observation frame
// is checked against its pins (core/private-evaluator/role-pins.ts) before anything of its workload runs,
// and kept; assertBoundary() checks them all together once the examiner has exited. Any problem refuses
// the whole run, PRIVATE_EVALUATOR_BOUNDARY_FAILED.
//
// A worker or candidate starts only while the examiner runs. Besides being the protocol (they are started
// through the examiner's brokers), it is what makes the namespace comparison sound: a namespace's id is
// its nsfs inode number, unique only among namespaces that exist at the same time — a PID namespace made
// after the examiner's ended may well get the examiner's old number.
import { closeSync, readlinkSync } from 'node:fs';
import * as native from '../../native/index.js';
import { Refusal } from '../../core/errors.js';
import { principalMap, principalMapProblems, ROLE_ID, type IdMapRow, type Role } from '../../core/private-evaluator/principals.js';
import { boundaryProblems, PROBED_PATHS, rolePinProblems, type ObservedRole, type RolePins } from '../../core/private-evaluator/role-pins.js';
import { ObservationRefused, startWorkload, type RunningWorkload, type StartHooks, type WorkloadSpec } from '../sandbox/supervise.js';

/** The run's boundary does not hold: a role's frame, the maps, or the separation between roles. */
export class BoundaryFailed extends Refusal {
  declare readonly code: 'PRIVATE_EVALUATOR_BOUNDARY_FAILED';
  constructor(readonly problems: string[]) {
    super('PRIVATE_EVALUATOR_BOUNDARY_FAILED', `the private evaluator's boundary does not hold: ${problems.join('; ')}`);
    this.name = 'BoundaryFailed';
  }
}

/** What a role runs; its identity, maps, network and probes are the principals'. */
export type RoleSpec = Omit<WorkloadSpec, 'uid' | 'gid' | 'uidMap' | 'gidMap' | 'newNetwork' | 'userns' | 'probePaths'>;

export class CheckPrincipals {
  private readonly observed: ObservedRole[] = [];
  private usernsFd: number | undefined;
  private examinerRunning = false;

  private constructor(
    usernsFd: number,
    readonly map: IdMapRow[],
    readonly pins: RolePins,
    private readonly agentNs: Record<native.NsName, string>,
  ) {
    this.usernsFd = usernsFd;
  }

  /**
   * The run's user namespace over host ids hostBase..hostBase+2. Refused before anything is created when
   * those ids would include host root or one of `agentIds` (the node-agent's own uid and gid).
   */
  static open(hostBase: number, agentNs: Record<native.NsName, string>, agentIds: readonly number[] = [process.getuid?.() ?? 0, process.getgid?.() ?? 0]): CheckPrincipals {
    const map = principalMap(hostBase);
    const problems = [...principalMapProblems('uid_map', map, agentIds), ...principalMapProblems('gid_map', map, agentIds)];
    if (problems.length > 0) throw new BoundaryFailed(problems);
    const fd = native.createUserNamespace(map, map);
    try {
      const usernsId = readlinkSync(`/proc/self/fd/${fd}`);
      return new CheckPrincipals(fd, map, { uidMap: map, gidMap: map, usernsId, agentNs }, agentNs);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Every role frame accepted so far, in start order. */
  observations(): readonly ObservedRole[] {
    return this.observed;
  }

  /**
   * Starts one role. Its frame is checked against the role's pins before it may exec (a problem refuses
   * with BoundaryFailed and nothing of the workload runs); `hooks.beforeGo` runs after that check.
   */
  async start(role: Role, spec: RoleSpec, hooks: StartHooks = {}): Promise<RunningWorkload> {
    if (this.usernsFd === undefined) throw new Error('the run\'s principals are closed');
    if (role === 'examiner' && this.observed.some((o) => o.role === 'examiner')) throw new BoundaryFailed(['a second examiner was started']);
    if (role !== 'examiner' && !this.examinerRunning) throw new BoundaryFailed([`${role}: started while no examiner runs`]);
    const id = ROLE_ID[role];
    const gate: StartHooks = {
      beforeGo: async (ctx) => {
        const problems = rolePinProblems(role, ctx.observation, this.pins);
        if (problems.length > 0) throw new BoundaryFailed(problems);
        this.observed.push({ role, frame: ctx.observation });
        await hooks.beforeGo?.(ctx);
      },
      ...(hooks.onEnd ? { onEnd: hooks.onEnd } : {}),
    };
    try {
      const running = await startWorkload({ ...spec, uid: id, gid: id, uidMap: this.map, gidMap: this.map, newNetwork: true, userns: this.usernsFd, probePaths: [...PROBED_PATHS] }, this.agentNs, gate);
      if (role === 'examiner') {
        this.examinerRunning = true;
        void running.done.catch(() => undefined).finally(() => (this.examinerRunning = false));
      }
      return running;
    } catch (err) {
      // The generic frame check (identity, maps, namespaces, environment) ran first: its refusal is this boundary's.
      if (err instanceof ObservationRefused) throw new BoundaryFailed(err.problems.map((p) => `${role}: ${p}`));
      throw err;
    }
  }

  /** The whole run's boundary, checked after the examiner exited; throws BoundaryFailed when it does not hold. */
  assertBoundary(): void {
    const problems = boundaryProblems(this.observed, this.pins);
    if (problems.length > 0) throw new BoundaryFailed(problems);
  }

  /** Drops the node-agent's hold on the user namespace (it lives on while a role runs in it). Idempotent. */
  close(): void {
    if (this.usernsFd === undefined) return;
    closeSync(this.usernsFd);
    this.usernsFd = undefined;
  }
}
