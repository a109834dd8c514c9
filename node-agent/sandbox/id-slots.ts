// Host id ranges for worlds: each running world holds one slot, and slot s maps the world's
// namespace ids 0..65535 onto host ids idBase + s*65536 onward. Host id 0 is never in any range
// (idBase >= 65536). Slots are rows in the store database, so a restarted agent knows which are taken.
import type { Database } from 'better-sqlite3';
import { TransientFailure } from '../../core/errors.js';
import { statement } from '../store/statements.js';

/** Not now: every id range is held. Transient — the World or Check waits Pending with this code. */
export class SlotsExhausted extends TransientFailure {
  declare readonly code: 'RESOURCES_UNAVAILABLE';
  constructor(total: number) {
    super(`all ${total} world id ranges on this node are in use`, { code: 'RESOURCES_UNAVAILABLE' });
    this.name = 'SlotsExhausted';
  }
}

/** The slot held by a world, allocating the lowest free one if it holds none. */
export function acquireSlot(db: Database, worldUid: string, total: number, now: Date): number {
  return db.transaction(() => {
    const held = statement(db, 'SELECT slot FROM world_slots WHERE world_uid = ?').get(worldUid) as { slot: number } | undefined;
    if (held) return held.slot;
    const taken = new Set((statement(db, 'SELECT slot FROM world_slots').all() as { slot: number }[]).map((r) => r.slot));
    for (let s = 0; s < total; s++) {
      if (!taken.has(s)) {
        statement(db, 'INSERT INTO world_slots (slot, world_uid, created_at) VALUES (?, ?, ?)').run(s, worldUid, now.toISOString());
        return s;
      }
    }
    throw new SlotsExhausted(total);
  }).immediate();
}

export function releaseSlot(db: Database, worldUid: string): void {
  statement(db, 'DELETE FROM world_slots WHERE world_uid = ?').run(worldUid);
}

/** Who holds an id range now (World uids, and check-<uid> for Check runs). */
export function slotHolders(db: Database): string[] {
  return (statement(db, 'SELECT world_uid FROM world_slots ORDER BY slot').all() as { world_uid: string }[]).map((r) => r.world_uid);
}

/** Releases every slot whose holder is not in `keep`; the holders released. */
export function releaseSlotsExcept(db: Database, keep: ReadonlySet<string>): string[] {
  return db.transaction(() => {
    const holders = slotHolders(db).filter((h) => !keep.has(h));
    for (const h of holders) releaseSlot(db, h);
    return holders;
  }).immediate();
}

export function slotBase(idBase: number, slot: number, range: number): number {
  return idBase + slot * range;
}
