// `worldline evidence verify --world FILE --trust-policy FILE`: re-verifies, offline, the isolation
// statements a World's status carries (status.isolation.attestations) — with nothing from the node but
// what is on the object, and keys only from the trust policy the caller brings. The observation must be
// signed by a key the policy trusts now for isolation observations on the World's node, and be about the
// World's base (its subject's digest, size and media type those of the base on status); the decision must
// be signed likewise and be about exactly that observation; and what status says of the decision and the
// measured level and controls must be what was signed.
import { readFileSync } from 'node:fs';
import { describeError } from '../core/errors.js';
import { DsseError, IN_TOTO_PAYLOAD_TYPE, verifyEnvelope } from '../core/evidence/dsse.js';
import { observationSubject, worldBaseSubject, type BaseEntryRef } from '../core/evidence/isolation-attestation.js';
import { parseStatement, PREDICATE_TYPES, StatementError, type PredicateType, type Subject } from '../core/evidence/statement.js';
import { trustedKeys, type TrustPolicy } from '../core/evidence/trust-policy.js';
import type { IsolationDecision, IsolationObservation } from '../core/isolation/records.js';
import { readTrustPolicyFile } from '../kube/trust-policy-file.js';
import { CANDIDATE_MEDIA_TYPE, type CheckExecution } from '../core/evidence/check-execution.js';
import type { ReceiptBody } from '../core/receipts/receipt.js';
import { receiptDifferences } from './receipts-verify-status.js';
import type { Output } from './receipts-verify.js';

export const EVIDENCE_VERIFY_USAGE = `usage: worldline evidence verify (--world FILE | --check FILE | --collapse FILE) --trust-policy FILE

Re-verifies, offline, the signed isolation observation and decision on a World's status, the signed
execution record on a Check's status, or the signed receipt on a Collapse's status.
  --world FILE         the World as \`kubectl get world NAME -o json\` prints it
  --check FILE         the Check as \`kubectl get check NAME -o json\` prints it
  --collapse FILE      the Collapse as \`kubectl get collapse NAME -o json\` prints it
  --trust-policy FILE  the trust policy (the chart's trustPolicy as JSON): the keys it trusts for
                       isolation observations and decisions on the World's node, now
Exit status: 0 both verify; 1 a statement does not (its problem is named); 2 usage or read error.
`;

/** A code of this command (ATTESTATION_MISSING, SUBJECT_MISMATCH, STATUS_MISMATCH), of DSSE, statements or the trust policy. */
type Problem = string;

class Failed extends Error {
  constructor(
    readonly problem: Problem,
    message: string,
  ) {
    super(message);
  }
}

interface WorldView {
  metadata?: { namespace?: string; name?: string };
  status?: {
    nodeName?: string;
    base?: BaseEntryRef[];
    isolation?: {
      observation?: { achievedLevel?: string; enforcedControls?: string[]; complete?: boolean };
      decision?: { outcome?: string; reasons?: string[] };
      attestations?: { observation?: { envelope?: string }; decision?: { envelope?: string } };
    };
  };
}

function verified<T>(envelope: string | undefined, what: string, type: PredicateType, policy: TrustPolicy, node: string, now: Date): { subject: Subject; predicate: T; signers: string[] } {
  if (envelope === undefined) throw new Failed('ATTESTATION_MISSING', `status.isolation.attestations.${what} is missing`);
  const keys = trustedKeys(policy, { predicateType: type, node, run: { start: now, end: now }, now });
  if (!keys.ok) throw new Failed(keys.reason, `no key is trusted for the ${what} on node ${node}: ${keys.message}`);
  try {
    const v = verifyEnvelope(Buffer.from(envelope, 'utf8'), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: keys.keys });
    const s = parseStatement<T>(v.payload, type);
    return { ...s, signers: v.keyIds };
  } catch (e) {
    if (e instanceof DsseError || e instanceof StatementError) throw new Failed(e.code, `the ${what}: ${e.message}`);
    throw e;
  }
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Verifies the World's attestations; returns what it found, or throws Failed. */
export function verifyWorldEvidence(world: WorldView, policy: TrustPolicy, now: Date): { ref: string; node: string; outcome: string; signers: string[] } {
  const ns = world.metadata?.namespace ?? '';
  const name = world.metadata?.name ?? '';
  const ref = `worlds/${ns}/${name}`;
  const st = world.status;
  const node = st?.nodeName;
  if (!node || !st?.base) throw new Failed('ATTESTATION_MISSING', `${ref} has no node or base on its status`);
  const att = st.isolation?.attestations;
  const obs = verified<IsolationObservation>(att?.observation?.envelope, 'observation', PREDICATE_TYPES.isolationObservation, policy, node, now);
  const base = worldBaseSubject(ref, st.base);
  if (obs.subject.digest !== base.digest || obs.subject.size !== base.size || obs.subject.mediaType !== base.mediaType) {
    throw new Failed('SUBJECT_MISMATCH', `the observation is about ${obs.subject.digest} (${obs.subject.size} bytes of ${obs.subject.mediaType}), not the World's base ${base.digest}`);
  }
  const dec = verified<IsolationDecision>(att?.decision?.envelope, 'decision', PREDICATE_TYPES.isolationDecision, policy, node, now);
  const about = observationSubject(ref, obs.predicate);
  if (dec.subject.digest !== about.digest || dec.subject.size !== about.size || dec.subject.mediaType !== about.mediaType) {
    throw new Failed('SUBJECT_MISMATCH', `the decision is about ${dec.subject.digest}, not the signed observation ${about.digest}`);
  }
  const shown = st.isolation;
  if (shown?.decision?.outcome !== dec.predicate.outcome || !same(shown.decision.reasons ?? [], dec.predicate.reasons)) {
    throw new Failed('STATUS_MISMATCH', `status says ${shown?.decision?.outcome} (${(shown?.decision?.reasons ?? []).join(', ')}); the signed decision says ${dec.predicate.outcome} (${dec.predicate.reasons.join(', ')})`);
  }
  const o = shown.observation;
  if (o?.achievedLevel !== obs.predicate.achievedLevel || !same(o.enforcedControls, obs.predicate.enforcedControls) || o.complete !== obs.predicate.complete) {
    throw new Failed('STATUS_MISMATCH', `status says level ${o?.achievedLevel}, controls ${(o?.enforcedControls ?? []).join(', ')}; the signed observation says ${obs.predicate.achievedLevel}, ${obs.predicate.enforcedControls.join(', ')}`);
  }
  return { ref, node, outcome: dec.predicate.outcome, signers: [...new Set([...obs.signers, ...dec.signers])].sort() };
}

interface CheckView {
  metadata?: { namespace?: string; name?: string; uid?: string };
  status?: {
    nodeName?: string;
    subject?: string;
    verdict?: string;
    requirementHash?: string;
    verifierIdentity?: string;
    executedVerifierIdentity?: string;
    exit?: { code?: number; signal?: string; reason?: string };
    startedAt?: string;
    finishedAt?: string;
    attestation?: { envelope?: string };
  };
}

/** Verifies a Check's signed execution record; returns what it found, or throws Failed. */
export function verifyCheckEvidence(check: CheckView, policy: TrustPolicy, now: Date): { ref: string; node: string; outcome: string; signers: string[] } {
  const ref = `checks/${check.metadata?.namespace ?? ''}/${check.metadata?.name ?? ''}`;
  const st = check.status;
  const node = st?.nodeName;
  if (!node || !st.subject) throw new Failed('ATTESTATION_MISSING', `${ref} has no node or subject on its status`);
  const rec = verified<CheckExecution>(st.attestation?.envelope, 'check execution record', PREDICATE_TYPES.checkExecution, policy, node, now);
  if (rec.subject.digest !== st.subject || rec.subject.mediaType !== CANDIDATE_MEDIA_TYPE) {
    throw new Failed('SUBJECT_MISMATCH', `the record is about ${rec.subject.digest} (${rec.subject.mediaType}), not the candidate ${st.subject} on status`);
  }
  const p = rec.predicate;
  const shown = {
    check: { namespace: check.metadata?.namespace, name: check.metadata?.name, uid: check.metadata?.uid },
    verdict: st.verdict,
    requirementHash: st.requirementHash,
    verifierIdentity: st.verifierIdentity,
    executedVerifierIdentity: st.executedVerifierIdentity,
    exit: { code: st.exit?.code ?? null, signal: st.exit?.signal ?? null, reason: st.exit?.reason ?? '' },
    startedAt: st.startedAt,
    finishedAt: st.finishedAt,
  };
  const signed = { check: p.check, verdict: p.verdict, requirementHash: p.requirementHash, verifierIdentity: p.verifierIdentity, executedVerifierIdentity: p.executedVerifierIdentity, exit: p.exit, startedAt: p.startedAt, finishedAt: p.finishedAt };
  for (const k of Object.keys(signed) as (keyof typeof signed)[]) {
    if (!same(shown[k], signed[k])) throw new Failed('STATUS_MISMATCH', `status says ${k} ${JSON.stringify(shown[k])}; the signed record says ${JSON.stringify(signed[k])}`);
  }
  return { ref, node, outcome: p.verdict, signers: rec.signers };
}

/** Verifies a Collapse's receipt statement; returns what it found, or throws Failed. */
export function verifyCollapseEvidence(collapse: Record<string, unknown> & { metadata?: { namespace?: string; name?: string }; status?: { nodeName?: string; receipt?: { id?: string }; attestation?: { envelope?: string } } }, policy: TrustPolicy, now: Date): { ref: string; node: string; outcome: string; signers: string[] } {
  const ref = `collapses/${collapse.metadata?.namespace ?? ''}/${collapse.metadata?.name ?? ''}`;
  const st = collapse.status;
  const node = st?.nodeName;
  if (!node || !st.receipt?.id) throw new Failed('ATTESTATION_MISSING', `${ref} has no node or receipt on its status`);
  const rec = verified<ReceiptBody>(st.attestation?.envelope, 'receipt', PREDICATE_TYPES.collapseReceipt, policy, node, now);
  if (rec.subject.digest !== st.receipt.id) throw new Failed('SUBJECT_MISMATCH', `the signed receipt is ${rec.subject.digest}, not the receipt ${st.receipt.id} on status`);
  const diff = receiptDifferences(collapse, rec.predicate);
  if (diff.length > 0) throw new Failed('STATUS_MISMATCH', diff.join('; '));
  return { ref, node, outcome: rec.predicate.transaction.state, signers: rec.signers };
}

export function runEvidenceVerify(args: readonly string[], io: Output, now: Date = new Date()): number {
  let worldPath: string | undefined;
  let checkPath: string | undefined;
  let collapsePath: string | undefined;
  let trustPath: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') {
      io.out(EVIDENCE_VERIFY_USAGE);
      return 0;
    }
    const value = args[i + 1];
    if ((a === '--world' || a === '--check' || a === '--collapse' || a === '--trust-policy') && value !== undefined) {
      if (a === '--world') worldPath = value;
      else if (a === '--check') checkPath = value;
      else if (a === '--collapse') collapsePath = value;
      else trustPath = value;
      i++;
      continue;
    }
    io.err(`worldline evidence verify: unexpected argument ${JSON.stringify(a)}\n${EVIDENCE_VERIFY_USAGE}`);
    return 2;
  }
  const given = [worldPath, checkPath, collapsePath].filter((p) => p !== undefined);
  const objectPath = given[0];
  if (objectPath === undefined || given.length > 1 || trustPath === undefined) {
    io.err(`worldline evidence verify: one of --world, --check or --collapse, and --trust-policy, are required\n${EVIDENCE_VERIFY_USAGE}`);
    return 2;
  }
  let object: WorldView & CheckView;
  let policy: TrustPolicy;
  try {
    object = JSON.parse(readFileSync(objectPath, 'utf8')) as WorldView & CheckView;
    policy = readTrustPolicyFile(trustPath);
  } catch (e) {
    io.err(`worldline evidence verify: ${describeError(e)}\n`);
    return 2;
  }
  try {
    if (collapsePath !== undefined) {
      const r = verifyCollapseEvidence(object as unknown as Parameters<typeof verifyCollapseEvidence>[0], policy, now);
      io.out(`OK ${r.ref}: the receipt (${r.outcome}) is signed by ${r.signers.join(', ')}, trusted for node ${r.node}, is the receipt on status, and says what its status says\n`);
    } else if (checkPath !== undefined) {
      const r = verifyCheckEvidence(object, policy, now);
      io.out(`OK ${r.ref}: the execution record (${r.outcome}) is signed by ${r.signers.join(', ')}, trusted for node ${r.node}, about the candidate on status, and says what its status says\n`);
    } else {
      const r = verifyWorldEvidence(object, policy, now);
      io.out(`OK ${r.ref}: the isolation observation and decision (${r.outcome}) are signed by ${r.signers.join(', ')}, trusted for node ${r.node}, about the World's base, and say what its status says\n`);
    }
    return 0;
  } catch (e) {
    if (!(e instanceof Failed)) throw e;
    io.err(`FAIL ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}: ${e.problem}: ${e.message}\n`);
    return 1;
  }
}
