// verifyEvidenceGraph under attack, with really signed statements. One valid graph for World default/w1
// on node n1 (its isolation observation and decision, and the run of its one required check) verifies
// and is reported node by node. Then each forgery or substitution is tried on it: bytes cut short or not
// matching their digest, a subject re-pointed, the wrong payload type, a key revoked, expired, out of
// scope or not valid over the run it signed, a check outside the roster or one missing, evidence replayed
// from another World or moved to another object, nodes added, dropped, repeated or put in the wrong slot,
// a budget exhausted mid-graph, an insufficient isolation decision with and without a waiver, and trust
// that changes or goes back in time between reading the graph and the fresh reading after it. Each is
// refused with its own reason and message, and a refusal returns no nodes at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DIGEST_PREFIX, digestOf, sha256Hex } from '../../core/digest.js';
import { evaluate } from '../../core/isolation/evaluate.js';
import type { IsolationObservation, IsolationRequest } from '../../core/isolation/records.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../../core/evidence/dsse.js';
import { PREDICATE_TYPES, statementBytes, type PredicateType, type Subject } from '../../core/evidence/statement.js';
import { observationSubject, worldBaseSubject, type BaseEntryRef } from '../../core/evidence/isolation-attestation.js';
import { CANDIDATE_MEDIA_TYPE, type CheckExecution } from '../../core/evidence/check-execution.js';
import { worldRefSubject, type IsolationWaiver } from '../../core/evidence/isolation-waiver.js';
import type { TrustMemory, TrustPolicy } from '../../core/evidence/trust-policy.js';
import { verifyEvidenceGraph, type GraphExpectations, type GraphFailure, type GraphInput, type GraphResult, type ShownStatement } from '../../core/evidence/evidence-graph.js';
import { observation, OS_SANDBOXED_CONTROLS, policy, request, rule } from './core-isolation-fixtures.js';
import { namedKey, passingRun, type NamedKey } from '../support/evidence-fixtures.js';

// ---- time, keys and trust ---------------------------------------------------------------------------------

const NOW = new Date('2026-12-03T10:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const at = (ms: number): Date => new Date(NOW.getTime() + ms);
const iso = (ms: number): string => at(ms).toISOString();

type Key = NamedKey;
const key = namedKey;
const nodeKey = key('node-n1');
const waiverKey = key('waiver-issuer');
const forger = key('forger');

const OBS = PREDICATE_TYPES.isolationObservation;
const DEC = PREDICATE_TYPES.isolationDecision;
const RUN = PREDICATE_TYPES.checkExecution;
const WAIVER = PREDICATE_TYPES.isolationWaiver;

type Rule = TrustPolicy['signers'][number];
/** A rule trusting `k` for the node's evidence on n1, valid from a day ago to a day ahead. */
const nodeRule = (k: Key, over: Partial<Rule> = {}): Rule => ({ issuer: k.issuer, publicKey: k.hex, predicateTypes: [OBS, DEC, RUN], nodes: ['n1'], validFrom: iso(-DAY), validUntil: iso(DAY), ...over });
/** A rule trusting `k` for waivers on any node. */
const waiverRule = (k: Key): Rule => ({ issuer: k.issuer, publicKey: k.hex, predicateTypes: [WAIVER], validFrom: iso(-DAY), validUntil: iso(DAY) });
function trust(signers: Rule[], o: { revoked?: string[]; issuedAt?: number } = {}): TrustPolicy {
  return { signers, revocations: { issuedAt: iso(o.issuedAt ?? -MINUTE), maxAgeSeconds: 3600, revokedPublicKeys: o.revoked ?? [] } };
}
const POLICY = trust([nodeRule(nodeKey), waiverRule(waiverKey)]);

// ---- the World, its isolation records and its check run ---------------------------------------------------

const WORLD = { namespace: 'default', name: 'w1', uid: 'u-1' };
const W1 = 'worlds/default/w1';
const BASE: BaseEntryRef[] = [{ root: 'repo', generation: 3, digest: `sha256:${'c'.repeat(64)}` }];
const OTHER_BASE: BaseEntryRef[] = [{ root: 'repo', generation: 4, digest: `sha256:${'d'.repeat(64)}` }];
const CANDIDATE = digestOf({ candidate: 'the change w1 made' });
const isoPolicy = policy(rule());

/** An observation of one execution over a World's base, and the decision evaluating it (reported-sufficient unless a control is not enforced). */
function isolation(o: { worldRef?: string; base?: BaseEntryRef[]; obs?: Partial<IsolationObservation>; req?: Partial<IsolationRequest> } = {}) {
  const worldRef = o.worldRef ?? W1;
  const baseSubject = worldBaseSubject(worldRef, o.base ?? BASE);
  const req = request({ subject: baseSubject.digest, ...o.req });
  const obs = observation(isoPolicy, req, { executionId: WORLD.uid, ...o.obs });
  return { baseSubject, req, obs, dec: evaluate(isoPolicy, req, obs), obsSubject: observationSubject(worldRef, obs) };
}

const checkRun = (over: Partial<CheckExecution> = {}): CheckExecution => passingRun(NOW, CANDIDATE, over);
const candidateSubject = (digest: string): Subject => ({ name: `candidates/${digest}`, digest, size: 512, mediaType: CANDIDATE_MEDIA_TYPE });

// ---- statements as objects show them ----------------------------------------------------------------------

/** The envelope's JSON text: `predicate` about `subject`, signed by `k`. */
function sign(k: Key, subject: Subject, type: PredicateType, predicate: unknown, payloadType = IN_TOTO_PAYLOAD_TYPE): string {
  return JSON.stringify(signEnvelope(payloadType, statementBytes(subject, type, predicate), { keyId: k.issuer, privateKey: k.privateKey }));
}
const envelopeDigest = (text: string): string => DIGEST_PREFIX + sha256Hex(Buffer.from(text, 'utf8'));

const BY_WORLD: ShownStatement['shownBy'] = { kind: 'World', namespace: 'default', name: 'w1', uid: WORLD.uid };
const BY_CHECK: ShownStatement['shownBy'] = { kind: 'Check', namespace: 'default', name: 'w1-verify', uid: 'c-1', check: 'verify' };
const show = (role: ShownStatement['role'], envelope: string, shownBy = BY_WORLD): ShownStatement => ({ role, shownBy, envelope, digest: envelopeDigest(envelope) });
const showRun = (p: CheckExecution, shownBy = BY_CHECK, k = nodeKey): ShownStatement => show('check-execution', sign(k, candidateSubject(p.subject), RUN, p), shownBy);

/** One fully valid graph: the observation and decision the World shows, and the run its Check shows. */
function validGraph() {
  const r = isolation();
  return {
    r,
    obs: show('isolation-observation', sign(nodeKey, r.baseSubject, OBS, r.obs)),
    dec: show('isolation-decision', sign(nodeKey, r.obsSubject, DEC, r.dec)),
    run: showRun(checkRun()),
  };
}
const G = validGraph();
const ALL = [G.obs, G.dec, G.run];

const EXPECT: GraphExpectations = { world: WORLD, node: 'n1', base: BASE, mode: 'Candidate', candidate: CANDIDATE, roster: ['verify'] };

function verify(statements: readonly ShownStatement[], over: Partial<Omit<GraphInput, 'expect'>> = {}, expect: Partial<GraphExpectations> = {}): GraphResult {
  return verifyEvidenceGraph({ expect: { ...EXPECT, ...expect }, statements, policy: POLICY, now: NOW, memory: {}, refresh: () => ({ policy: POLICY, now: at(1000) }), ...over });
}

/** The graph was refused with exactly `reason`, a message matching `message`, and nothing partial. */
function refused(result: GraphResult, reason: GraphFailure, message: RegExp): void {
  if (result.ok) assert.fail(`the graph verified; ${reason} was expected`);
  assert.equal(result.reason, reason, result.message);
  assert.match(result.message, message);
  assert.equal('nodes' in result, false, 'a refusal returned nodes');
}

function ok(result: GraphResult) {
  if (!result.ok) assert.fail(`the graph was refused: ${result.reason}: ${result.message}`);
  return result;
}

// ---- the valid graph --------------------------------------------------------------------------------------

test('the valid graph verifies: observation, decision and check run, each by the digest of its envelope text and its signer\'s issuer label', () => {
  const result = ok(verify(ALL));
  assert.deepEqual(result.nodes, [
    { role: 'isolation-observation', digest: `sha256:${sha256Hex(G.obs.envelope)}`, signers: ['node-n1'] },
    { role: 'isolation-decision', digest: `sha256:${sha256Hex(G.dec.envelope)}`, signers: ['node-n1'] },
    { role: 'check-execution', check: 'verify', digest: `sha256:${sha256Hex(G.run.envelope)}`, signers: ['node-n1'] },
  ]);
  assert.equal(G.r.dec.outcome, 'reported-sufficient');
  // The trust state seen moves forward to the fresh reading taken after the graph was read.
  assert.deepEqual(result.memory, { latestNow: at(1000), latestSnapshot: at(-MINUTE) });
  // The order the objects show them in does not matter.
  assert.deepEqual(ok(verify([G.run, G.dec, G.obs])).nodes.map((n) => n.role), ['isolation-observation', 'isolation-decision', 'check-execution']);
});

// ---- bytes ------------------------------------------------------------------------------------------------

test('an envelope cut in half is EVIDENCE_MALFORMED, even under the digest of its own (cut) bytes', () => {
  const cut = G.obs.envelope.slice(0, Math.floor(G.obs.envelope.length / 2));
  refused(verify([show('isolation-observation', cut), G.dec, G.run]), 'EVIDENCE_MALFORMED', /^the isolation-observation shown by World default\/w1: ENVELOPE_INVALID: /);
});

test('an envelope that does not hash to the digest shown next to it is EVIDENCE_DIGEST_MISMATCH', () => {
  refused(verify([{ ...G.obs, digest: G.dec.digest! }, G.dec, G.run]), 'EVIDENCE_DIGEST_MISMATCH', new RegExp(`hashes to ${G.obs.digest!}, not the ${G.dec.digest!} shown with it`));
  // One byte of whitespace is other bytes, though the JSON means the same.
  refused(verify([{ ...G.obs, envelope: `${G.obs.envelope} ` }, G.dec, G.run]), 'EVIDENCE_DIGEST_MISMATCH', /hashes to sha256:[0-9a-f]{64}, not the/);
});

test('a statement whose signed subject is not what its predicate is about is EVIDENCE_SUBJECT_MISMATCH', () => {
  // The observation's predicate names the World's base, its subject another base.
  const swappedObs = show('isolation-observation', sign(nodeKey, worldBaseSubject(W1, OTHER_BASE), OBS, G.r.obs));
  refused(verify([swappedObs, G.dec, G.run]), 'EVIDENCE_SUBJECT_MISMATCH', /^the isolation-observation shown by World default\/w1: the subject sha256:[0-9a-f]{64} is not what the predicate is about/);
  // The decision signed with the observation's subject (the base) instead of the observation.
  const swappedDec = show('isolation-decision', sign(nodeKey, G.r.baseSubject, DEC, G.r.dec));
  refused(verify([G.obs, swappedDec, G.run]), 'EVIDENCE_SUBJECT_MISMATCH', new RegExp(`the subject ${G.r.baseSubject.digest} is not what the predicate is about \\(${G.r.dec.observationIdentity!}\\)`));
});

test('a validly signed envelope of another payload type is EVIDENCE_PAYLOAD_TYPE', () => {
  const json = show('isolation-observation', sign(nodeKey, G.r.baseSubject, OBS, G.r.obs, 'application/json'));
  refused(verify([json, G.dec, G.run]), 'EVIDENCE_PAYLOAD_TYPE', /payload type "application\/json", expected "application\/vnd\.in-toto\+json"/);
});

// ---- keys -------------------------------------------------------------------------------------------------

test('a statement signed by a key the policy does not name is EVIDENCE_UNTRUSTED', () => {
  const forged = show('isolation-observation', sign(forger, G.r.baseSubject, OBS, G.r.obs));
  refused(verify([forged, G.dec, G.run]), 'EVIDENCE_UNTRUSTED', /^the isolation-observation shown by World default\/w1: no signature verifies under a trusted key/);
});

test('a revoked key, an expired key, and a valid key outside its node or predicate types are EVIDENCE_UNTRUSTED', () => {
  const untrusted = (policy: TrustPolicy, message: RegExp) => refused(verify(ALL, { policy }), 'EVIDENCE_UNTRUSTED', message);
  untrusted(trust([nodeRule(nodeKey)], { revoked: [nodeKey.hex] }), /^the isolation-observation shown by World default\/w1: no signer rule trusts a key for https:\/\/worldline\.dev\/attestations\/isolation-observation\/v1 on node n1/);
  untrusted(trust([nodeRule(nodeKey, { validFrom: iso(-2 * DAY), validUntil: iso(-1) })]), /isolation-observation shown by World default\/w1: no signer rule trusts a key/);
  untrusted(trust([nodeRule(nodeKey, { nodes: ['n2'] })]), /no signer rule trusts a key for .*isolation-observation\/v1 on node n1/);
  // Trusted for the isolation records only: the observation and decision verify, the check run does not.
  untrusted(trust([nodeRule(nodeKey, { predicateTypes: [OBS, DEC] })]), /^the check-execution shown by Check default\/w1-verify: no signer rule trusts a key for https:\/\/worldline\.dev\/attestations\/check-execution\/v1 on node n1/);
  // A node key is not a waiver issuer: a node cannot waive its own isolation.
  const rejected = isolation({ obs: { enforcedControls: OS_SANDBOXED_CONTROLS.filter((c) => c !== 'network-denied') } });
  const selfWaiver = { role: 'isolation-waiver' as const, shownBy: BY_WORLD, envelope: sign(nodeKey, worldRefSubject({ namespace: 'default', name: 'w1' }), WAIVER, waiverFor(['network-denied'])) };
  refused(
    verify([show('isolation-observation', sign(nodeKey, rejected.baseSubject, OBS, rejected.obs)), show('isolation-decision', sign(nodeKey, rejected.obsSubject, DEC, rejected.dec)), selfWaiver, G.run]),
    'EVIDENCE_UNTRUSTED',
    /^the isolation-waiver shown by World default\/w1: no signature verifies under a trusted key/,
  );
});

test('a check run that began before its key was valid is EVIDENCE_UNTRUSTED, though the key is valid now', () => {
  const policy = trust([nodeRule(nodeKey, { validFrom: iso(-HOUR) })]);
  assert.equal(ok(verify(ALL, { policy })).nodes.length, 3, 'the run inside the key\'s validity verifies under the same policy');
  const early = showRun(checkRun({ startedAt: iso(-2 * HOUR), finishedAt: iso(-90 * MINUTE) }));
  refused(verify([G.obs, G.dec, early], { policy }), 'EVIDENCE_UNTRUSTED', /^the check-execution shown by Check default\/w1-verify: no signer rule trusts a key .* over the asserted run/);
});

test('a revocation snapshot older than its maximum age is REVOCATION_STALE before anything is read', () => {
  refused(verify(ALL, { policy: trust([nodeRule(nodeKey)], { issuedAt: -2 * HOUR }) }), 'REVOCATION_STALE', /^the isolation-observation shown by World default\/w1: the revocation snapshot of .* is not within 3600 s/);
});

// ---- the roster -------------------------------------------------------------------------------------------

test('a signed run of a check the roster does not require is EVIDENCE_EXTRA; a required check with no run is EVIDENCE_MISSING', () => {
  const other = showRun(checkRun({ check: { namespace: 'default', name: 'w1-other', uid: 'c-2' }, checkName: 'other' }), { kind: 'Check', namespace: 'default', name: 'w1-other', uid: 'c-2', check: 'other' });
  refused(verify([...ALL, other]), 'EVIDENCE_EXTRA', /^the check-execution shown by Check default\/w1-other is a run of check other, which the governing Policy does not require \(roster: verify\)/);
  refused(verify(ALL, {}, { roster: ['verify', 'lint'] }), 'EVIDENCE_MISSING', new RegExp(`^no signed run of required check lint on candidate ${CANDIDATE}`));
  refused(verify([G.obs, G.dec]), 'EVIDENCE_MISSING', /no signed run of required check verify/);
});

test('a run about another candidate is not of this graph: it neither counts for the roster nor is reported', () => {
  const elsewhere = showRun(checkRun({ subject: digestOf({ candidate: 'another change' }) }));
  refused(verify([G.obs, G.dec, elsewhere]), 'EVIDENCE_MISSING', /no signed run of required check verify/);
  assert.deepEqual(ok(verify([...ALL, elsewhere])).nodes.map((n) => n.digest), [G.obs.digest, G.dec.digest, G.run.digest]);
});

// ---- replay and substitution ------------------------------------------------------------------------------

test('an observation and decision replayed from World default/w2 onto w1 are EVIDENCE_WORLD_MISMATCH', () => {
  const w2 = isolation({ worldRef: 'worlds/default/w2', obs: { executionId: 'u-2' } });
  const replay = [show('isolation-observation', sign(nodeKey, w2.baseSubject, OBS, w2.obs)), show('isolation-decision', sign(nodeKey, w2.obsSubject, DEC, w2.dec)), G.run];
  refused(verify(replay), 'EVIDENCE_WORLD_MISMATCH', /^the isolation observation is of execution u-2, not of World u-1$/);
  // Even with this World's uid as its execution id, an observation about w2's base is not about w1's.
  const renamed = isolation({ worldRef: 'worlds/default/w2' });
  refused(verify([show('isolation-observation', sign(nodeKey, renamed.baseSubject, OBS, renamed.obs)), show('isolation-decision', sign(nodeKey, renamed.obsSubject, DEC, renamed.dec)), G.run]), 'EVIDENCE_WORLD_MISMATCH', /^the isolation observation is about worlds\/default\/w2\/base, not worlds\/default\/w1\/base$/);
  // A decision about this very observation, but as w2's.
  const w2Dec = show('isolation-decision', sign(nodeKey, observationSubject('worlds/default/w2', G.r.obs), DEC, G.r.dec));
  refused(verify([G.obs, w2Dec, G.run]), 'EVIDENCE_WORLD_MISMATCH', /^the isolation decision is about worlds\/default\/w2\/isolation-observation, not worlds\/default\/w1\/isolation-observation$/);
});

test('a check run made for another World is EVIDENCE_WORLD_MISMATCH', () => {
  refused(verify([G.obs, G.dec, showRun(checkRun({ world: { uid: 'u-2' } }))]), 'EVIDENCE_WORLD_MISMATCH', /^the check-execution shown by Check default\/w1-verify is a run for World u-2, not u-1$/);
});

test('a check run moved to another Check object is EVIDENCE_SUBSTITUTED', () => {
  const moved = showRun(checkRun({ check: { namespace: 'default', name: 'w1-verify', uid: 'c-9' } }));
  refused(verify([G.obs, G.dec, moved]), 'EVIDENCE_SUBSTITUTED', /^the check-execution shown by Check default\/w1-verify records Check default\/w1-verify \(c-9, check verify\): it was not made for the object showing it$/);
  // The same run shown by a Check whose spec names another check.
  refused(verify([G.obs, G.dec, { ...G.run, shownBy: { ...BY_CHECK, check: 'lint' } }]), 'EVIDENCE_SUBSTITUTED', /\(c-1, check verify\): it was not made for the object showing it/);
});

test('a decision about another observation, or under another request, is EVIDENCE_SUBSTITUTED', () => {
  const other = isolation({ obs: { backendVersion: '0.2.0' } });
  const otherDec = show('isolation-decision', sign(nodeKey, other.obsSubject, DEC, other.dec));
  refused(verify([G.obs, otherDec, G.run]), 'EVIDENCE_SUBSTITUTED', new RegExp(`^the isolation decision is about observation ${other.obsSubject.digest}, not the one shown \\(${G.r.obsSubject.digest}\\)$`));
  const otherRequest = evaluate(isoPolicy, request({ subject: G.r.baseSubject.digest, hostYoloAcknowledged: true }), G.r.obs);
  const underOther = show('isolation-decision', sign(nodeKey, G.r.obsSubject, DEC, otherRequest));
  refused(verify([G.obs, underOther, G.run]), 'EVIDENCE_SUBSTITUTED', new RegExp(`^the isolation decision evaluated request ${otherRequest.requestIdentity}; the observation served ${G.r.obs.requestIdentity}$`));
});

test('an observation of this World about another base is EVIDENCE_SUBSTITUTED', () => {
  const rebased = isolation({ base: OTHER_BASE });
  assert.equal(rebased.baseSubject.name, 'worlds/default/w1/base');
  const shown = [show('isolation-observation', sign(nodeKey, rebased.baseSubject, OBS, rebased.obs)), show('isolation-decision', sign(nodeKey, rebased.obsSubject, DEC, rebased.dec)), G.run];
  refused(verify(shown), 'EVIDENCE_SUBSTITUTED', new RegExp(`^the isolation observation is about base ${rebased.baseSubject.digest}; the World's base is ${G.r.baseSubject.digest}$`));
});

// ---- the shape of the graph -------------------------------------------------------------------------------

test('two observations are EVIDENCE_EXTRA; no decision or no observation is EVIDENCE_MISSING', () => {
  const second = isolation({ obs: { backendVersion: '0.2.0' } });
  refused(verify([G.obs, show('isolation-observation', sign(nodeKey, second.baseSubject, OBS, second.obs)), G.dec, G.run]), 'EVIDENCE_EXTRA', /^the graph holds 2 isolation-observation statements; one is expected$/);
  refused(verify([G.obs, G.run]), 'EVIDENCE_MISSING', /^the World default\/w1 shows no signed isolation-decision$/);
  refused(verify([G.dec, G.run]), 'EVIDENCE_MISSING', /^the World default\/w1 shows no signed isolation-observation$/);
  refused(verify([]), 'EVIDENCE_MISSING', /shows no signed isolation-observation/);
});

test('the same check run shown twice is EVIDENCE_DUPLICATE', () => {
  refused(verify([...ALL, G.run]), 'EVIDENCE_DUPLICATE', new RegExp(`^the check-execution shown by Check default/w1-verify \\(${G.run.digest!}\\) appears in the graph more than once$`));
});

test('the decision envelope in the observation\'s slot is EVIDENCE_WRONG_ROLE', () => {
  refused(verify([{ ...G.dec, role: 'isolation-observation' }, G.dec, G.run]), 'EVIDENCE_WRONG_ROLE', /^the isolation-observation shown by World default\/w1 is not a isolation-observation statement: predicate type "https:\/\/worldline\.dev\/attestations\/isolation-decision\/v1"/);
});

// ---- budget -----------------------------------------------------------------------------------------------

test('a budget exhausted mid-graph is EVIDENCE_BUDGET_EXCEEDED, naming the statement that would exceed it, before it is read', () => {
  refused(verify(ALL, { budget: { maxObjects: 2, maxBytes: 1 << 20 } }), 'EVIDENCE_BUDGET_EXCEEDED', /^reading the check-execution shown by Check default\/w1-verify would exceed the graph's 2 objects$/);
  const [o, d, r] = ALL.map((s) => Buffer.byteLength(s.envelope)) as [number, number, number];
  const maxBytes = o + d + r - 1;
  refused(verify(ALL, { budget: { maxObjects: 64, maxBytes } }), 'EVIDENCE_BUDGET_EXCEEDED', new RegExp(`^reading the check-execution shown by Check default/w1-verify \\(${r} bytes\\) would exceed the graph's ${maxBytes} bytes$`));
  assert.equal(ok(verify(ALL, { budget: { maxObjects: 3, maxBytes: o + d + r } })).nodes.length, 3, 'exactly the budget is within it');
  // Checked before reading: a third statement that is not even an envelope is never looked at.
  refused(verify([G.obs, G.dec, show('check-execution', 'not json', BY_CHECK)], { budget: { maxObjects: 2, maxBytes: 1 << 20 } }), 'EVIDENCE_BUDGET_EXCEEDED', /would exceed the graph's 2 objects/);
});

// ---- isolation not reported-sufficient, and waivers -------------------------------------------------------

function waiverFor(controls: IsolationWaiver['waivedControls'], over: Partial<IsolationWaiver> = {}): IsolationWaiver {
  return { grantId: 'waiver-w1-0001', world: { namespace: 'default', name: 'w1' }, node: 'n1', stage: 'agent', waivedControls: controls, notBefore: iso(-HOUR), notAfter: iso(HOUR), reason: 'the w1 job needs the host network', ...over };
}
const showWaiver = (w: IsolationWaiver, k = waiverKey): ShownStatement => ({ role: 'isolation-waiver', shownBy: BY_WORLD, envelope: sign(k, worldRefSubject(w.world), WAIVER, w) });

test('a rejected isolation decision with no waiver is EVIDENCE_ISOLATION_INSUFFICIENT; a trusted waiver naming its missing controls lets the graph verify', () => {
  const rejected = isolation({ obs: { enforcedControls: OS_SANDBOXED_CONTROLS.filter((c) => c !== 'network-denied') } });
  assert.equal(rejected.dec.outcome, 'rejected');
  assert.deepEqual(rejected.dec.reasons, ['CONTROLS_MISSING']);
  assert.deepEqual(rejected.dec.missingControls, ['network-denied']);
  const obs = show('isolation-observation', sign(nodeKey, rejected.baseSubject, OBS, rejected.obs));
  const dec = show('isolation-decision', sign(nodeKey, rejected.obsSubject, DEC, rejected.dec));
  refused(verify([obs, dec, G.run]), 'EVIDENCE_ISOLATION_INSUFFICIENT', /^the isolation decision is rejected \(CONTROLS_MISSING\) and the World holds no waiver$/);

  const waiver = showWaiver(waiverFor(['network-denied']));
  const result = ok(verify([obs, dec, waiver, G.run]));
  assert.deepEqual(result.nodes.map((n) => n.role), ['isolation-observation', 'isolation-decision', 'isolation-waiver', 'check-execution']);
  assert.deepEqual(result.nodes[2], { role: 'isolation-waiver', digest: envelopeDigest(waiver.envelope), signers: ['waiver-issuer'] });

  // A waiver naming other controls does not cover the decision; one for another World or node is not this World's.
  refused(verify([obs, dec, showWaiver(waiverFor(['no-devices'])), G.run]), 'EVIDENCE_ISOLATION_INSUFFICIENT', /^the waiver does not cover the decision: missing control\(s\) network-denied not named by the waiver/);
  refused(verify([obs, dec, showWaiver(waiverFor(['network-denied'], { world: { namespace: 'default', name: 'w2' } })), G.run]), 'EVIDENCE_WORLD_MISMATCH', /^the waiver is for World default\/w2$/);
  refused(verify([obs, dec, showWaiver(waiverFor(['network-denied'], { node: 'n2' })), G.run]), 'EVIDENCE_WORLD_MISMATCH', /^the waiver is for node n2, not n1$/);
  // A waiver next to a reported-sufficient decision has nothing to waive.
  refused(verify([...ALL, waiver]), 'EVIDENCE_EXTRA', /^the graph holds a waiver for a reported-sufficient decision$/);
});

// ---- trust read again after the graph ---------------------------------------------------------------------

test('trust read again after the graph: a key revoked meanwhile is EVIDENCE_REVOKED; an earlier clock CLOCK_ROLLBACK; an older snapshot REVOCATION_ROLLBACK; an unreadable policy TRUST_POLICY_UNREADABLE', () => {
  const then = (policy: TrustPolicy, now = at(1000)) => ({ refresh: () => ({ policy, now }) });
  refused(verify(ALL, then(trust([nodeRule(nodeKey)], { revoked: [nodeKey.hex], issuedAt: -MINUTE + 30_000 }))), 'EVIDENCE_REVOKED', /^after the graph was read, the isolation-observation shown by World default\/w1: no signer rule trusts a key/);
  // Rotated meanwhile: another key is trusted for the same evidence now, but not the one that signed it.
  const rotated = key('node-n1-next');
  refused(verify(ALL, then(trust([nodeRule(nodeKey), nodeRule(rotated)], { revoked: [nodeKey.hex], issuedAt: -MINUTE + 30_000 }))), 'EVIDENCE_REVOKED', /^after the graph was read, no key that signed the isolation-observation shown by World default\/w1 is trusted any longer$/);
  refused(verify(ALL, then(POLICY, at(-1000))), 'CLOCK_ROLLBACK', /^after the graph was read, the isolation-observation shown by World default\/w1: the clock reads 2026-12-03T09:59:59\.000Z, before 2026-12-03T10:00:00\.000Z already seen$/);
  refused(verify(ALL, then(trust([nodeRule(nodeKey)], { issuedAt: -2 * MINUTE }))), 'REVOCATION_ROLLBACK', /the revocation snapshot of 2026-12-03T09:58:00\.000Z is older than one already seen \(2026-12-03T09:59:00\.000Z\)/);
  const unreadable = verify(ALL, {
    refresh: () => {
      throw new Error('the trust policy ConfigMap is gone');
    },
  });
  refused(unreadable, 'TRUST_POLICY_UNREADABLE', /^after the graph was read, the trust policy could not be read again: the trust policy ConfigMap is gone$/);
  // The refusal still carries the trust state seen while reading, so the next verification cannot go back on it.
  assert.deepEqual(unreadable.memory, { latestNow: NOW, latestSnapshot: at(-MINUTE) });
});

test('a memory that has already seen a later clock is CLOCK_ROLLBACK at the first statement, and the memory is returned unchanged', () => {
  const memory: TrustMemory = { latestNow: at(MINUTE) };
  const result = verify(ALL, { memory });
  refused(result, 'CLOCK_ROLLBACK', /^the isolation-observation shown by World default\/w1: the clock reads 2026-12-03T10:00:00\.000Z, before 2026-12-03T10:01:00\.000Z already seen$/);
  assert.deepEqual(result.memory, memory);
  refused(verify(ALL, { memory: { latestSnapshot: at(-30_000) } }), 'REVOCATION_ROLLBACK', /is older than one already seen/);
});

// ---- CheckpointReturn -------------------------------------------------------------------------------------

test('a CheckpointReturn with no statements verifies with no nodes; a statement it does show is still verified', () => {
  const checkpoint = { mode: 'CheckpointReturn' as const, candidate: null, roster: [] };
  assert.deepEqual(ok(verify([], {}, checkpoint)).nodes, []);
  refused(verify([show('isolation-observation', sign(forger, G.r.baseSubject, OBS, G.r.obs))], {}, checkpoint), 'EVIDENCE_UNTRUSTED', /no signature verifies under a trusted key/);
});

test('two keys under one issuer label are told apart by their bytes: revoking the signer refuses, revoking the other does not', () => {
  // A rotation that keeps the label: the old key signed the graph, the new one is pinned under the same name.
  const next: Key = { ...key('next'), issuer: nodeKey.issuer };
  const both = [nodeRule(nodeKey), nodeRule(next)];
  const then = (revoked: string[]) => ({ policy: trust(both), refresh: () => ({ policy: trust(both, { revoked, issuedAt: -MINUTE + 30_000 }), now: at(1000) }) });
  refused(verify(ALL, then([nodeKey.hex])), 'EVIDENCE_REVOKED', /^after the graph was read, no key that signed the isolation-observation shown by World default\/w1 is trusted any longer$/);
  const kept = ok(verify(ALL, then([next.hex])));
  assert.deepEqual(kept.nodes.map((n) => n.signers), [[nodeKey.issuer], [nodeKey.issuer], [nodeKey.issuer]]);
});

test('a waiver is judged over its own interval: one that has ended, signed by a key valid over it, still speaks for the run it allowed', () => {
  const rejected = isolation({ obs: { enforcedControls: OS_SANDBOXED_CONTROLS.filter((c) => c !== 'network-denied') } });
  const obs = show('isolation-observation', sign(nodeKey, rejected.baseSubject, OBS, rejected.obs));
  const dec = show('isolation-decision', sign(nodeKey, rejected.obsSubject, DEC, rejected.dec));
  // The waiver ran 07:00 to 08:00; its key was pinned until 09:00; the collapse is at 10:00.
  const ended = showWaiver(waiverFor(['network-denied'], { notBefore: iso(-3 * HOUR), notAfter: iso(-2 * HOUR) }));
  const pinned = trust([nodeRule(nodeKey), { ...waiverRule(waiverKey), validFrom: iso(-DAY), validUntil: iso(-HOUR) }]);
  const result = ok(verify([obs, dec, ended, G.run], { policy: pinned, refresh: () => ({ policy: pinned, now: at(1000) }) }));
  assert.deepEqual(result.nodes.map((n) => n.role), ['isolation-observation', 'isolation-decision', 'isolation-waiver', 'check-execution']);
  // A key not valid over the waiver's whole interval is not trusted for it.
  const late = trust([nodeRule(nodeKey), { ...waiverRule(waiverKey), validFrom: iso(-150 * MINUTE), validUntil: iso(DAY) }]);
  refused(verify([obs, dec, ended, G.run], { policy: late, refresh: () => ({ policy: late, now: at(1000) }) }), 'EVIDENCE_UNTRUSTED', /^the isolation-waiver shown by World default\/w1: no signer rule trusts a key/);
});
