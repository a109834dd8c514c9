import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  absentId,
  executedMatchesDeclared,
  generationId,
  idFrom,
  IdentityError,
  idsEqual,
  presentId,
  unmeasuredId,
  valueOf,
  type Id,
} from '../../core/collapse/identity.js';

test('identity: two absent or unmeasured values are never equal', () => {
  const missing: Id<'parent'>[] = [absentId('parent'), unmeasuredId('parent'), idFrom('parent', null), idFrom('parent', undefined), idFrom('parent', '')];
  for (const a of missing) {
    for (const b of missing) assert.equal(idsEqual(a, b), false);
    assert.equal(idsEqual(a, a), false, 'not even with itself');
    assert.equal(idsEqual(a, presentId('parent', 'x')), false);
    assert.equal(idsEqual(presentId('parent', 'x'), a), false);
  }
});

test('identity: present values are equal exactly when their text is', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
      assert.equal(idsEqual(presentId('base', a), presentId('base', b)), a === b);
    }),
  );
});

test('identity: different kinds never compare equal, even with the same value', () => {
  const parent = presentId('parent', 'sha256:1');
  const base = presentId('base', 'sha256:1');
  // The compiler refuses idsEqual(parent, base); an untyped caller gets false.
  assert.equal(idsEqual(parent as Id<string>, base as Id<string>), false);
});

test('identity: constructors', () => {
  assert.deepEqual(presentId('delta', 'd'), { kind: 'delta', present: true, value: 'd' });
  assert.deepEqual(absentId('delta'), { kind: 'delta', present: false, why: 'absent' });
  assert.deepEqual(unmeasuredId('delta'), { kind: 'delta', present: false, why: 'unmeasured' });
  assert.throws(() => presentId('delta', ''), IdentityError);
  assert.deepEqual(generationId(7), { kind: 'primeGeneration', present: true, value: '7' });
  assert.deepEqual(generationId(null), { kind: 'primeGeneration', present: false, why: 'unmeasured' });
  assert.throws(() => generationId(-1), IdentityError);
  assert.throws(() => generationId(1.5), IdentityError);
  assert.equal(valueOf(presentId('world', 'u')), 'u');
  assert.equal(valueOf(absentId('world')), null);
});

test('identity: declared and executed verifier identities compare by value, with presence', () => {
  assert.equal(executedMatchesDeclared(presentId('verifierDeclared', 'v'), presentId('verifierExecuted', 'v')), true);
  assert.equal(executedMatchesDeclared(presentId('verifierDeclared', 'v'), presentId('verifierExecuted', 'w')), false);
  assert.equal(executedMatchesDeclared(absentId('verifierDeclared'), absentId('verifierExecuted')), false);
  assert.equal(executedMatchesDeclared(presentId('verifierDeclared', 'v'), unmeasuredId('verifierExecuted')), false);
});

test('identity: refusals are IdentityErrors with a code and a message naming the kind', () => {
  const refused = (fn: () => unknown, message: RegExp): void =>
    assert.throws(fn, (e: unknown) => e instanceof IdentityError && e.code === 'IDENTITY_INVALID' && e.name === 'IdentityError' && message.test(e.message));
  refused(() => presentId('delta', ''), /^identity delta: a present value must be a non-empty string$/);
  // Untyped callers: a non-string value is refused even when it is "non-empty".
  refused(() => presentId('delta', 5 as unknown as string), /^identity delta: /);
  refused(() => presentId('delta', ['x'] as unknown as string), /^identity delta: /);
  refused(() => generationId(-1), /^identity primeGeneration: -1 is not a non-negative integer$/);
  refused(() => generationId(2 ** 53), /is not a non-negative integer$/);
});

test('identity: generation 0 is a present identity (the first generation), and idFrom keeps present values', () => {
  assert.deepEqual(generationId(0), { kind: 'primeGeneration', present: true, value: '0' });
  assert.deepEqual(generationId(undefined), { kind: 'primeGeneration', present: false, why: 'unmeasured' });
  assert.deepEqual(idFrom('base', 'sha256:b'), { kind: 'base', present: true, value: 'sha256:b' });
  assert.deepEqual(idFrom('base', undefined), { kind: 'base', present: false, why: 'absent' });
});

test('identity: executedMatchesDeclared refuses identities of the wrong kind (untyped callers)', () => {
  const declared = presentId('verifierDeclared', 'v');
  const executed = presentId('verifierExecuted', 'v');
  type D = Parameters<typeof executedMatchesDeclared>[0];
  type E = Parameters<typeof executedMatchesDeclared>[1];
  // Swapped or otherwise mis-kinded arguments carry the same value but are not a declared/executed pair.
  assert.equal(executedMatchesDeclared(executed as unknown as D, executed), false);
  assert.equal(executedMatchesDeclared(declared, declared as unknown as E), false);
  assert.equal(executedMatchesDeclared(presentId('base', 'v') as unknown as D, presentId('base', 'v') as unknown as E), false);
});
