// The pins every private-evaluator role's observation frame must show before anything of its workload
// runs, and the boundary checks made over all of a run's observations once its examiner has exited. Pure:
// the frame is what the sandbox child reported (native/observation.ts), the pins what the run set up.
import { credentialProblems, idMapProblem, type CredentialFrame, type IdPositions } from '../sandbox-credentials.js';
import { PATH_OWNER, ROLE_ID, ROLE_PATHS, type IdMapRow, type Role, type RolePath } from './principals.js';

export type NamespaceName = 'user' | 'mnt' | 'pid' | 'net' | 'ipc' | 'uts' | 'cgroup';
const NAMESPACES: readonly NamespaceName[] = ['user', 'mnt', 'pid', 'net', 'ipc', 'uts', 'cgroup'];

/** What a role's frame holds that the pins read (a SandboxObservation has all of it). */
export interface RoleFrame extends CredentialFrame {
  uidMap: readonly IdMapRow[];
  gidMap: readonly IdMapRow[];
  ns: Readonly<Record<NamespaceName, string>>;
  /** Probed paths: "present", "absent" or "E<errno>". */
  paths: Readonly<Record<string, string>>;
}

export interface RolePins {
  /** The run's maps, as set up (principals.ts principalMap). */
  uidMap: readonly IdMapRow[];
  gidMap: readonly IdMapRow[];
  /** The run's user namespace, "user:[<inode>]". */
  usernsId: string;
  /** The node-agent's own namespaces: every role's other namespaces differ from them. */
  agentNs: Readonly<Record<NamespaceName, string>>;
}

/** The probed paths every role's frame must report, one per RolePath. */
export const PROBED_PATHS: readonly string[] = Object.values(ROLE_PATHS);

/**
 * What is wrong with one role's frame; empty means it shows exactly the role: its own id as uid and gid in
 * all four positions, no supplementary groups, NoNewPrivs, all five capability sets empty, the run's maps
 * and user namespace, every other namespace its own (the network too: no role has the node's), and the
 * report and broker paths present exactly in the role they are bound into. A path the frame does not
 * report, or reports with an error, is a problem whichever role it is: it was not shown absent.
 */
export function rolePinProblems(role: Role, frame: RoleFrame, pins: RolePins): string[] {
  const problems: string[] = [];
  const id = ROLE_ID[role];
  for (const p of [...credentialProblems(frame, id, id), ...idMapProblem('uid_map', frame.uidMap, pins.uidMap), ...idMapProblem('gid_map', frame.gidMap, pins.gidMap)]) problems.push(`${role}: ${p}`);
  if (frame.ns.user !== pins.usernsId) problems.push(`${role}: user namespace is ${frame.ns.user}, expected the run's ${pins.usernsId}`);
  for (const name of NAMESPACES) {
    if (name !== 'user' && frame.ns[name] === pins.agentNs[name]) problems.push(`${role}: ${name} namespace is the node-agent's own (${frame.ns[name]})`);
  }
  for (const [key, path] of Object.entries(ROLE_PATHS) as [RolePath, string][]) {
    const state = frame.paths[path];
    const owner = PATH_OWNER[key];
    if (state === undefined) problems.push(`${role}: ${path} was not probed`);
    else if (owner === role && state !== 'present') problems.push(`${role}: ${path} is ${state}, expected present`);
    else if (owner !== role && state !== 'absent') problems.push(`${role}: ${path} is ${state}, expected absent (it is the ${owner}'s alone)`);
  }
  return problems;
}

export interface ObservedRole {
  role: Role;
  frame: RoleFrame;
}

/**
 * What is wrong with a whole run's observations, checked after its examiner exited; empty means: exactly
 * one examiner; every role in the run's user namespace with the run's maps; every worker and candidate
 * in PID and mount namespaces other than the examiner's; and no candidate sharing a worker's uid or gid in
 * any position. The per-role pins (rolePinProblems) are checked again for every frame.
 */
export function boundaryProblems(observed: readonly ObservedRole[], pins: RolePins): string[] {
  const problems: string[] = [];
  const examiners = observed.filter((o) => o.role === 'examiner');
  if (examiners.length !== 1) problems.push(`${examiners.length} examiner observations, expected exactly 1`);
  for (const o of observed) problems.push(...rolePinProblems(o.role, o.frame, pins));
  const examiner = examiners[0]?.frame;
  observed.forEach((o, i) => {
    if (o.role === 'examiner' || examiner === undefined) return;
    for (const name of ['pid', 'mnt'] as const) {
      if (o.frame.ns[name] === examiner.ns[name]) problems.push(`${o.role} #${i}: ${name} namespace is the examiner's (${examiner.ns[name]})`);
    }
  });
  const positions = (q: IdPositions): number[] => [q.real, q.effective, q.saved, q.fs];
  const workerUids = new Set(observed.filter((o) => o.role === 'worker').flatMap((o) => positions(o.frame.uid)));
  const workerGids = new Set(observed.filter((o) => o.role === 'worker').flatMap((o) => positions(o.frame.gid)));
  observed.forEach((o, i) => {
    if (o.role !== 'candidate') return;
    if (positions(o.frame.uid).some((u) => workerUids.has(u))) problems.push(`candidate #${i}: shares a worker's uid`);
    if (positions(o.frame.gid).some((g) => workerGids.has(g))) problems.push(`candidate #${i}: shares a worker's gid`);
  });
  return problems;
}
