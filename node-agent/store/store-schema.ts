// The store database's schema, as numbered migrations tracked in PRAGMA user_version.
import type { Database } from 'better-sqlite3';
import { StoreError } from './store-errors.js';

const MIGRATIONS: readonly string[] = [
  // 1: roots, their generations, worlds, and intents for crash recovery.
  `CREATE TABLE roots (
     name TEXT PRIMARY KEY,
     node_path TEXT NOT NULL UNIQUE,
     root_key TEXT NOT NULL UNIQUE,
     state TEXT NOT NULL,
     generation INTEGER NOT NULL,
     digest TEXT NOT NULL,
     reason TEXT,
     message TEXT,
     updated_at TEXT NOT NULL
   ) STRICT;
   CREATE TABLE generations (
     id TEXT PRIMARY KEY,
     root_key TEXT NOT NULL,
     number INTEGER NOT NULL,
     digest TEXT NOT NULL,
     manifest_json TEXT NOT NULL,
     payload_dev TEXT NOT NULL,
     payload_ino TEXT NOT NULL,
     created_at TEXT NOT NULL,
     UNIQUE (root_key, number)
   ) STRICT;
   CREATE TABLE worlds (
     uid TEXT PRIMARY KEY,
     namespace TEXT NOT NULL,
     name TEXT NOT NULL,
     state TEXT NOT NULL,
     data_json TEXT NOT NULL,
     updated_at TEXT NOT NULL
   ) STRICT;
   CREATE TABLE intents (
     id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     data_json TEXT NOT NULL,
     created_at TEXT NOT NULL
   ) STRICT;`,
  // 2: host id ranges held by worlds (one slot each; see node-agent/sandbox/id-slots.ts).
  `CREATE TABLE world_slots (
     slot INTEGER PRIMARY KEY,
     world_uid TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL
   ) STRICT;`,
  // 3: admission reservations, one per holder (a world uid or a check run; see node-agent/admission/).
  `CREATE TABLE reservations (
     holder TEXT PRIMARY KEY,
     stage TEXT NOT NULL CHECK (stage IN ('agent', 'check')),
     cpu_millis INTEGER NOT NULL CHECK (cpu_millis >= 0),
     memory_bytes INTEGER NOT NULL CHECK (memory_bytes >= 0),
     pids INTEGER NOT NULL CHECK (pids >= 0),
     created_at TEXT NOT NULL
   ) STRICT;`,
  // 4: the route check's generation lookup reads an index alone: reading payload_dev (stored after the row's
  // manifest_json) walked every overflow page of the manifest, ~8 ms per check at 100k files.
  `CREATE INDEX generations_route ON generations (root_key, number, id, digest, payload_dev, payload_ino, created_at);`,
  // 5: each generation's manifest entries as rows, so capture looks up the base entries it touches (and
  // the descendants of a deleted or replaced directory, as one range of the primary key) without parsing
  // the whole manifest_json. The row with path '' holds the root directory's own attributes (type 'dir').
  // SQLite's BINARY collation compares UTF-8 bytes, the order of core/relative-path.ts compareBytes.
  // Backfill: each existing generation's manifest_json is parsed once, by json_each.
  `CREATE TABLE generation_entries (
     generation_id TEXT NOT NULL,
     path TEXT NOT NULL,
     type TEXT NOT NULL,
     mode INTEGER NOT NULL,
     uid INTEGER NOT NULL,
     gid INTEGER NOT NULL,
     size INTEGER,
     sha256 TEXT,
     target TEXT,
     PRIMARY KEY (generation_id, path)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO generation_entries (generation_id, path, type, mode, uid, gid, size, sha256, target)
     SELECT g.id, e.value ->> '$.path', e.value ->> '$.type', e.value ->> '$.mode', e.value ->> '$.uid', e.value ->> '$.gid',
            e.value ->> '$.size', e.value ->> '$.sha256', e.value ->> '$.target'
     FROM generations g, json_each(g.manifest_json, '$.entries') e;
   INSERT INTO generation_entries (generation_id, path, type, mode, uid, gid)
     SELECT g.id, '', 'dir', g.manifest_json ->> '$.root.mode', g.manifest_json ->> '$.root.uid', g.manifest_json ->> '$.root.gid'
     FROM generations g WHERE json_type(g.manifest_json, '$.root') = 'object';`,
  // 6: check evaluations, one row per finished run of a Check (see node-agent/checks/check-reconciler.ts); ordinal
  // orders them on this node.
  `CREATE TABLE evaluations (
     ordinal INTEGER PRIMARY KEY AUTOINCREMENT,
     check_uid TEXT NOT NULL,
     world_uid TEXT NOT NULL,
     check_name TEXT NOT NULL,
     verdict TEXT NOT NULL,
     reason TEXT,
     requirement_hash TEXT,
     verifier_identity TEXT,
     executed_identity TEXT,
     subject TEXT,
     created_at TEXT NOT NULL
   ) STRICT;
   CREATE INDEX evaluations_by_check ON evaluations (check_uid);`,
  // (collapse) Collapse transactions, one row per Collapse object (see node-agent/collapses/collapse-reconciler.ts):
  // its state and the status document the agent applies, so each Collapse runs once. IF NOT EXISTS: this
  // migration may land after another one appended concurrently.
  `CREATE TABLE IF NOT EXISTS collapse_transactions (
     collapse_uid TEXT PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     state TEXT NOT NULL,
     data_json TEXT NOT NULL,
     updated_at TEXT NOT NULL
   ) STRICT;`,
  // 8: the signed receipt ledger's lines as rows (see node-agent/receipts/receipt-rows.ts). The ledger file
  // is the record; a row is written after its line and backfilled from the file when a crash came between.
  // `line` is the ledger line's exact text without its newline; every other column except appended_at
  // (when the row was written) is derived from it.
  `CREATE TABLE receipts (
     sequence INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     previous TEXT,
     transaction_id TEXT NOT NULL,
     state TEXT NOT NULL,
     body_json TEXT NOT NULL,
     signature TEXT NOT NULL,
     key_id TEXT NOT NULL,
     line TEXT NOT NULL,
     appended_at TEXT NOT NULL
   ) STRICT;
   CREATE INDEX receipts_by_transaction ON receipts (transaction_id);`,
  // 9: each evaluation's context record (canonical JSON) and its digest (node-agent/checks/
  // evaluation-records.ts). Rows from before stay without one: they are EVIDENCE_CONTEXT_MISSING.
  `ALTER TABLE evaluations ADD COLUMN context_json TEXT;
   ALTER TABLE evaluations ADD COLUMN context_digest TEXT;
   CREATE INDEX evaluations_by_subject ON evaluations (subject);
   CREATE INDEX evaluations_by_world ON evaluations (world_uid);`,
  // 10: the uid of the Root object a root was adopted for (node-agent/roots/root-binding.ts): a later object of
  // the same name is another Root and is refused by name, never served over this directory. Rows from before
  // hold NULL and take the uid of the first object that reconciles them (once, logged).
  `ALTER TABLE roots ADD COLUMN object_uid TEXT;`,
  // (disk limits, issue 12) each reservation's ephemeral storage: the size of the run's own upper-layer
  // filesystem (node-agent/sandbox/disk-image.ts). Rows from before reserved no disk.
  `ALTER TABLE reservations ADD COLUMN ephemeral_storage_bytes INTEGER NOT NULL DEFAULT 0 CHECK (ephemeral_storage_bytes >= 0);`,
  // (per-world supervisor, issue 12) the supervisor of a running world (node-agent/store/world-records.ts
  // WorldSupervisor): pid, its start time, and what a new agent needs to re-attach and capture. NULL: none
  // recorded (a world from before, or one whose workload had not started).
  `ALTER TABLE worlds ADD COLUMN supervisor_json TEXT;`,
  // (admission at scale, issue 11) the live reservations' totals as one row, kept by triggers in the same
  // transaction as every insert, delete or update of a reservation: admission reads one row instead of
  // summing every live reservation. Seeded from the reservations a store already holds.
  `CREATE TABLE reservation_totals (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     cpu_millis INTEGER NOT NULL,
     memory_bytes INTEGER NOT NULL,
     pids INTEGER NOT NULL,
     ephemeral_storage_bytes INTEGER NOT NULL,
     worlds INTEGER NOT NULL
   ) STRICT;
   INSERT INTO reservation_totals (id, cpu_millis, memory_bytes, pids, ephemeral_storage_bytes, worlds)
     SELECT 1, COALESCE(SUM(cpu_millis), 0), COALESCE(SUM(memory_bytes), 0), COALESCE(SUM(pids), 0), COALESCE(SUM(ephemeral_storage_bytes), 0), COUNT(*) FROM reservations;
   CREATE TRIGGER reservation_totals_insert AFTER INSERT ON reservations BEGIN
     UPDATE reservation_totals SET cpu_millis = cpu_millis + NEW.cpu_millis, memory_bytes = memory_bytes + NEW.memory_bytes, pids = pids + NEW.pids,
       ephemeral_storage_bytes = ephemeral_storage_bytes + NEW.ephemeral_storage_bytes, worlds = worlds + 1 WHERE id = 1;
   END;
   CREATE TRIGGER reservation_totals_delete AFTER DELETE ON reservations BEGIN
     UPDATE reservation_totals SET cpu_millis = cpu_millis - OLD.cpu_millis, memory_bytes = memory_bytes - OLD.memory_bytes, pids = pids - OLD.pids,
       ephemeral_storage_bytes = ephemeral_storage_bytes - OLD.ephemeral_storage_bytes, worlds = worlds - 1 WHERE id = 1;
   END;
   CREATE TRIGGER reservation_totals_update AFTER UPDATE ON reservations BEGIN
     UPDATE reservation_totals SET cpu_millis = cpu_millis - OLD.cpu_millis + NEW.cpu_millis, memory_bytes = memory_bytes - OLD.memory_bytes + NEW.memory_bytes,
       pids = pids - OLD.pids + NEW.pids, ephemeral_storage_bytes = ephemeral_storage_bytes - OLD.ephemeral_storage_bytes + NEW.ephemeral_storage_bytes WHERE id = 1;
   END;`,
  // (O(change) generations, issue 11) each manifest entry once per span of generations holding it
  // (node-agent/store/generation-entries.ts): a generation writes only the entries it changes. Replaces
  // generation_entries (one row per entry per generation) and generations.manifest_json (the whole manifest
  // again as JSON). Backfill: a generation's rows become spans of that generation alone, except those of
  // each Root's latest generation, which stay open for the next one.
  `CREATE TABLE entry_spans (
     root_key TEXT NOT NULL,
     path TEXT NOT NULL,
     from_number INTEGER NOT NULL,
     to_number INTEGER CHECK (to_number IS NULL OR to_number > from_number),
     type TEXT NOT NULL,
     mode INTEGER NOT NULL,
     uid INTEGER NOT NULL,
     gid INTEGER NOT NULL,
     size INTEGER,
     sha256 TEXT,
     target TEXT,
     PRIMARY KEY (root_key, path, from_number)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO entry_spans (root_key, path, from_number, to_number, type, mode, uid, gid, size, sha256, target)
     SELECT g.root_key, e.path, g.number,
            CASE WHEN g.number = (SELECT MAX(x.number) FROM generations x WHERE x.root_key = g.root_key) THEN NULL ELSE g.number + 1 END,
            e.type, e.mode, e.uid, e.gid, e.size, e.sha256, e.target
     FROM generation_entries e JOIN generations g ON g.id = e.generation_id;
   DROP TABLE generation_entries;
   ALTER TABLE generations DROP COLUMN manifest_json;`,
  // (private evaluator, issue 14) a private-evaluator run's raw record (canonical JSON) and its report's
  // bytes, kept with its evaluation so a Collapse re-admits the report itself rather than trust the verdict
  // (node-agent/collapses/decision-evaluations.ts). NULL for every other run.
  `ALTER TABLE evaluations ADD COLUMN private_run_json TEXT;
   ALTER TABLE evaluations ADD COLUMN report BLOB;`,
  // (issue 11) a compaction of a stacked generation, made in the background: a full tree of its content in
  // generations/<id>.full/payload, walked whole and required to have the generation's digest before this
  // row exists. Later collapses stack over it instead of the generation's layers (node-agent/collapses/
  // background-compaction.ts). The row is the publication: a directory without one is a leftover.
  `CREATE TABLE compactions (
     generation_id TEXT PRIMARY KEY,
     root_key TEXT NOT NULL,
     payload_dev TEXT NOT NULL,
     payload_ino TEXT NOT NULL,
     created_at TEXT NOT NULL
   ) STRICT;`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** The schema version just before the migration whose SQL contains `marker` (for tests of that migration). */
export function versionBefore(marker: string): number {
  const i = MIGRATIONS.findIndex((m) => m.includes(marker));
  if (i < 0) throw new RangeError(`no migration contains ${marker}`);
  return i;
}

/** Bring the schema to SCHEMA_VERSION (or `target`), one transaction per migration. A newer schema refuses. */
export function migrate(db: Database, target: number = SCHEMA_VERSION): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new StoreError('STORE_SCHEMA_UNSUPPORTED', `database schema ${current} is newer than this agent's ${SCHEMA_VERSION}`);
  }
  // `target` below SCHEMA_VERSION exists for tests of a single migration (an older store's schema).
  for (let v = current; v < Math.min(target, SCHEMA_VERSION); v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      // The only SQL with a value in its text: our own integer constant (PRAGMA takes no placeholders).
      db.pragma(`user_version = ${Number(v + 1)}`);
    })();
  }
}
