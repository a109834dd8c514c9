// The error model (core/errors.ts): only a Refusal is terminal; an errno error — whose code is
// UPPER_SNAKE-looking (ENOENT, EBUSY, EAGAIN) — is transient and never becomes a reason by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asRefusal, classifyError, describeError, errnoOf, isRefusal, Refusal, refusalFromErrno, TransientFailure } from '../../core/errors.js';
import { CanonicalJsonError } from '../../core/canonical-json.js';
import { StoreError } from '../../node-agent/store/store-errors.js';
import { CheckSetupError } from '../../node-agent/checks/materialize.js';
import { ObservationRefused, StartRefused } from '../../node-agent/sandbox/supervise.js';
import { SlotsExhausted } from '../../node-agent/sandbox/id-slots.js';

function errno(code: string, errnum: number, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed, ${syscall} '/x'`), { code, errno: errnum, syscall });
}

test('ENOENT, EBUSY and EAGAIN are transient, with the errno named', () => {
  for (const [code, n] of [['ENOENT', -2], ['EBUSY', -16], ['EAGAIN', -11]] as const) {
    const c = classifyError(errno(code, n, 'open'));
    assert.equal(c.terminal, false, code);
    assert.equal(c.terminal === false && c.errno, code);
    assert.equal(isRefusal(errno(code, n, 'open')), false);
  }
});

test('a real ENOENT from the kernel is transient and its errno is read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-errors-'));
  try {
    let caught: unknown;
    try {
      readFileSync(join(dir, 'missing'));
    } catch (e) {
      caught = e;
    }
    assert.equal(errnoOf(caught), 'ENOENT');
    const c = classifyError(caught);
    assert.equal(c.terminal, false);
    assert.match(c.message, /^ENOENT: no such file or directory/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unknown errors, TransientFailure and coded failures that are not refusals are transient', () => {
  assert.deepEqual(classifyError(new TypeError('x is undefined')), { terminal: false, errno: undefined, message: 'x is undefined' });
  assert.deepEqual(classifyError('a string'), { terminal: false, errno: undefined, message: 'a string' });
  const t = new TransientFailure('not now', { code: 'RESOURCES_UNAVAILABLE' });
  assert.equal(classifyError(t).terminal, false);
  assert.equal(t.code, 'RESOURCES_UNAVAILABLE');
  const slots = new SlotsExhausted(4);
  assert.equal(classifyError(slots).terminal, false, 'all id ranges taken is a wait, not a refusal');
  assert.equal(slots.code, 'RESOURCES_UNAVAILABLE');
  // A bare Error whose code looks named is still not a refusal: only the class decides.
  assert.equal(classifyError(Object.assign(new Error('x'), { code: 'CHECK_NOT_IN_POLICY' })).terminal, false);
});

test('a Refusal and its subclasses are terminal with their own code and message', () => {
  assert.deepEqual(classifyError(new Refusal('CHECK_NOT_IN_POLICY', 'no Policy defines it')), { terminal: true, code: 'CHECK_NOT_IN_POLICY', message: 'no Policy defines it' });
  const cases: [Error, string][] = [
    [new StoreError('ROOT_PATH_MISSING', '/x is gone'), 'ROOT_PATH_MISSING'],
    [new CheckSetupError('CANDIDATE_INVALID', 'bad'), 'CANDIDATE_INVALID'],
    [new ObservationRefused(['uid map wrong']), 'ISOLATION_OBSERVATION_INVALID'],
    [new StartRefused('ISOLATION_INSUFFICIENT', 'insufficient'), 'ISOLATION_INSUFFICIENT'],
    [new CanonicalJsonError('$.a', 'NaN'), 'CANONICAL_JSON_INVALID'],
  ];
  for (const [err, code] of cases) {
    const c = classifyError(err);
    assert.equal(c.terminal, true, err.name);
    assert.equal(c.terminal && c.code, code);
    assert.equal(c.message, err.message);
  }
});

test('refusalFromErrno wraps an errno in a named code, the errno in the message', () => {
  const ebusy = errno('EBUSY', -16, 'rmdir');
  const r = refusalFromErrno('WORLD_SETUP_FAILED', ebusy, 'removing the world directory');
  assert.ok(r instanceof Refusal);
  assert.equal(r.code, 'WORLD_SETUP_FAILED');
  assert.equal(r.message, "removing the world directory: EBUSY: failed, rmdir '/x'");
  assert.equal(r.cause, ebusy);
  // An errno message that does not name it gets it in front.
  const bare = Object.assign(new Error('resource busy'), { code: 'EAGAIN' });
  assert.equal(refusalFromErrno('WORLD_SETUP_FAILED', bare).message, 'EAGAIN: resource busy');
  assert.equal(describeError(bare), 'EAGAIN: resource busy');
  // The addon's sandbox setup error carries its errno apart from its code.
  assert.equal(errnoOf({ code: 'ERR_SANDBOX_SETUP', errnoCode: 'EPERM' }), 'EPERM');
});

test('asRefusal keeps a refusal and wraps anything else, so no errno reaches a reason raw', () => {
  const refusal = new Refusal('CGROUP_UNAVAILABLE', 'no cgroup');
  assert.equal(asRefusal(refusal, 'WORLD_SETUP_FAILED'), refusal);
  const wrapped = asRefusal(errno('ENOENT', -2, 'open'), 'WORLD_SETUP_FAILED');
  assert.equal(wrapped.code, 'WORLD_SETUP_FAILED');
  assert.match(wrapped.message, /ENOENT/);
  assert.equal(errnoOf(wrapped), undefined, 'the wrapped refusal carries no errno code of its own');
});
