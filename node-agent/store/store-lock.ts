// The store's lock is its database. SQLite in EXCLUSIVE locking mode keeps the fcntl lock on state.db
// from the first write until the connection closes or the process dies, so a second agent that opens
// the same store cannot read or write it and is refused with STORE_LOCKED. The kernel drops the lock
// when the holder exits, however it exits, so there is no stale lock file to clean up.
import Database from 'better-sqlite3';
import { StoreError } from './store-errors.js';

function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Open the database at `path` and take its exclusive lock now, not on first use. */
export function openLockedDatabase(path: string, storeDir: string): Database.Database {
  // timeout 0: a held lock answers at once instead of after better-sqlite3's default five seconds.
  const db = new Database(path, { timeout: 0 });
  try {
    // EXCLUSIVE must be set before WAL is entered so the WAL index lives in heap memory (no -shm that a
    // second process could use) and the lock is never downgraded.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.exec('BEGIN EXCLUSIVE; COMMIT;');
    return db;
  } catch (e) {
    db.close();
    if (isBusy(e)) {
      throw new StoreError('STORE_LOCKED', `the node store at ${storeDir} is in use by another process (its database ${path} is locked)`, { cause: e });
    }
    throw e;
  }
}
