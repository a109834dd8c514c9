// What a sandboxed process's credentials must show, whichever sandbox it is (a World's workload, a check,
// a private-evaluator role): exactly one uid and gid in all four positions, no supplementary groups,
// NoNewPrivs, all five capability sets empty; and its uid/gid maps equal to the ones set up. Pure: the
// frame is what the sandbox child reported (native/observation.ts).

export interface IdPositions {
  real: number;
  effective: number;
  saved: number;
  fs: number;
}

export interface IdMapRow {
  inside: number;
  outside: number;
  count: number;
}

/** The credential fields of an observation frame (a SandboxObservation has all of them). */
export interface CredentialFrame {
  uid: IdPositions;
  gid: IdPositions;
  groups: readonly number[];
  noNewPrivs: number;
  capInh: bigint;
  capPrm: bigint;
  capEff: bigint;
  capBnd: bigint;
  capAmb: bigint;
}

/** Readable problems; empty means uid and gid are exactly `uid`/`gid`, no groups, NoNewPrivs 1, no capability at all. */
export function credentialProblems(frame: CredentialFrame, uid: number, gid: number): string[] {
  const problems: string[] = [];
  for (const [what, q, want] of [['uid', frame.uid, uid], ['gid', frame.gid, gid]] as const) {
    for (const pos of ['real', 'effective', 'saved', 'fs'] as const) {
      if (q[pos] !== want) problems.push(`${what}.${pos} is ${q[pos]}, expected ${want}`);
    }
  }
  if (frame.groups.length > 0) problems.push(`supplementary groups present: ${frame.groups.join(' ')}`);
  if (frame.noNewPrivs !== 1) problems.push(`NoNewPrivs is ${frame.noNewPrivs}, expected 1`);
  for (const [name, value] of [['CapInh', frame.capInh], ['CapPrm', frame.capPrm], ['CapEff', frame.capEff], ['CapBnd', frame.capBnd], ['CapAmb', frame.capAmb]] as const) {
    if (value !== 0n) problems.push(`${name} is ${value.toString(16)}, expected 0`);
  }
  return problems;
}

export function sameIdMaps(a: readonly IdMapRow[], b: readonly IdMapRow[]): boolean {
  return a.length === b.length && a.every((r, i) => r.inside === b[i]!.inside && r.outside === b[i]!.outside && r.count === b[i]!.count);
}

/** "inside:outside:count,…" ("(none)" for no rows). */
export function idMapText(rows: readonly IdMapRow[]): string {
  return rows.map((r) => `${r.inside}:${r.outside}:${r.count}`).join(',') || '(none)';
}

/** The problem with one map, or none. */
export function idMapProblem(what: 'uid_map' | 'gid_map', seen: readonly IdMapRow[], want: readonly IdMapRow[]): string[] {
  return sameIdMaps(seen, want) ? [] : [`${what} is ${idMapText(seen)}, expected ${idMapText(want)}`];
}
