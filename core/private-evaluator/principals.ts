// The private evaluator's three principals and what each may see. One user namespace per check run maps
// exactly three namespace ids: the examiner (0), the worker (1) and the candidate (2), each onto its own
// unprivileged host id from the run's id range. Every role runs as its id for uid and gid alike. The paths
// are where the report directory and the two broker sockets are mounted in the roles that get them.

export const ROLES = ['examiner', 'worker', 'candidate'] as const;
export type Role = (typeof ROLES)[number];

/** Namespace uid and gid of each role. */
export const ROLE_ID: Readonly<Record<Role, number>> = { examiner: 0, worker: 1, candidate: 2 };

/** Where a role finds the report directory and the brokers, if it is the role that gets them. */
export const ROLE_PATHS = {
  report: '/run/worldline-report',
  examinerBroker: '/run/worldline-examiner-broker.sock',
  workerBroker: '/run/worldline-worker-broker.sock',
} as const;
export type RolePath = keyof typeof ROLE_PATHS;

/** The one role each path is bound into. */
export const PATH_OWNER: Readonly<Record<RolePath, Role>> = { report: 'examiner', examinerBroker: 'examiner', workerBroker: 'worker' };

import type { IdMapRow } from '../sandbox-credentials.js';
export type { IdMapRow };

/** The maps (uid and gid alike) of a run whose id range starts at hostBase: 0, 1, 2 → hostBase, +1, +2. */
export function principalMap(hostBase: number): IdMapRow[] {
  return [{ inside: 0, outside: hostBase, count: ROLES.length }];
}

/** Host id of each namespace id the rows map (undefined when unmapped). */
function hostIdOf(rows: readonly IdMapRow[], inside: number): number | undefined {
  const row = rows.find((r) => inside >= r.inside && inside < r.inside + r.count);
  return row === undefined ? undefined : row.outside + (inside - row.inside);
}

/**
 * What is wrong with a run's maps, as readable strings; empty means exactly the three role ids are mapped,
 * onto three different host ids, none of them host root or one of `forbidden` (the node-agent's own ids).
 */
export function principalMapProblems(what: 'uid_map' | 'gid_map', rows: readonly IdMapRow[], forbidden: readonly number[]): string[] {
  const problems: string[] = [];
  const mapped = rows.reduce((n, r) => n + r.count, 0);
  if (mapped !== ROLES.length) problems.push(`${what} maps ${mapped} ids, expected exactly ${ROLES.length} (one per role)`);
  const hosts = new Map<number, Role>();
  for (const role of ROLES) {
    const host = hostIdOf(rows, ROLE_ID[role]);
    if (host === undefined) {
      problems.push(`${what} does not map the ${role}'s id ${ROLE_ID[role]}`);
      continue;
    }
    if (host === 0) problems.push(`${what} maps the ${role} onto host root`);
    else if (forbidden.includes(host)) problems.push(`${what} maps the ${role} onto the node-agent's own id ${host}`);
    const other = hosts.get(host);
    if (other !== undefined) problems.push(`${what} maps the ${other} and the ${role} onto the same host id ${host}`);
    hosts.set(host, role);
  }
  return problems;
}
