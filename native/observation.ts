// The sandbox child's observation frame (written by native/src/sandbox_observe.c right before execve,
// with the workload's final credentials) and the check that it shows exactly what was asked for.
//
//   WLOBS1\n  then sections "<name> <length>\n<bytes>\n"  then  END\n
//   error record: "WLERR1 <stage> <errno>\n"
import { constants as osConstants } from 'node:os';
import { credentialProblems, idMapProblem } from '../core/sandbox-credentials.js';
import { NS_NAMES, type IdMap, type IdQuad, type NsName, type ObservationExpectation, type PathState, type SandboxObservation } from './types.js';

// Aliases share a number (EAGAIN/EWOULDBLOCK, ENOTSUP/EOPNOTSUPP): the first, usual name is kept.
const errnoNames = new Map<number, string>();
for (const [k, n] of Object.entries(osConstants.errno)) if (!errnoNames.has(n)) errnoNames.set(n, k);

/** A setup step of the sandbox child failed (error record), or the frame was malformed. */
export class SandboxSetupError extends Error {
  readonly code = 'ERR_SANDBOX_SETUP';
  constructor(
    readonly stage: string,
    /** Negative, as in NativeError. */
    readonly errno: number,
    readonly errnoCode: string,
  ) {
    super(`sandbox setup failed at ${stage}: ${errnoCode}`);
    this.name = 'SandboxSetupError';
  }
}

export type ObservationRecord =
  | { kind: 'observation'; sections: Map<string, Buffer> }
  | { kind: 'error'; stage: string; errno: number; errnoCode: string };

function malformed(why: string): never {
  throw new SandboxSetupError(`frame (${why})`, 0, 'EPROTO');
}

/** Byte length of the first complete record in buf, or null if more bytes are needed. */
export function recordLength(buf: Buffer): number | null {
  if (buf.length < 7) return null;
  const magic = buf.subarray(0, 7).toString('latin1');
  if (magic === 'WLERR1 ') {
    const nl = buf.indexOf(10);
    return nl < 0 ? null : nl + 1;
  }
  if (magic !== 'WLOBS1\n') malformed('bad magic');
  let pos = 7;
  for (;;) {
    const nl = buf.indexOf(10, pos);
    if (nl < 0) return null;
    const line = buf.subarray(pos, nl).toString('latin1');
    if (line === 'END') return nl + 1;
    const m = /^([a-z_.]+) ([0-9]{1,6})$/.exec(line);
    if (m === null) malformed('bad section header');
    const end = nl + 1 + Number(m[2]) + 1;
    if (buf.length < end) return null;
    pos = end;
  }
}

/** Splits one complete record (see recordLength) into its parts. */
export function parseRecord(buf: Buffer): ObservationRecord {
  const len = recordLength(buf);
  if (len === null) malformed('truncated');
  const text = buf.subarray(0, len);
  if (text.subarray(0, 7).toString('latin1') === 'WLERR1 ') {
    const m = /^WLERR1 ([a-z][a-z0-9_]*) ([0-9]+)\n$/.exec(text.toString('latin1'));
    if (m === null) malformed('bad error record');
    const errno = Number(m[2]);
    return { kind: 'error', stage: m[1]!, errno: -errno, errnoCode: errnoNames.get(errno) ?? `E${errno}` };
  }
  const sections = new Map<string, Buffer>();
  let pos = 7;
  for (;;) {
    const nl = text.indexOf(10, pos);
    const line = text.subarray(pos, nl).toString('latin1');
    if (line === 'END') break;
    const [name, size] = line.split(' ') as [string, string];
    sections.set(name, text.subarray(nl + 1, nl + 1 + Number(size)));
    pos = nl + 1 + Number(size) + 1;
  }
  return { kind: 'observation', sections };
}

function statusFields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

function quad(fields: Record<string, string>, key: string): IdQuad {
  const parts = (fields[key] ?? '').split(/\s+/).map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isInteger(n))) malformed(`status ${key}`);
  const [real, effective, saved, fs] = parts as [number, number, number, number];
  return { real, effective, saved, fs };
}

function hex(fields: Record<string, string>, key: string): bigint {
  const value = fields[key];
  if (value === undefined || !/^[0-9a-f]+$/.test(value)) malformed(`status ${key}`);
  return BigInt(`0x${value}`);
}

function int(fields: Record<string, string>, key: string): number {
  const n = Number(fields[key]);
  if (fields[key] === undefined || !Number.isInteger(n)) malformed(`status ${key}`);
  return n;
}

function mapRows(text: string): IdMap[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .map((l) => {
      const [inside, outside, count] = l.split(/\s+/).map(Number) as [number, number, number];
      return { inside, outside, count };
    });
}

/** NUL-terminated KEY=VALUE entries, as the child wrote its envp; a missing section or a last entry without its NUL is malformed. */
function environEntries(b: Buffer | undefined): string[] {
  if (b === undefined) malformed('missing environ');
  if (b.length === 0) return [];
  if (b[b.length - 1] !== 0) malformed('environ entry without its NUL');
  return b.subarray(0, b.length - 1).toString('utf8').split('\0');
}

/** Parses an observation frame; an error record throws SandboxSetupError. */
export function parseObservation(buf: Buffer): SandboxObservation {
  const record = parseRecord(buf);
  if (record.kind === 'error') throw new SandboxSetupError(record.stage, record.errno, record.errnoCode);
  const section = (name: string): string => {
    const b = record.sections.get(name);
    if (b === undefined) malformed(`missing ${name}`);
    return b.toString('utf8');
  };
  const status = statusFields(section('status'));
  const groups = (status['Groups'] ?? '').split(/\s+/).filter((g) => g.length > 0).map(Number);
  const ns = {} as Record<NsName, string>;
  for (const name of NS_NAMES) ns[name] = section(`ns.${name}`);
  return {
    uid: quad(status, 'Uid'),
    gid: quad(status, 'Gid'),
    groups,
    noNewPrivs: int(status, 'NoNewPrivs'),
    seccomp: int(status, 'Seccomp'),
    capInh: hex(status, 'CapInh'),
    capPrm: hex(status, 'CapPrm'),
    capEff: hex(status, 'CapEff'),
    capBnd: hex(status, 'CapBnd'),
    capAmb: hex(status, 'CapAmb'),
    uidMap: mapRows(section('uid_map')),
    gidMap: mapRows(section('gid_map')),
    setgroups: section('setgroups').trim(),
    ns,
    kernel: { sysname: section('uname.sysname'), machine: section('uname.machine') },
    status,
    environ: environEntries(record.sections.get('environ')),
    paths: pathStates(section('paths')),
  };
}

/** The paths section: "<state> <path>" lines (sandbox_observe.c). */
function pathStates(text: string): Record<string, PathState> {
  const out: Record<string, PathState> = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^(present|absent|E[0-9]+) (\/.*)$/.exec(line);
    if (m === null) malformed('bad paths line');
    out[m[2]!] = m[1] as PathState;
  }
  return out;
}

/**
 * What is wrong with an observation, as readable strings; empty means the frame shows exactly the
 * requested identity: uid and gid in all four positions, no supplementary groups, NoNewPrivs 1, all five
 * capability sets empty, the requested maps, and every namespace different from the agent's (except net
 * when no new network namespace was requested, which must then be the agent's), and exactly the
 * requested environment at the exec.
 */
export function observationProblems(obs: SandboxObservation, expected: ObservationExpectation): string[] {
  const problems = credentialProblems(obs, expected.uid, expected.gid);
  problems.push(...idMapProblem('uid_map', obs.uidMap, expected.uidMap), ...idMapProblem('gid_map', obs.gidMap, expected.gidMap));
  const envProblem = environmentProblem(obs.environ, expected.env);
  if (envProblem !== null) problems.push(envProblem);
  for (const name of NS_NAMES) {
    const mine = obs.ns[name];
    const agent = expected.agentNs[name];
    if (!/^[a-z]+:\[[0-9]+\]$/.test(mine)) problems.push(`ns ${name} id "${mine}" is malformed`);
    if (name === 'net' && !expected.newNetwork) {
      if (mine !== agent) problems.push(`ns net is ${mine}, expected the agent's ${agent}`);
    } else if (mine === agent) {
      problems.push(`ns ${name} is the agent's own (${agent})`);
    }
  }
  return problems;
}

const nameOf = (kv: string): string => kv.slice(0, Math.max(0, kv.indexOf('=')));

/** Null when the environment handed to execve is exactly the requested one; else what differs (names only: values may be secrets). */
export function environmentProblem(seen: readonly string[], want: readonly string[]): string | null {
  if (seen.length === want.length && seen.every((kv, i) => kv === want[i])) return null;
  const wanted = new Set(want);
  const got = new Set(seen);
  const extra = seen.filter((kv) => !wanted.has(kv)).map(nameOf);
  const missing = want.filter((kv) => !got.has(kv)).map(nameOf);
  const parts = [
    ...(extra.length > 0 ? [`holds variables the plan did not give it: ${extra.join(', ')}`] : []),
    ...(missing.length > 0 ? [`lacks planned variables: ${missing.join(', ')}`] : []),
  ];
  return `the environment at exec ${parts.length > 0 ? parts.join('; ') : 'has the planned entries in another order or repeated'}`;
}
