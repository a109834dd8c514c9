// Isolation waivers in pure code: the statement's closed predicate and exact subject, the coverage rule
// (missing controls only, each named), and `worldline waiver sign` producing what the node verifies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson } from '../../core/canonical-json.js';
import { IN_TOTO_PAYLOAD_TYPE, verifyEnvelope } from '../../core/evidence/dsse.js';
import { waiverCovers, worldRefSubject, type IsolationWaiver } from '../../core/evidence/isolation-waiver.js';
import { parseStatement, PREDICATE_TYPES, StatementError, statementBytes } from '../../core/evidence/statement.js';
import { runWaiver } from '../../cli/waiver.js';
import { outcomeOf } from '../support/error-code.js';

const base: IsolationWaiver = {
  grantId: 'grant-0001',
  world: { namespace: 'team', name: 'job' },
  stage: 'agent',
  waivedControls: ['no-credentials', 'network-denied'],
  notBefore: '2026-12-03T00:00:00.000Z',
  notAfter: '2026-12-03T01:00:00.000Z',
  reason: 'needs the host network',
};
const read = (bytes: Uint8Array): string => outcomeOf(() => parseStatement(bytes, PREDICATE_TYPES.isolationWaiver), StatementError);
const statement = (w: unknown, subject = worldRefSubject(base.world)): Buffer => statementBytes(subject, PREDICATE_TYPES.isolationWaiver, w);

test('a waiver statement reads back; its subject is exactly its World reference (digest, size and media type)', () => {
  assert.deepEqual(parseStatement(statement(base), PREDICATE_TYPES.isolationWaiver).predicate, base);
  assert.equal(read(statement(base, worldRefSubject({ namespace: 'team', name: 'other' }))), 'SUBJECT_MISMATCH');
  assert.equal(read(statement(base, { ...worldRefSubject(base.world), size: 7 })), 'SUBJECT_MISMATCH');
  assert.equal(read(statement(base, { ...worldRefSubject(base.world), mediaType: 'text/plain' })), 'SUBJECT_MISMATCH');
});

test('the waiver predicate is closed and bounded', () => {
  for (const bad of [
    { ...base, extra: true },
    { ...base, waivedControls: [] },
    { ...base, waivedControls: ['network-denied', 'no-credentials'] }, // not canonical order
    { ...base, waivedControls: ['network-denied', 'network-denied'] },
    { ...base, waivedControls: ['telepathy'] },
    { ...base, stage: 'check' },
    { ...base, notAfter: base.notBefore },
    { ...base, notAfter: '2026-12-20T00:00:00.000Z' }, // longer than 7 days
    { ...base, grantId: 'short' },
    { ...base, world: { namespace: 'team', name: 'job', uid: 'x' } },
  ]) {
    assert.equal(read(Buffer.from(canonicalJson({ ...JSON.parse(statement(base).toString()), predicate: bad }))), 'PREDICATE_INVALID', JSON.stringify(bad));
  }
});

test('a waiver covers a decision only when every reason is a missing control it names', () => {
  const d = (reasons: string[], missingControls: string[]): Parameters<typeof waiverCovers>[0] => ({ outcome: reasons.length ? 'rejected' : 'reported-sufficient', reasons, missingControls } as never);
  assert.deepEqual(waiverCovers(d(['CONTROLS_MISSING'], ['network-denied']), base), { ok: true, waived: ['network-denied'] });
  assert.deepEqual(waiverCovers(d(['CONTROLS_MISSING'], ['no-credentials', 'network-denied']), base), { ok: true, waived: ['no-credentials', 'network-denied'] });
  assert.equal(waiverCovers(d(['CONTROLS_MISSING'], ['no-devices']), base).ok, false);
  for (const other of ['TARGET_MISMATCH', 'ENFORCEMENT_INCOMPLETE', 'LEVEL_INSUFFICIENT', 'STAGE_NOT_CONFIGURED', 'POLICY_NETWORK_UNSPECIFIED', 'REQUEST_MISMATCH']) {
    const c = waiverCovers(d(['CONTROLS_MISSING', other], ['network-denied']), base);
    assert.equal(c.ok, false, other);
    assert.match((c as { message: string }).message, new RegExp(other));
  }
  assert.equal(waiverCovers(d([], []), base).ok, false, 'nothing to waive in a sufficient decision');
});

test('worldline waiver keygen and sign make an envelope the public key verifies, for exactly the World and controls given', () => {
  const dir = mkdtempSync(join(tmpdir(), 'waiver-cli-'));
  try {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
    const key = join(dir, 'issuer.pem');
    assert.equal(runWaiver(['keygen', '--private-key', key], io), 0, err.join(''));
    assert.equal(statSync(key).mode & 0o777, 0o600);
    const publicHex = out.join('').trim();
    assert.match(publicHex, /^[0-9a-f]{64}$/);
    assert.equal(runWaiver(['keygen', '--private-key', key], io), 2, 'an existing key file was overwritten');
    out.length = 0;
    const now = new Date('2026-12-03T10:00:00.000Z');
    assert.equal(runWaiver(['sign', '--key', key, '--world', 'team/job', '--controls', 'network-denied,no-credentials', '--reason', 'host network for the release job', '--for', '30m', '--node', 'node-1', '--grant-id', 'grant-cli-1'], io, now), 0, err.join(''));
    const v = verifyEnvelope(Buffer.from(out.join('').trim()), { payloadType: IN_TOTO_PAYLOAD_TYPE, trusted: [{ keyId: 'issuer', publicKey: Buffer.from(publicHex, 'hex') }] });
    const w = parseStatement<IsolationWaiver>(v.payload, PREDICATE_TYPES.isolationWaiver).predicate;
    assert.deepEqual(w, {
      grantId: 'grant-cli-1',
      world: { namespace: 'team', name: 'job' },
      node: 'node-1',
      stage: 'agent',
      waivedControls: ['no-credentials', 'network-denied'],
      notBefore: '2026-12-03T10:00:00.000Z',
      notAfter: '2026-12-03T10:30:00.000Z',
      reason: 'host network for the release job',
    });
    err.length = 0;
    assert.equal(runWaiver(['sign', '--key', key, '--world', 'job', '--controls', 'network-denied', '--reason', 'x'], io, now), 2);
    assert.match(err.join(''), /--world must be NS\/NAME/);
    assert.equal(runWaiver(['sign', '--key', key, '--world', 'team/job', '--controls', 'telepathy', '--reason', 'x'], io, now), 2);
    assert.equal(runWaiver(['sign', '--key', key, '--world', 'team/job', '--controls', 'network-denied', '--reason', 'x', '--for', '30d'], io, now), 2);
    assert.match(err.join(''), /at most 604800 s/);
    assert.ok(readFileSync(key, 'utf8').startsWith('-----BEGIN PRIVATE KEY-----'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
