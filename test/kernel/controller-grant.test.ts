// The controller's collapse grant as the node-agent takes it (node-agent/evidence/controller-grant.ts),
// with a real trust policy file and a real evidence store on disk. A grant signed the way the
// controller's grant issuer signs it, naming two statements this node put in its store, verifies and
// becomes the grant to spend, with the check run it names read back from the node's own bytes. Whether a
// grant is needed at all follows the policy file: only a collapse-grant signer pinned for this node (or a
// file that cannot be read) requires one. Each way of passing off another grant is refused by name: an
// unpinned signer or an unreadable policy
// (GRANT_UNTRUSTED), bytes that are not a grant statement (GRANT_INVALID), a grant for another
// transaction, Collapse, World, candidate, node, mode or roster, or one calling a stored statement a check
// run when it is not (GRANT_MISMATCH), and a grant naming evidence this node never stored
// (GRANT_EVIDENCE_UNKNOWN); a waiver it names is not looked for there.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIGEST_PREFIX, digestOf, sha256Hex } from '../../core/digest.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../../core/evidence/dsse.js';
import { COLLAPSE_GRANT_VALID_MS, transactionRefSubject, type CollapseGrantPredicate } from '../../core/evidence/collapse-grant.js';
import { CANDIDATE_MEDIA_TYPE } from '../../core/evidence/check-execution.js';
import { worldBaseSubject } from '../../core/evidence/isolation-attestation.js';
import { PREDICATE_TYPES, statementBytes, type PredicateType, type Subject } from '../../core/evidence/statement.js';
import type { TrustPolicy } from '../../core/evidence/trust-policy.js';
import { EvidenceStore } from '../../node-agent/evidence/evidence-store.js';
import { ControllerGrantRefused, ControllerGrants, type GrantExpectation } from '../../node-agent/evidence/controller-grant.js';
import { outcomeOf } from '../support/error-code.js';
import { HOUR_MS, iso, issuerKey, signerRule, writeTrustPolicy, type IssuerKey } from '../support/waivers.js';
import { passingRun } from '../support/evidence-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'wl-controller-grant-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const store = new EvidenceStore(join(dir, 'store'));

const controller = issuerKey();
const nodeKey = issuerKey();
const GRANT = PREDICATE_TYPES.collapseGrant;

let files = 0;
/** A trust policy file with these signer rules and a fresh revocation snapshot. */
function policyFile(signers: TrustPolicy['signers']): string {
  const path = join(dir, `trust-policy-${++files}.json`);
  writeTrustPolicy(path, signers);
  return path;
}
/** The controller's key pinned for collapse grants on `nodes`. */
const pinned = (nodes: string[] | undefined = ['n1'], over: Partial<TrustPolicy['signers'][number]> = {}): TrustPolicy['signers'][number] => ({ ...signerRule('controller', controller, GRANT), ...(nodes ? { nodes } : {}), ...over });
const PINNED = policyFile([pinned(), signerRule('node-n1', nodeKey, PREDICATE_TYPES.checkExecution)]);
const GARBAGE = join(dir, 'garbage.json');
writeFileSync(GARBAGE, '{"signers": [');

function grants(trustPolicyPath: string | undefined, nodeName = 'n1'): ControllerGrants {
  return new ControllerGrants({ trustPolicyPath, nodeName, now: () => new Date(), evidence: store, waitMs: 30_000 });
}

// ---- two statements this node produced, in its evidence store ---------------------------------------------

const signed = (k: IssuerKey, subject: Subject, type: PredicateType, predicate: unknown): string =>
  JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(subject, type, predicate), { keyId: 'node-n1', privateKey: k.privateKey }));

const CANDIDATE = digestOf({ candidate: 'the change w1 made' });
const base = worldBaseSubject('worlds/default/w1', [{ root: 'repo', generation: 3, digest: `sha256:${'c'.repeat(64)}` }]);
const observationEnvelope = signed(nodeKey, base, PREDICATE_TYPES.isolationObservation, {
  schemaVersion: 1,
  kind: 'IsolationObservation',
  backend: 'worldline-sandbox',
  backendVersion: '0.1.0',
  executionId: 'u-1',
  requestIdentity: digestOf({ request: 'w1' }),
  policyIdentity: digestOf({ policy: 'w1' }),
  subject: base.digest,
  target: { os: 'linux', arch: 'amd64' },
  achievedLevel: 'os-sandboxed',
  enforcedControls: ['network-denied'],
  complete: true,
});
const runEnvelope = signed(nodeKey, { name: `candidates/${CANDIDATE}`, digest: CANDIDATE, size: 512, mediaType: CANDIDATE_MEDIA_TYPE }, PREDICATE_TYPES.checkExecution, passingRun(new Date(), CANDIDATE));
const OBSERVATION = store.put(Buffer.from(observationEnvelope));
const RUN = store.put(Buffer.from(runEnvelope));
const ABSENT = DIGEST_PREFIX + sha256Hex('an envelope this node never stored');

// ---- grants, signed as the controller's grant issuer signs them -------------------------------------------

const ABOUT = { collapse: { namespace: 'default', name: 'c1', uid: 'col-1' }, transaction: 'tx-0001-a' };

function predicate(over: Partial<CollapseGrantPredicate> = {}): CollapseGrantPredicate {
  const now = Date.now();
  return {
    grantId: ABOUT.transaction,
    about: ABOUT,
    world: { namespace: 'default', name: 'w1', uid: 'u-1' },
    node: 'n1',
    mode: 'Candidate',
    candidate: CANDIDATE,
    roster: ['verify'],
    evidence: [
      { role: 'isolation-observation', digest: OBSERVATION, signers: ['node-n1'] },
      { role: 'check-execution', check: 'verify', digest: RUN, signers: ['node-n1'] },
    ],
    notBefore: iso(now),
    notAfter: iso(now + COLLAPSE_GRANT_VALID_MS),
    ...over,
  };
}

/** The statement's payload and the envelope's JSON text, as GrantIssuer makes them (subject: the transaction reference). */
function signGrant(p: CollapseGrantPredicate, k: IssuerKey = controller, subject: Subject = transactionRefSubject(p.about)): { payload: Buffer; envelope: string } {
  const payload = statementBytes(subject, GRANT, p);
  return { payload, envelope: JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: 'controller', privateKey: k.privateKey })) };
}

const EXPECT: GrantExpectation = { collapse: ABOUT.collapse, transaction: ABOUT.transaction, world: { uid: 'u-1' }, mode: 'Candidate', candidate: CANDIDATE, roster: ['verify'] };

const codeOf = (f: () => unknown): string => outcomeOf(f, ControllerGrantRefused);
/** The refusal `f` ends in (the test fails if it returns or throws anything else). */
function refusal(f: () => unknown): ControllerGrantRefused {
  try {
    f();
  } catch (e) {
    if (e instanceof ControllerGrantRefused) return e;
    throw e;
  }
  return assert.fail('the grant verified');
}
function refused(f: () => unknown, code: ControllerGrantRefused['code'], message: RegExp): void {
  const e = refusal(f);
  assert.equal(e.code, code, e.message);
  assert.match(e.message, message);
}

// ---- tests ------------------------------------------------------------------------------------------------

test('a valid grant verifies and becomes the grant to spend: the transaction id, the exact statement payload and its interval', () => {
  // The statements it names are the node's envelopes, under the SHA-256 of their text.
  assert.equal(OBSERVATION, DIGEST_PREFIX + sha256Hex(observationEnvelope));
  assert.equal(RUN, DIGEST_PREFIX + sha256Hex(runEnvelope));
  const p = predicate();
  const { payload, envelope } = signGrant(p);
  const { grant: g, runs } = grants(PINNED).verify(envelope, EXPECT);
  assert.equal(g.id, 'tx-0001-a');
  assert.ok(Buffer.isBuffer(g.bytes));
  assert.deepEqual(g.bytes, payload);
  assert.deepEqual(g.notBefore, new Date(p.notBefore));
  assert.deepEqual(g.notAfter, new Date(p.notAfter));
  // The check runs it names, as this node's own stored statements record them.
  assert.deepEqual(runs, [{ checkUid: 'c-1', checkName: 'verify', verdict: 'PASS', requirementHash: digestOf({ requirement: 'verify' }), subject: CANDIDATE }]);
  // The roster is compared as a set of names: the controller's order need not be the node's.
  const two = signGrant(predicate({ roster: ['verify', 'lint'] })).envelope;
  assert.equal(codeOf(() => grants(PINNED).verify(two, { ...EXPECT, roster: ['lint', 'verify'] })), 'ok');
});

test('required(): only a collapse-grant signer pinned for this node, or a policy that cannot be read, requires the grant', () => {
  assert.equal(grants(undefined).required(), false, 'no trust policy configured');
  assert.equal(grants(policyFile([pinned(['n2'])])).required(), false, 'a grant signer pinned for another node only');
  assert.equal(grants(policyFile([signerRule('waivers', controller)])).required(), false, 'a policy with no collapse-grant signer');
  assert.equal(grants(PINNED).required(), true);
  assert.equal(grants(policyFile([pinned(undefined)])).required(), true, 'a grant signer for every node');
  assert.equal(grants(PINNED, 'n2').required(), false, 'the same policy, read by node n2');
  assert.equal(grants(GARBAGE).required(), true, 'a garbage policy file');
  assert.equal(grants(join(dir, 'no-such-policy.json')).required(), true, 'a missing policy file');
});

test('GRANT_UNTRUSTED: a grant signed by a key the policy does not pin for grants on this node, or under a policy that cannot be read', () => {
  const { envelope } = signGrant(predicate(), issuerKey());
  refused(() => grants(PINNED).verify(envelope, EXPECT), 'GRANT_UNTRUSTED', /^NO_TRUSTED_SIGNATURE: no signature verifies under a trusted key$/);
  // The node's own key is trusted for its evidence, not for grants.
  refused(() => grants(PINNED).verify(signGrant(predicate(), nodeKey).envelope, EXPECT), 'GRANT_UNTRUSTED', /^NO_TRUSTED_SIGNATURE: /);
  const valid = signGrant(predicate()).envelope;
  refused(() => grants(GARBAGE).verify(valid, EXPECT), 'GRANT_UNTRUSTED', /^no grant verifies: the trust policy .*garbage\.json cannot be read: /);
  refused(() => grants(undefined).verify(valid, EXPECT), 'GRANT_UNTRUSTED', /^no grant verifies: the trust policy {2}cannot be read/);
  refused(() => grants(policyFile([pinned(['n2'])])).verify(valid, EXPECT), 'GRANT_UNTRUSTED', /^NO_TRUSTED_SIGNER: no signer rule trusts a key for .*collapse-grant\/v1 on node n1/);
});

test('GRANT_UNTRUSTED: the pinned key must be valid over the grant\'s whole interval, not only now', () => {
  const now = Date.now();
  const shortLived = policyFile([pinned(['n1'], { validFrom: iso(now - HOUR_MS), validUntil: iso(now + 60_000) })]);
  assert.equal(codeOf(() => grants(shortLived).verify(signGrant(predicate({ notAfter: iso(now + 30_000) })).envelope, EXPECT)), 'ok', 'a grant inside the key\'s validity');
  refused(() => grants(shortLived).verify(signGrant(predicate()).envelope, EXPECT), 'GRANT_UNTRUSTED', /^NO_TRUSTED_SIGNER: .* over the asserted run$/);
});

test('GRANT_INVALID: a truncated envelope, and a validly signed statement that is not a grant for its own subject', () => {
  const { envelope } = signGrant(predicate());
  refused(() => grants(PINNED).verify(envelope.slice(0, Math.floor(envelope.length / 2)), EXPECT), 'GRANT_INVALID', /^ENVELOPE_INVALID: /);
  // Re-pointed: the grant for tx-0001-a signed as a statement about transaction tx-0002-b.
  const repointed = signGrant(predicate(), controller, transactionRefSubject({ ...ABOUT, transaction: 'tx-0002-b' })).envelope;
  refused(() => grants(PINNED).verify(repointed, EXPECT), 'GRANT_INVALID', /^SUBJECT_MISMATCH: /);
  const unknownField = signGrant({ ...predicate(), spendTwice: true } as CollapseGrantPredicate).envelope;
  refused(() => grants(PINNED).verify(unknownField, EXPECT), 'GRANT_INVALID', /^PREDICATE_INVALID: .*spendTwice/);
});

test('GRANT_MISMATCH: a grant for another transaction, Collapse, World, candidate, node, mode or roster', () => {
  const mismatch = (p: CollapseGrantPredicate, message: RegExp) => refused(() => grants(PINNED).verify(signGrant(p).envelope, EXPECT), 'GRANT_MISMATCH', message);
  // A replayed grant: validly issued, for another transaction of the same Collapse.
  mismatch(predicate({ grantId: 'tx-0002-b', about: { ...ABOUT, transaction: 'tx-0002-b' } }), /^the grant is for transaction "tx-0002-b", not "tx-0001-a"$/);
  // A grant id that is not the transaction it is about.
  mismatch(predicate({ grantId: 'tx-0002-b' }), /^the grant is for grant id "tx-0002-b", not "tx-0001-a"$/);
  mismatch(predicate({ about: { ...ABOUT, collapse: { ...ABOUT.collapse, uid: 'col-2' } } }), /^the grant is for Collapse \{"namespace":"default","name":"c1","uid":"col-2"\}, not /);
  mismatch(predicate({ world: { namespace: 'default', name: 'w1', uid: 'u-2' } }), /^the grant is for World "u-2", not "u-1"$/);
  const other = digestOf({ candidate: 'another change' });
  mismatch(predicate({ candidate: other }), new RegExp(`^the grant is for candidate "${other}", not "${CANDIDATE}"$`));
  mismatch(predicate({ node: 'n2' }), /^the grant is for node "n2", not "n1"$/);
  mismatch(predicate({ mode: 'CheckpointReturn', candidate: null }), /^the grant is for mode "CheckpointReturn", not "Candidate"$/);
  mismatch(predicate({ roster: ['lint', 'verify'] }), /^the grant is for roster \["lint","verify"\], not \["verify"\]$/);
  mismatch(predicate({ roster: [] }), /^the grant is for roster \[\], not \["verify"\]$/);
});

test('GRANT_EVIDENCE_UNKNOWN: a grant naming a statement this node\'s evidence store does not hold; a waiver it names is not looked up', () => {
  const evidence = predicate().evidence;
  const unknown = predicate({ evidence: [...evidence, { role: 'isolation-decision', digest: ABSENT, signers: ['node-n1'] }] });
  refused(() => grants(PINNED).verify(signGrant(unknown).envelope, EXPECT), 'GRANT_EVIDENCE_UNKNOWN', new RegExp(`^the grant names isolation-decision ${ABSENT}, which this node's evidence store does not hold as such: EVIDENCE_MISSING: `));
  const withWaiver = predicate({ evidence: [...evidence, { role: 'isolation-waiver', digest: ABSENT, signers: ['waiver-issuer'] }] });
  const verified = grants(PINNED).verify(signGrant(withWaiver).envelope, EXPECT);
  assert.equal(verified.grant.id, 'tx-0001-a');
  assert.deepEqual(verified.runs.map((r) => r.checkUid), ['c-1']);
});

test('GRANT_MISMATCH: a stored statement the grant names as a check run that is not one', () => {
  const relabelled = predicate({ evidence: [{ role: 'check-execution', check: 'verify', digest: OBSERVATION, signers: ['node-n1'] }] });
  refused(() => grants(PINNED).verify(signGrant(relabelled).envelope, EXPECT), 'GRANT_MISMATCH', new RegExp(`^the grant names ${OBSERVATION} as a check run, which it is not: PREDICATE_TYPE_MISMATCH: `));
});
