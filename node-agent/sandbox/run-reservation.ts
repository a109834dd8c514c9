// The step every supervised run takes before it starts, the same for a World and a Check: admission by
// the node's one authority, then one host id range (slot); and the release of both when the run ends.
// Not now (room, state unknown, every id range held) is a wait; any other answer is a refusal by name.
import type { Database } from 'better-sqlite3';
import type { RunAdmission } from '../admission/admission-authority.js';
import type { WorldResources } from '../admission/admission-policy.js';
import { ID_RANGE } from '../config.js';
import { acquireSlot, releaseSlot, slotBase, SlotsExhausted } from './id-slots.js';

export interface ReservationDeps {
  admission: RunAdmission;
  db: Database;
  /** The node's id ranges: the first host id and how many slots. */
  idBase: number;
  idSlots: number;
}

/** A yes: the resources reserved and the host id range given. */
export interface RunAdmitted {
  ok: true;
  reserve: WorldResources;
  idBase: number;
  idCount: number;
  message: string;
}

/** reserveRun's answer; a yes carries what the caller's record returned (`recorded`). */
export type RunReservation<T = undefined> = (RunAdmitted & { recorded: T }) | { ok: false; wait: boolean; code: string; message: string };

const WAIT_OUTCOMES = new Set(['RESOURCES_UNAVAILABLE', 'RESOURCE_STATE_UNKNOWN']);

/**
 * Admits `holder` for `stage` and gives it an id range, in one SQLite transaction: one commit (one fsync
 * of the write-ahead log) instead of one for the reservation and one for the id range. `record`, when
 * given, runs inside that transaction after a yes, so what the caller records about the admitted run
 * commits with its reservation or not at all (a throw rolls all of it back); what it returns comes back
 * as the yes's `recorded`. On any answer but yes, holds nothing afterwards and nothing is recorded.
 */
export function reserveRun(d: ReservationDeps, holder: string, stage: 'agent' | 'check', requested: Partial<WorldResources>, now: Date): RunReservation;
export function reserveRun<T>(d: ReservationDeps, holder: string, stage: 'agent' | 'check', requested: Partial<WorldResources>, now: Date, record: (r: RunAdmitted) => T): RunReservation<T>;
export function reserveRun<T>(d: ReservationDeps, holder: string, stage: 'agent' | 'check', requested: Partial<WorldResources>, now: Date, record?: (r: RunAdmitted) => T): RunReservation<T | undefined> {
  return d.db
    .transaction((): RunReservation<T | undefined> => {
      const answer = d.admission.admit(holder, stage, requested);
      if (answer.outcome !== 'ADMITTED' || !answer.reserve) return { ok: false, wait: WAIT_OUTCOMES.has(answer.outcome), code: answer.outcome, message: answer.message };
      let slot: number;
      try {
        slot = acquireSlot(d.db, holder, d.idSlots, now);
      } catch (err) {
        d.admission.release(holder);
        if (err instanceof SlotsExhausted) return { ok: false, wait: true, code: err.code, message: err.message };
        throw err;
      }
      const admitted: RunAdmitted = { ok: true, reserve: answer.reserve, idBase: slotBase(d.idBase, slot, ID_RANGE), idCount: ID_RANGE, message: answer.message };
      return { ...admitted, recorded: record?.(admitted) };
    })
    .immediate();
}

/** Gives back what reserveRun took (idempotent: releasing twice, or what was never held, is a no-op). */
export function releaseRun(d: ReservationDeps, holder: string): void {
  releaseSlot(d.db, holder);
  d.admission.release(holder);
}
