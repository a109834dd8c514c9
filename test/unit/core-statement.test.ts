// in-toto statements carried in DSSE, end to end in pure code: an isolation observation signed, verified
// and read back; and every way of re-pointing, widening or mislabelling a statement refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { canonicalJson } from '../../core/canonical-json.js';
import { digestOf } from '../../core/digest.js';
import { evaluate } from '../../core/isolation/evaluate.js';
import { identityOf } from '../../core/isolation/identity.js';
import type { IsolationObservation } from '../../core/isolation/records.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope, verifyEnvelope } from '../../core/evidence/dsse.js';
import { parseStatement, PREDICATE_TYPES, STATEMENT_TYPE, StatementError, statementBytes, type PredicateType, type Subject } from '../../core/evidence/statement.js';
import { observation, policy, request, rule, SUBJECT } from './core-isolation-fixtures.js';
import { outcomeOf } from '../support/error-code.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const trusted = [{ keyId: 'node-a', publicKey: Buffer.from((publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url') }];
const p = policy(rule());
const r = request();
const obs = observation(p, r);
const subject: Subject = { name: 'candidate', digest: SUBJECT, size: 4096, mediaType: 'application/vnd.worldline.candidate+json' };
const codeOf = (f: () => unknown): string => outcomeOf(f, StatementError);
/** A statement's JSON with one change, as bytes. */
const edited = (edit: (s: Record<string, any>) => void, base = statementBytes(subject, PREDICATE_TYPES.isolationObservation, obs)): Buffer => {
  const s = JSON.parse(base.toString()) as Record<string, any>;
  edit(s);
  return Buffer.from(canonicalJson(s));
};

test('an isolation observation signed in a DSSE envelope verifies and reads back as the same record about the same subject', () => {
  const env = signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(subject, PREDICATE_TYPES.isolationObservation, obs), { keyId: 'node-a', privateKey });
  const v = verifyEnvelope(Buffer.from(JSON.stringify(env)), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted });
  const s = parseStatement<IsolationObservation>(v.payload, PREDICATE_TYPES.isolationObservation);
  assert.deepEqual(s.subject, subject);
  assert.deepEqual(s.predicate, obs);
  assert.equal(JSON.parse(Buffer.from(v.payload).toString())._type, STATEMENT_TYPE);
});

test('a decision statement is about the observation it evaluated', () => {
  const d = evaluate(p, r, obs);
  const about: Subject = { name: 'observation', digest: identityOf(obs), size: 100, mediaType: 'application/vnd.worldline.isolation-observation+json' };
  assert.equal(parseStatement(statementBytes(about, PREDICATE_TYPES.isolationDecision, d), PREDICATE_TYPES.isolationDecision).subject.digest, d.observationIdentity);
  const other = { ...about, digest: digestOf({ another: 'observation' }) };
  assert.equal(codeOf(() => parseStatement(statementBytes(other, PREDICATE_TYPES.isolationDecision, d), PREDICATE_TYPES.isolationDecision)), 'SUBJECT_MISMATCH');
});

test('re-pointed, widened or mislabelled statements are refused by name', () => {
  const read = (b: Buffer, t: PredicateType = PREDICATE_TYPES.isolationObservation) => codeOf(() => parseStatement(b, t));
  assert.equal(read(statementBytes({ ...subject, digest: digestOf({ other: 'bytes' }) }, PREDICATE_TYPES.isolationObservation, obs)), 'SUBJECT_MISMATCH', 'a subject the predicate is not about');
  assert.equal(read(edited((s) => s.subject.push(s.subject[0]))), 'SUBJECT_INVALID', 'two subjects');
  assert.equal(read(edited((s) => (s.subject[0].digest = { sha256: s.subject[0].digest.sha256, sha512: 'ab' }))), 'SUBJECT_INVALID', 'another digest algorithm');
  assert.equal(read(edited((s) => delete s.subject[0].annotations)), 'SUBJECT_INVALID', 'no size');
  assert.equal(read(edited((s) => delete s.subject[0].mediaType)), 'SUBJECT_INVALID', 'no media type');
  assert.equal(read(edited((s) => (s.subject[0].annotations.size = -1))), 'SUBJECT_INVALID');
  assert.equal(read(edited((s) => (s.predicate.trustedBy = 'me'))), 'PREDICATE_INVALID', 'an unknown predicate field');
  assert.equal(read(edited((s) => (s.extension = {}))), 'STATEMENT_INVALID', 'an unknown statement field');
  assert.equal(read(edited((s) => (s._type = 'https://in-toto.io/Statement/v0.1'))), 'STATEMENT_INVALID');
  assert.equal(read(statementBytes(subject, PREDICATE_TYPES.isolationObservation, obs), PREDICATE_TYPES.isolationDecision), 'PREDICATE_TYPE_MISMATCH', 'an observation read as a decision');
  assert.equal(read(Buffer.from('{"_type":"https://in-toto.io/Statement/v1","_type":"x"}')), 'STATEMENT_INVALID', 'duplicate keys');
  assert.equal(read(Buffer.from([0xff, 0xfe])), 'STATEMENT_INVALID', 'not UTF-8');
});
