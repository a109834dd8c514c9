// Verifying a Collapse's evidence graph (issue 13, item 4): collapse ← check executions ← isolation
// observation and decision (← waiver) ← candidate. Every statement is read within one cumulative budget,
// must hash to the digest its object shows, appear once, verify under keys the trust policy trusts for its
// role on the World's node, and say what the verifier expects from sources other than its producer: the
// World (namespace, name, uid) and base as the API server holds them, the candidate the Collapse promotes,
// and the roster of the Policy governing the World's Roots. Then trust is read again at a fresh clock
// reading (a key revoked while the graph was read, a clock or snapshot gone back, refuses). The first
// failure ends the verification with its own reason; nothing partial is returned. Pure.
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import { DsseError, IN_TOTO_PAYLOAD_TYPE, verifyEnvelope, type TrustedKey } from './dsse.js';
import { PREDICATE_TYPES, parseStatement, StatementError, type PredicateType, type Subject } from './statement.js';
import { trustedKeys, type TrustMemory, type TrustPolicy } from './trust-policy.js';
import { worldBaseSubject, type BaseEntryRef } from './isolation-attestation.js';
import { waiverCovers, type IsolationWaiver } from './isolation-waiver.js';
import type { CheckExecution } from './check-execution.js';
import type { GraphNode, GraphRole } from './collapse-grant.js';
import type { IsolationDecision, IsolationObservation } from '../isolation/records.js';
import { identityOf } from '../isolation/identity.js';

export type GraphFailure =
  | 'EVIDENCE_BUDGET_EXCEEDED'
  | 'EVIDENCE_DIGEST_MISMATCH'
  | 'EVIDENCE_DUPLICATE'
  | 'EVIDENCE_MALFORMED'
  | 'EVIDENCE_PAYLOAD_TYPE'
  | 'EVIDENCE_UNTRUSTED'
  | 'EVIDENCE_WRONG_ROLE'
  | 'EVIDENCE_SUBJECT_MISMATCH'
  | 'EVIDENCE_WORLD_MISMATCH'
  | 'EVIDENCE_SUBSTITUTED'
  | 'EVIDENCE_EXTRA'
  | 'EVIDENCE_MISSING'
  | 'EVIDENCE_ISOLATION_INSUFFICIENT'
  | 'EVIDENCE_REVOKED'
  | 'CLOCK_ROLLBACK'
  | 'REVOCATION_ROLLBACK'
  | 'REVOCATION_STALE'
  | 'TRUST_POLICY_UNREADABLE';

const ROLE_TYPES: Record<GraphRole, PredicateType> = {
  'isolation-observation': PREDICATE_TYPES.isolationObservation,
  'isolation-decision': PREDICATE_TYPES.isolationDecision,
  'isolation-waiver': PREDICATE_TYPES.isolationWaiver,
  'check-execution': PREDICATE_TYPES.checkExecution,
};

/** What the verifier knows without asking the producer. */
export interface GraphExpectations {
  world: { namespace: string; name: string; uid: string };
  /** The node the World is bound to (whose keys may sign its evidence). */
  node: string;
  /** The generations the World forked, as the API server shows them. */
  base: readonly BaseEntryRef[];
  mode: 'Candidate' | 'CheckpointReturn';
  /** The candidate the Collapse promotes (null for CheckpointReturn). */
  candidate: string | null;
  /** The checks the governing Policy requires. */
  roster: readonly string[];
}

/** One statement as an object showed it. */
export interface ShownStatement {
  role: GraphRole;
  /** The object that showed it (for a Check: its uid, and the check name of its spec). */
  shownBy: { kind: 'World' | 'Check'; namespace: string; name: string; uid: string; check?: string };
  envelope: string;
  /** The digest the object shows next to it (a waiver from the World's spec shows none). */
  digest?: string;
}

export interface GraphBudget {
  maxObjects: number;
  maxBytes: number;
}

export const DEFAULT_GRAPH_BUDGET: GraphBudget = { maxObjects: 64, maxBytes: 4 << 20 };

export interface GraphInput {
  expect: GraphExpectations;
  statements: readonly ShownStatement[];
  policy: TrustPolicy;
  now: Date;
  memory: TrustMemory;
  budget?: GraphBudget;
  /** Trust read again after the graph was read: the policy as it is then, and a fresh clock reading (throws when the policy cannot be read). */
  refresh: () => { policy: TrustPolicy; now: Date };
}

export type GraphResult =
  | { ok: true; nodes: GraphNode[]; memory: TrustMemory }
  | { ok: false; reason: GraphFailure; message: string; memory: TrustMemory };

class Refused extends Error {
  constructor(
    readonly reason: GraphFailure,
    message: string,
  ) {
    super(message);
  }
}

interface Read<T> {
  shown: ShownStatement;
  digest: string;
  subject: Subject;
  predicate: T;
  signers: string[];
  /** The public keys (hex) that signed, to ask again at the refresh (labels may repeat across keys; these do not). */
  keys: string[];
  run: { start: Date; end: Date };
  validNow: boolean;
}

const where = (s: ShownStatement): string => `the ${s.role} shown by ${s.shownBy.kind} ${s.shownBy.namespace}/${s.shownBy.name}`;

/** Verifies the graph; see the file comment. */
export function verifyEvidenceGraph(input: GraphInput): GraphResult {
  const state = { memory: input.memory };
  try {
    const nodes = verify(input, state);
    return { ok: true, nodes, memory: state.memory };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, reason: e.reason, message: e.message, memory: state.memory };
    throw e;
  }
}

function keysFor(policy: TrustPolicy, role: GraphRole, node: string, run: { start: Date; end: Date } | undefined, now: Date, validNow: boolean, state: { memory: TrustMemory }, what: string): TrustedKey[] {
  const answer = trustedKeys(policy, { predicateType: ROLE_TYPES[role], node, run, now, validNow }, state.memory);
  if (!answer.ok) throw new Refused(answer.reason === 'NO_TRUSTED_SIGNER' ? 'EVIDENCE_UNTRUSTED' : answer.reason, `${what}: ${answer.message}`);
  state.memory = answer.memory;
  return answer.keys;
}

function verifyBytes(bytes: Buffer, keys: readonly TrustedKey[], what: string): { payload: Uint8Array; keyIds: string[]; publicKeys: string[] } {
  try {
    return verifyEnvelope(bytes, { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: keys });
  } catch (e) {
    if (!(e instanceof DsseError)) throw e;
    if (e.code === 'PAYLOAD_TYPE_MISMATCH') throw new Refused('EVIDENCE_PAYLOAD_TYPE', `${what}: ${e.message}`);
    if (e.code === 'NO_TRUSTED_SIGNATURE' || e.code === 'TOO_FEW_SIGNERS') throw new Refused('EVIDENCE_UNTRUSTED', `${what}: ${e.message}`);
    throw new Refused('EVIDENCE_MALFORMED', `${what}: ${e.code}: ${e.message}`);
  }
}

/** The run a statement asserts (its keys must be valid over it), from its predicate. */
function runOf(role: GraphRole, predicate: unknown, now: Date): { run: { start: Date; end: Date }; validNow: boolean } {
  if (role === 'check-execution') {
    const p = predicate as CheckExecution;
    return { run: { start: new Date(p.startedAt), end: new Date(p.finishedAt) }, validNow: true };
  }
  if (role === 'isolation-waiver') {
    // A waiver was spent at launch; it is judged over its own interval, not required to be valid now.
    const p = predicate as IsolationWaiver;
    return { run: { start: new Date(p.notBefore), end: new Date(Date.parse(p.notAfter) - 1) }, validNow: false };
  }
  return { run: { start: now, end: now }, validNow: true };
}

function readOne(input: GraphInput, s: ShownStatement, state: { memory: TrustMemory }): Read<unknown> {
  const what = where(s);
  const bytes = Buffer.from(s.envelope, 'utf8');
  const digest = DIGEST_PREFIX + sha256Hex(bytes);
  if (s.digest !== undefined && s.digest !== digest) throw new Refused('EVIDENCE_DIGEST_MISMATCH', `${what} hashes to ${digest}, not the ${s.digest} shown with it`);
  const node = input.expect.node;
  // Keys valid now first (so that nothing is parsed from bytes no trusted key signed; a waiver, judged over
  // its own interval and not now, by scope and revocation alone)...
  const waiver = s.role === 'isolation-waiver';
  const firstKeys = keysFor(input.policy, s.role, node, waiver ? undefined : { start: input.now, end: input.now }, input.now, !waiver, state, what);
  const first = verifyBytes(bytes, firstKeys, what);
  let parsed: { subject: Subject; predicate: unknown };
  try {
    parsed = parseStatement<unknown>(first.payload, ROLE_TYPES[s.role]);
  } catch (e) {
    if (!(e instanceof StatementError)) throw e;
    if (e.code === 'PREDICATE_TYPE_MISMATCH') throw new Refused('EVIDENCE_WRONG_ROLE', `${what} is not a ${s.role} statement: ${e.message}`);
    if (e.code === 'SUBJECT_MISMATCH') throw new Refused('EVIDENCE_SUBJECT_MISMATCH', `${what}: ${e.message}`);
    throw new Refused('EVIDENCE_MALFORMED', `${what}: ${e.code}: ${e.message}`);
  }
  // ...then the keys valid over the whole run the statement asserts.
  const { run, validNow } = runOf(s.role, parsed.predicate, input.now);
  const keys = keysFor(input.policy, s.role, node, run, input.now, validNow, state, what);
  const whole = verifyBytes(bytes, keys, `${what} (over the run it asserts)`);
  return { shown: s, digest, subject: parsed.subject, predicate: parsed.predicate, signers: whole.keyIds, keys: whole.publicKeys, run, validNow };
}

function verify(input: GraphInput, state: { memory: TrustMemory }): GraphNode[] {
  const { expect } = input;
  const budget = input.budget ?? DEFAULT_GRAPH_BUDGET;
  const worldRef = `worlds/${expect.world.namespace}/${expect.world.name}`;
  let objects = 0;
  let bytes = 0;
  const seen = new Set<string>();
  const reads: Read<unknown>[] = [];
  for (const s of input.statements) {
    // The budget is checked before each read; once exceeded, nothing more is read.
    const size = Buffer.byteLength(s.envelope, 'utf8');
    if (objects + 1 > budget.maxObjects) throw new Refused('EVIDENCE_BUDGET_EXCEEDED', `reading ${where(s)} would exceed the graph's ${budget.maxObjects} objects`);
    if (bytes + size > budget.maxBytes) throw new Refused('EVIDENCE_BUDGET_EXCEEDED', `reading ${where(s)} (${size} bytes) would exceed the graph's ${budget.maxBytes} bytes`);
    objects += 1;
    bytes += size;
    const r = readOne(input, s, state);
    if (seen.has(r.digest)) throw new Refused('EVIDENCE_DUPLICATE', `${where(s)} (${r.digest}) appears in the graph more than once`);
    seen.add(r.digest);
    reads.push(r);
  }

  const of = <T>(role: GraphRole): Read<T>[] => reads.filter((r) => r.shown.role === role) as Read<T>[];
  const kept: Read<unknown>[] = [];

  if (expect.mode === 'Candidate') {
    const observations = of<IsolationObservation>('isolation-observation');
    const decisions = of<IsolationDecision>('isolation-decision');
    const waivers = of<IsolationWaiver>('isolation-waiver');
    for (const [role, list] of [['isolation-observation', observations], ['isolation-decision', decisions]] as const) {
      if (list.length === 0) throw new Refused('EVIDENCE_MISSING', `the World ${expect.world.namespace}/${expect.world.name} shows no signed ${role}`);
      if (list.length > 1) throw new Refused('EVIDENCE_EXTRA', `the graph holds ${list.length} ${role} statements; one is expected`);
    }
    if (waivers.length > 1) throw new Refused('EVIDENCE_EXTRA', `the graph holds ${waivers.length} waivers; at most one is expected`);
    const obs = observations[0]!;
    const dec = decisions[0]!;
    // The observation: of this World's execution (its uid), about the base the API server shows.
    if (obs.predicate.executionId !== expect.world.uid) throw new Refused('EVIDENCE_WORLD_MISMATCH', `the isolation observation is of execution ${obs.predicate.executionId}, not of World ${expect.world.uid}`);
    const base = worldBaseSubject(worldRef, expect.base);
    if (obs.subject.name !== base.name) throw new Refused('EVIDENCE_WORLD_MISMATCH', `the isolation observation is about ${obs.subject.name}, not ${base.name}`);
    if (obs.subject.digest !== base.digest || obs.predicate.subject !== base.digest) throw new Refused('EVIDENCE_SUBSTITUTED', `the isolation observation is about base ${obs.predicate.subject}; the World's base is ${base.digest}`);
    // The decision: about exactly that observation, under the same request.
    const observed = identityOf(obs.predicate);
    if (dec.subject.digest !== observed) throw new Refused('EVIDENCE_SUBSTITUTED', `the isolation decision is about observation ${dec.subject.digest}, not the one shown (${observed})`);
    if (dec.subject.name !== `${worldRef}/isolation-observation`) throw new Refused('EVIDENCE_WORLD_MISMATCH', `the isolation decision is about ${dec.subject.name}, not ${worldRef}/isolation-observation`);
    if (dec.predicate.requestIdentity !== obs.predicate.requestIdentity) throw new Refused('EVIDENCE_SUBSTITUTED', `the isolation decision evaluated request ${dec.predicate.requestIdentity}; the observation served ${obs.predicate.requestIdentity}`);
    kept.push(obs, dec);
    if (dec.predicate.outcome !== 'reported-sufficient') {
      const w = waivers[0];
      if (!w) throw new Refused('EVIDENCE_ISOLATION_INSUFFICIENT', `the isolation decision is ${dec.predicate.outcome} (${dec.predicate.reasons.join(', ')}) and the World holds no waiver`);
      if (w.predicate.world.namespace !== expect.world.namespace || w.predicate.world.name !== expect.world.name) throw new Refused('EVIDENCE_WORLD_MISMATCH', `the waiver is for World ${w.predicate.world.namespace}/${w.predicate.world.name}`);
      if (w.predicate.node !== undefined && w.predicate.node !== expect.node) throw new Refused('EVIDENCE_WORLD_MISMATCH', `the waiver is for node ${w.predicate.node}, not ${expect.node}`);
      const covered = waiverCovers(dec.predicate, w.predicate);
      if (!covered.ok) throw new Refused('EVIDENCE_ISOLATION_INSUFFICIENT', `the waiver does not cover the decision: ${covered.message}`);
      kept.push(w);
    } else if (waivers.length > 0) {
      throw new Refused('EVIDENCE_EXTRA', 'the graph holds a waiver for a reported-sufficient decision');
    }

    // Check executions about the promoted candidate; those about other candidates are not of this graph.
    const roster = new Set(expect.roster);
    const runs = of<CheckExecution>('check-execution').filter((r) => r.predicate.subject === expect.candidate);
    for (const r of runs) {
      const by = r.shown.shownBy;
      const p = r.predicate;
      if (p.world.uid !== expect.world.uid) throw new Refused('EVIDENCE_WORLD_MISMATCH', `${where(r.shown)} is a run for World ${p.world.uid}, not ${expect.world.uid}`);
      if (p.check.uid !== by.uid || p.check.namespace !== by.namespace || p.check.name !== by.name || p.checkName !== by.check) {
        throw new Refused('EVIDENCE_SUBSTITUTED', `${where(r.shown)} records Check ${p.check.namespace}/${p.check.name} (${p.check.uid}, check ${p.checkName}): it was not made for the object showing it`);
      }
      if (!roster.has(p.checkName)) throw new Refused('EVIDENCE_EXTRA', `${where(r.shown)} is a run of check ${p.checkName}, which the governing Policy does not require (roster: ${[...roster].join(', ') || 'none'})`);
    }
    for (const name of expect.roster) {
      if (!runs.some((r) => r.predicate.checkName === name)) throw new Refused('EVIDENCE_MISSING', `no signed run of required check ${name} on candidate ${expect.candidate ?? 'none'}`);
    }
    kept.push(...runs);
  }

  // Trust read again, now that the whole graph is read: every signer still trusted, no clock or snapshot gone back.
  let fresh: { policy: TrustPolicy; now: Date };
  try {
    fresh = input.refresh();
  } catch (e) {
    throw new Refused('TRUST_POLICY_UNREADABLE', `after the graph was read, the trust policy could not be read again: ${(e as Error).message}`);
  }
  for (const r of kept) {
    const answer = trustedKeys(fresh.policy, { predicateType: ROLE_TYPES[r.shown.role], node: expect.node, run: r.run, now: fresh.now, validNow: r.validNow }, state.memory);
    if (!answer.ok) throw new Refused(answer.reason === 'NO_TRUSTED_SIGNER' ? 'EVIDENCE_REVOKED' : answer.reason, `after the graph was read, ${where(r.shown)}: ${answer.message}`);
    state.memory = answer.memory;
    const still = new Set(answer.keys.map((k) => Buffer.from(k.publicKey).toString('hex')));
    if (!r.keys.some((k) => still.has(k))) throw new Refused('EVIDENCE_REVOKED', `after the graph was read, no key that signed ${where(r.shown)} is trusted any longer`);
  }

  return kept.map((r): GraphNode => ({ role: r.shown.role, ...(r.shown.role === 'check-execution' ? { check: (r.predicate as CheckExecution).checkName } : {}), digest: r.digest, signers: r.signers }));
}
