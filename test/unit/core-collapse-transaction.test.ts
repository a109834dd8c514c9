import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../core/collapse/decide.js';
import { isFinal, transition, TRANSACTION_STATES, type TransactionEvent, type TransactionState } from '../../core/collapse/transaction.js';

const yes: Decision = { authorized: true, reasons: [] };
const no: Decision = { authorized: false, reasons: ['CONFLICT'] };
const events: Record<string, TransactionEvent> = {
  'authorize(yes)': { kind: 'authorize', decision: yes },
  'authorize(no)': { kind: 'authorize', decision: no },
  'commit(yes)': { kind: 'commit', decision: yes },
  'commit(no)': { kind: 'commit', decision: no },
  'deny(CONFLICT)': { kind: 'deny', reasons: ['CONFLICT'] },
  'deny()': { kind: 'deny', reasons: [] },
};

// Every state × every event. A state name is the next state; anything else is the refusal code.
const table: Record<TransactionState, Record<string, string>> = {
  PREPARED: {
    'authorize(yes)': 'AUTHORIZED',
    'authorize(no)': 'DECISION_NOT_AUTHORIZED',
    'commit(yes)': 'TRANSITION_NOT_ALLOWED',
    'commit(no)': 'TRANSITION_NOT_ALLOWED',
    'deny(CONFLICT)': 'DENIED',
    'deny()': 'DENIAL_WITHOUT_REASON',
  },
  AUTHORIZED: {
    'authorize(yes)': 'TRANSITION_NOT_ALLOWED',
    'authorize(no)': 'TRANSITION_NOT_ALLOWED',
    'commit(yes)': 'COMMITTED',
    'commit(no)': 'DECISION_NOT_AUTHORIZED',
    'deny(CONFLICT)': 'DENIED',
    'deny()': 'DENIAL_WITHOUT_REASON',
  },
  COMMITTED: {
    'authorize(yes)': 'TRANSITION_NOT_ALLOWED',
    'authorize(no)': 'TRANSITION_NOT_ALLOWED',
    'commit(yes)': 'TRANSITION_NOT_ALLOWED',
    'commit(no)': 'TRANSITION_NOT_ALLOWED',
    'deny(CONFLICT)': 'TRANSITION_NOT_ALLOWED',
    'deny()': 'TRANSITION_NOT_ALLOWED',
  },
  DENIED: {
    'authorize(yes)': 'TRANSITION_NOT_ALLOWED',
    'authorize(no)': 'TRANSITION_NOT_ALLOWED',
    'commit(yes)': 'TRANSITION_NOT_ALLOWED',
    'commit(no)': 'TRANSITION_NOT_ALLOWED',
    'deny(CONFLICT)': 'DENIED',
    'deny()': 'DENIAL_WITHOUT_REASON',
  },
};

test('transaction: the full transition table', async (t) => {
  for (const state of TRANSACTION_STATES) {
    for (const [name, event] of Object.entries(events)) {
      await t.test(`${state} + ${name}`, () => {
        const want = table[state][name]!;
        const got = transition(state, event);
        if ((TRANSACTION_STATES as readonly string[]).includes(want)) assert.deepEqual(got, { ok: true, state: want });
        else assert.equal(got.ok ? got.state : got.error, want);
      });
    }
  }
});

test('transaction: nothing leaves COMMITTED or DENIED', () => {
  for (const state of TRANSACTION_STATES.filter(isFinal)) {
    for (const event of Object.values(events)) {
      const r = transition(state, event);
      assert.ok(!r.ok || r.state === state, `${state} left for ${JSON.stringify(r)}`);
    }
  }
});

test('transaction: the function is total on untyped input', () => {
  const r1 = transition('BOGUS' as TransactionState, events['deny(CONFLICT)']!);
  assert.deepEqual(r1, { ok: false, error: 'UNKNOWN_STATE_OR_EVENT', from: 'BOGUS', event: 'deny' });
  const r2 = transition('PREPARED', { kind: 'explode' } as unknown as TransactionEvent);
  assert.equal(r2.ok ? 'ok' : r2.error, 'UNKNOWN_STATE_OR_EVENT');
  const r3 = transition('PREPARED', null as unknown as TransactionEvent);
  assert.equal(r3.ok ? 'ok' : r3.error, 'UNKNOWN_STATE_OR_EVENT');
  const r4 = transition('PREPARED', { kind: 'authorize' } as unknown as TransactionEvent);
  assert.equal(r4.ok ? 'ok' : r4.error, 'DECISION_NOT_AUTHORIZED');
  const r5 = transition('PREPARED', { kind: 'authorize', decision: { authorized: true, reasons: ['CONFLICT'] } });
  assert.equal(r5.ok ? 'ok' : r5.error, 'DECISION_NOT_AUTHORIZED', 'an "authorized" decision with reasons is not trusted');
});

test('transaction: exactly COMMITTED and DENIED are final', () => {
  // Without this the "nothing leaves" test above would pass vacuously if isFinal said no to everything.
  assert.deepEqual(TRANSACTION_STATES.filter(isFinal), ['COMMITTED', 'DENIED']);
});
