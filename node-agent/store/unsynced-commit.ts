// A commit of the store's database that is written but not waited for on disk. The store runs SQLite in
// WAL mode with synchronous = FULL (store-lock.ts): every commit fsyncs the WAL before it returns. This
// one is made with synchronous = NORMAL (its frames written to the WAL, no fsync), FULL again after it.
//
// For a commit whose outcome is durable already in another form that recovery turns into the same rows
// after a power loss (a collapse's final rows: its intent and its exchanged live/, recover-collapses.ts),
// or one whose WAL the caller fsyncs itself before anything depends on it (a collapse's intent, synced in
// the commit's batch before the exchange: walPathOf). A process that
// dies loses nothing (the frames are in the page cache); a power loss loses this commit whole or not at
// all (SQLite reads the WAL up to its last complete, checksummed commit), and the store's next synced
// commit makes it durable: the WAL is one file, written in order, and its fsync covers every frame before.
import type Database from 'better-sqlite3';

/** The database's write-ahead log beside it (SQLite's name for it): what a sync of an unsynced commit fsyncs. */
export const walPathOf = (databasePath: string): string => `${databasePath}-wal`;

export function commitUnsynced<T>(db: Database.Database, fn: () => T): T {
  db.pragma('synchronous = NORMAL');
  try {
    return db.transaction(fn)();
  } finally {
    db.pragma('synchronous = FULL');
  }
}
