// Rows of the compactions table (store-schema.ts): which stacked generations have a published full tree of
// their content (generation-stack.ts compactionIdFor), and the device and inode it was published with.
import type { Database } from 'better-sqlite3';
import { statement } from './statements.js';

export interface CompactionRecord {
  /** The generation whose content the compaction holds. */
  generationId: string;
  rootKey: string;
  payloadDev: string;
  payloadIno: string;
  createdAt: string;
}

interface Row {
  generation_id: string;
  root_key: string;
  payload_dev: string;
  payload_ino: string;
  created_at: string;
}

const toRecord = (r: Row): CompactionRecord => ({ generationId: r.generation_id, rootKey: r.root_key, payloadDev: r.payload_dev, payloadIno: r.payload_ino, createdAt: r.created_at });

export function insertCompaction(db: Database, c: Omit<CompactionRecord, 'createdAt'>, now: Date): void {
  statement(db, 'INSERT INTO compactions (generation_id, root_key, payload_dev, payload_ino, created_at) VALUES (?, ?, ?, ?, ?)').run(c.generationId, c.rootKey, c.payloadDev, c.payloadIno, now.toISOString());
}

export function getCompaction(db: Database, generationId: string): CompactionRecord | undefined {
  const row = statement(db, 'SELECT * FROM compactions WHERE generation_id = ?').get(generationId) as Row | undefined;
  return row && toRecord(row);
}

/** The compactions of one Root, or of every Root that is not released. */
export function listCompactions(db: Database, rootKey?: string): CompactionRecord[] {
  const rows = rootKey === undefined
    ? statement(db, `SELECT c.* FROM compactions c JOIN roots r ON r.root_key = c.root_key WHERE r.state != 'Released' ORDER BY c.generation_id`).all()
    : statement(db, 'SELECT * FROM compactions WHERE root_key = ? ORDER BY generation_id').all(rootKey);
  return (rows as Row[]).map(toRecord);
}
