// The collapse transaction lifecycle: PREPARED -> AUTHORIZED -> COMMITTED, with DENIED reachable from
// PREPARED or AUTHORIZED and sticky. COMMITTED and DENIED are final: nothing leaves them.
//
// `transition` is total: every (state, event) pair gives either the next state or a named error, never
// an exception. Authorize and commit carry the collapse decision and are refused unless it authorized,
// so the lifecycle cannot move forward on a refusal; a deny must carry at least one reason.
import type { Decision } from './decide.js';

export const TRANSACTION_STATES = ['PREPARED', 'AUTHORIZED', 'COMMITTED', 'DENIED'] as const;
export type TransactionState = (typeof TRANSACTION_STATES)[number];

export type TransactionEvent =
  | { readonly kind: 'authorize'; readonly decision: Decision }
  | { readonly kind: 'commit'; readonly decision: Decision }
  | { readonly kind: 'deny'; readonly reasons: readonly string[] };

export type TransitionError =
  /** The event is not allowed from this state (including anything from COMMITTED, or leaving DENIED). */
  | 'TRANSITION_NOT_ALLOWED'
  /** authorize/commit carried a decision that did not authorize. */
  | 'DECISION_NOT_AUTHORIZED'
  /** deny carried no reason. */
  | 'DENIAL_WITHOUT_REASON'
  /** The state or event is not one this machine knows (untyped callers). */
  | 'UNKNOWN_STATE_OR_EVENT';

export type TransitionResult =
  | { readonly ok: true; readonly state: TransactionState }
  | { readonly ok: false; readonly error: TransitionError; readonly from: string; readonly event: string };

export function isFinal(state: TransactionState): boolean {
  return state === 'COMMITTED' || state === 'DENIED';
}

export function transition(state: TransactionState, event: TransactionEvent): TransitionResult {
  const kind: unknown = (event as { kind?: unknown } | null)?.kind;
  const fail = (error: TransitionError): TransitionResult => ({ ok: false, error, from: String(state), event: String(kind) });
  if (!(TRANSACTION_STATES as readonly string[]).includes(state) || (kind !== 'authorize' && kind !== 'commit' && kind !== 'deny')) {
    return fail('UNKNOWN_STATE_OR_EVENT');
  }
  switch (event.kind) {
    case 'authorize':
      if (state !== 'PREPARED') return fail('TRANSITION_NOT_ALLOWED');
      return authorizes(event.decision) ? { ok: true, state: 'AUTHORIZED' } : fail('DECISION_NOT_AUTHORIZED');
    case 'commit':
      if (state !== 'AUTHORIZED') return fail('TRANSITION_NOT_ALLOWED');
      return authorizes(event.decision) ? { ok: true, state: 'COMMITTED' } : fail('DECISION_NOT_AUTHORIZED');
    case 'deny':
      if (state === 'COMMITTED') return fail('TRANSITION_NOT_ALLOWED');
      if (!Array.isArray(event.reasons) || event.reasons.length === 0) return fail('DENIAL_WITHOUT_REASON');
      // Denying a denied transaction is a no-op: DENIED is sticky, and repeating it is harmless.
      return { ok: true, state: 'DENIED' };
  }
}

function authorizes(d: Decision | undefined): boolean {
  return d?.authorized === true && Array.isArray(d.reasons) && d.reasons.length === 0;
}
