// Rows of the store database: roots, generations and intents. Every statement takes its data through
// placeholders.
import type { Database } from 'better-sqlite3';
import { manifestDigest, validateManifest, type Manifest } from '../../core/manifest.js';
import { insertGenerationEntries, manifestAt, type GenerationChange } from './generation-entries.js';
import { cachedManifest, rememberManifest } from './manifest-cache.js';
import { StoreError } from './store-errors.js';
import { statement } from './statements.js';

/**
 * Releasing: the Root object is being deleted with spec.onDelete Release (node-agent/store/release-root.ts);
 * nothing forks or commits into it. Released: PRIME went back to the host path as a plain directory; the row,
 * its generations and receipts stay as history, and a later Root of the name adopts afresh.
 */
export type RootState = 'Adopting' | 'Ready' | 'Broken' | 'Releasing' | 'Released';

export interface RootRecord {
  name: string;
  nodePath: string;
  rootKey: string;
  state: RootState;
  generation: number;
  digest: string;
  reason: string | null;
  message: string | null;
  /** metadata.uid of the Root object this root was adopted for; null in a row written before schema 10. */
  objectUid: string | null;
  updatedAt: string;
}

export interface GenerationRecord {
  id: string;
  rootKey: string;
  number: number;
  digest: string;
  /** Device and inode of generations/<id>/payload when it was published (decimal strings). */
  payloadDev: string;
  payloadIno: string;
  createdAt: string;
}

interface RootRow {
  name: string;
  node_path: string;
  root_key: string;
  state: RootState;
  generation: number;
  digest: string;
  reason: string | null;
  message: string | null;
  object_uid: string | null;
  updated_at: string;
}

const toRoot = (r: RootRow): RootRecord => ({
  name: r.name,
  nodePath: r.node_path,
  rootKey: r.root_key,
  state: r.state,
  generation: r.generation,
  digest: r.digest,
  reason: r.reason,
  message: r.message,
  objectUid: r.object_uid,
  updatedAt: r.updated_at,
});

export function getRoot(db: Database, name: string): RootRecord | undefined {
  const row = statement(db, 'SELECT * FROM roots WHERE name = ?').get(name) as RootRow | undefined;
  return row && toRoot(row);
}

export function getRootByPath(db: Database, nodePath: string): RootRecord | undefined {
  const row = statement(db, 'SELECT * FROM roots WHERE node_path = ?').get(nodePath) as RootRow | undefined;
  return row && toRoot(row);
}

export function listRoots(db: Database): RootRecord[] {
  return (statement(db, 'SELECT * FROM roots ORDER BY name').all() as RootRow[]).map(toRoot);
}

export function upsertRoot(db: Database, r: Omit<RootRecord, 'updatedAt'>, now: Date): void {
  statement(
    db,
    `INSERT INTO roots (name, node_path, root_key, state, generation, digest, reason, message, object_uid, updated_at)
     VALUES (@name, @nodePath, @rootKey, @state, @generation, @digest, @reason, @message, @objectUid, @updatedAt)
     ON CONFLICT (name) DO UPDATE SET node_path = excluded.node_path, root_key = excluded.root_key, state = excluded.state,
       generation = excluded.generation, digest = excluded.digest, reason = excluded.reason, message = excluded.message,
       object_uid = excluded.object_uid, updated_at = excluded.updated_at`,
  ).run({ ...r, updatedAt: now.toISOString() });
}

/**
 * Record the Root object's uid on a root adopted before uids were recorded (object_uid NULL). Never
 * overwrites a recorded uid; true when this call recorded it.
 */
export function bindRootObjectUid(db: Database, name: string, objectUid: string, now: Date): boolean {
  return statement(db, 'UPDATE roots SET object_uid = ?, updated_at = ? WHERE name = ? AND object_uid IS NULL').run(objectUid, now.toISOString(), name).changes === 1;
}

/** Sets a root's state (and reason/message) only; true when the row exists. */
export function setRootState(db: Database, name: string, state: RootState, reason: string | null, message: string | null, now: Date): boolean {
  return statement(db, 'UPDATE roots SET state = ?, reason = ?, message = ?, updated_at = ? WHERE name = ?').run(state, reason, message, now.toISOString(), name).changes === 1;
}

/** Reads the covering index only (schema 4; the row held the whole manifest until the entry spans). */
export function getGeneration(db: Database, rootKey: string, number: number): GenerationRecord | undefined {
  return statement(db, 'SELECT id, root_key AS rootKey, number, digest, payload_dev AS payloadDev, payload_ino AS payloadIno, created_at AS createdAt FROM generations INDEXED BY generations_route WHERE root_key = ? AND number = ?')
    .get(rootKey, number) as GenerationRecord | undefined;
}

/** The id of PRIME's generation of the Root `rootKey`, unless the Root is Released or not recorded. */
export function primeGenerationId(db: Database, rootKey: string): string | undefined {
  const row = statement(db, "SELECT g.id FROM roots r JOIN generations g ON g.root_key = r.root_key AND g.number = r.generation WHERE r.root_key = ? AND r.state != 'Released'").get(rootKey) as { id: string } | undefined;
  return row?.id;
}

/** True when generation `id` is PRIME of a Root that is not Released: the generation its roots row names. */
export function isPrimeGeneration(db: Database, id: string): boolean {
  return statement(db, "SELECT 1 FROM generations g JOIN roots r ON r.root_key = g.root_key AND r.generation = g.number WHERE g.id = ? AND r.state != 'Released'").get(id) !== undefined;
}

/** The generation of `rootKey` whose payload directory is (device, inode), if any: what a mount shows. */
export function generationByPayload(db: Database, rootKey: string, dev: string, ino: string): { number: number; digest: string } | undefined {
  return statement(db, 'SELECT number, digest FROM generations WHERE root_key = ? AND payload_dev = ? AND payload_ino = ?').get(rootKey, dev, ino) as { number: number; digest: string } | undefined;
}

/**
 * The generation row and, in the same transaction as the caller's, its manifest entries as spans
 * (generation-entries.ts): with `change` (the delta applied to the Root's latest generation) only the
 * changed entries are written. Idempotent: a generation already recorded is left as it is. The manifest
 * is kept in the connection's cache, so the next collapse reads it without a query.
 */
export function insertGeneration(db: Database, g: Omit<GenerationRecord, 'createdAt'>, manifest: Manifest, now: Date, change?: GenerationChange): void {
  db.transaction(() => insertGenerationRows(db, g, manifest, now, change))(); // a savepoint when the caller holds a transaction
  const kept = rememberManifest(db, g.id, manifest);
  if (kept !== manifest) {
    // A manifest from a walk (adoption, recovery) or a return: validated and digested once now, so the
    // next collapse finds it known valid and its chunk texts kept (O(Root) here, not in that collapse).
    validateManifest(kept);
    manifestDigest(kept);
  }
}

function insertGenerationRows(db: Database, g: Omit<GenerationRecord, 'createdAt'>, manifest: Manifest, now: Date, change: GenerationChange | undefined): void {
  const inserted = statement(
    db,
    `INSERT INTO generations (id, root_key, number, digest, payload_dev, payload_ino, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  ).run(g.id, g.rootKey, g.number, g.digest, g.payloadDev, g.payloadIno, now.toISOString());
  if (inserted.changes === 0) return;
  insertGenerationEntries(db, g.rootKey, g.number, manifest, change);
}

export interface IntentRecord<T> {
  id: string;
  kind: string;
  data: T;
  createdAt: string;
}

export function insertIntent(db: Database, id: string, kind: string, data: unknown, now: Date): void {
  statement(db, 'INSERT INTO intents (id, kind, data_json, created_at) VALUES (?, ?, ?, ?)').run(id, kind, JSON.stringify(data), now.toISOString());
}

export function deleteIntent(db: Database, id: string): void {
  statement(db, 'DELETE FROM intents WHERE id = ?').run(id);
}

export function listIntents<T>(db: Database, kind: string): IntentRecord<T>[] {
  const rows = statement(db, 'SELECT id, kind, data_json, created_at FROM intents WHERE kind = ? ORDER BY created_at, id').all(kind) as {
    id: string;
    kind: string;
    data_json: string;
    created_at: string;
  }[];
  return rows.map((r) => ({ id: r.id, kind: r.kind, data: JSON.parse(r.data_json) as T, createdAt: r.created_at }));
}

/**
 * The full manifest of a recorded generation, or undefined. Generations never change once recorded, so
 * the connection keeps the last few in memory, frozen. Read from the store (O(Root)), a manifest must
 * re-digest to the generation's recorded digest, else GENERATION_ENTRIES_MISMATCH: rows that no longer
 * describe the generation are never served as it.
 */
/** The recorded digest of a generation, by id (undefined: not recorded). */
export function generationDigest(db: Database, id: string): string | undefined {
  return (statement(db, 'SELECT digest FROM generations WHERE id = ?').get(id) as { digest: string } | undefined)?.digest;
}

export function getGenerationManifest(db: Database, id: string): Manifest | undefined {
  const cached = cachedManifest(db, id);
  if (cached) return cached;
  const g = statement(db, 'SELECT root_key AS rootKey, number, digest FROM generations WHERE id = ?').get(id) as { rootKey: string; number: number; digest: string } | undefined;
  if (!g) return undefined;
  const manifest = manifestAt(db, g.rootKey, g.number);
  const digest = manifestDigest(manifest);
  if (digest !== g.digest) {
    throw new StoreError('GENERATION_ENTRIES_MISMATCH', `the recorded entries of generation ${g.number} of ${g.rootKey} digest to ${digest}, not its recorded ${g.digest}`);
  }
  return rememberManifest(db, id, manifest);
}

/**
 * The ids of the generations whose payloads are read: every generation of a Root that is not Released
 * (the store's own list, for mounting stacked payloads at open), or of one Root key.
 */
/** Every generation the store recorded, released Roots' included. */
export function allGenerationIds(db: Database): string[] {
  return (statement(db, 'SELECT id FROM generations').all() as { id: string }[]).map((r) => r.id);
}

export function listGenerationIds(db: Database, rootKey?: string): string[] {
  const rows = rootKey === undefined
    ? statement(db, `SELECT g.id FROM generations g JOIN roots r ON r.root_key = g.root_key WHERE r.state != 'Released' ORDER BY g.root_key, g.number`).all()
    : statement(db, 'SELECT id FROM generations WHERE root_key = ? ORDER BY number').all(rootKey);
  return (rows as { id: string }[]).map((r) => r.id);
}

