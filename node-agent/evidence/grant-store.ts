// Single-use grants: an authorization (of a Collapse, or of a weaker isolation mode for one World) is
// spent exactly once, durably, before what it authorizes happens. The store is a SQLite database of its
// own (better-sqlite3; WAL, synchronous=FULL), provisioned by an explicit step: a missing or corrupt store
// refuses — it is never quietly started anew, which would forget what was spent. Spending checks the
// grant's validity and revocation, then in one IMMEDIATE transaction records the digests of its id, its
// exact bytes and the request it authorizes; the same id is never spent again, whether replayed as is or
// altered. After the commit the validity is checked again at a fresh clock reading; a grant that expired
// in between stays spent (there is no refund).
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { sha256Hex } from '../../core/digest.js';

export type GrantRefusal = 'GRANT_STORE_MISSING' | 'GRANT_STORE_CORRUPT' | 'GRANT_NOT_YET_VALID' | 'GRANT_EXPIRED' | 'GRANT_REVOKED' | 'GRANT_SPENT' | 'GRANT_ALTERED';

export class GrantError extends Error {
  constructor(
    readonly code: GrantRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'GrantError';
  }
}

export interface GrantToSpend {
  id: string;
  /** The grant's exact bytes (its signed envelope). */
  bytes: Uint8Array;
  /** The canonical text of the request it authorizes (what is about to happen). */
  request: string;
  /** Valid in [notBefore, notAfter). */
  notBefore: Date;
  notAfter: Date;
}

const FORMAT = 'worldline.grants/v1';
const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE spent (
  id_digest TEXT PRIMARY KEY,
  bytes_digest TEXT NOT NULL,
  request_digest TEXT NOT NULL,
  spent_at TEXT NOT NULL
) STRICT;
`;

function configure(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 10000');
}

export class GrantStore {
  private constructor(private readonly db: Database.Database) {}

  /** Creates the store at `path` (refuses one that exists: provisioning never resets what was spent). */
  static provision(path: string): GrantStore {
    if (existsSync(path)) throw new GrantError('GRANT_STORE_CORRUPT', `${path} exists already; a grant store is provisioned once`);
    const db = new Database(path);
    configure(db);
    db.exec(SCHEMA);
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('format', FORMAT);
    return new GrantStore(db);
  }

  /** Opens a provisioned store; a missing file or a database that is not one refuses. */
  static open(path: string): GrantStore {
    if (!existsSync(path)) throw new GrantError('GRANT_STORE_MISSING', `no grant store at ${path}: provision it explicitly (nothing is spent without one)`);
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { fileMustExist: true });
      configure(db);
      const ok = db.pragma('quick_check', { simple: true });
      const format = (db.prepare('SELECT value FROM meta WHERE key = ?').get('format') as { value?: string } | undefined)?.value;
      db.prepare('SELECT id_digest, bytes_digest, request_digest, spent_at FROM spent LIMIT 0').all();
      if (ok !== 'ok' || format !== FORMAT) throw new Error(`quick_check ${String(ok)}, format ${String(format)}`);
      return new GrantStore(db);
    } catch (err) {
      db?.close();
      throw new GrantError('GRANT_STORE_CORRUPT', `${path} is not a grant store: ${(err as Error).message}`);
    }
  }

  close(): void {
    this.db.close();
  }

  /**
   * Spends the grant, or refuses by name. `revoked` is asked before spending; `now` is read before and
   * again after the commit. Returns the time it was spent.
   */
  spend(g: GrantToSpend, o: { now: () => Date; revoked: (id: string) => boolean }): Date {
    const valid = (at: Date): void => {
      if (at.getTime() < g.notBefore.getTime()) throw new GrantError('GRANT_NOT_YET_VALID', `grant ${g.id} is valid from ${g.notBefore.toISOString()}`);
      if (at.getTime() >= g.notAfter.getTime()) throw new GrantError('GRANT_EXPIRED', `grant ${g.id} expired at ${g.notAfter.toISOString()}`);
    };
    valid(o.now());
    if (o.revoked(g.id)) throw new GrantError('GRANT_REVOKED', `grant ${g.id} is revoked`);
    const idDigest = sha256Hex(`grant-id\n${g.id}`);
    const bytesDigest = sha256Hex(g.bytes);
    const requestDigest = sha256Hex(g.request);
    const spentAt = o.now();
    this.db
      .transaction(() => {
        const prior = this.db.prepare('SELECT bytes_digest FROM spent WHERE id_digest = ?').get(idDigest) as { bytes_digest: string } | undefined;
        if (prior) {
          if (prior.bytes_digest !== bytesDigest) throw new GrantError('GRANT_ALTERED', `grant ${g.id} was spent already, with other bytes`);
          throw new GrantError('GRANT_SPENT', `grant ${g.id} was spent already`);
        }
        this.db.prepare('INSERT INTO spent (id_digest, bytes_digest, request_digest, spent_at) VALUES (?, ?, ?, ?)').run(idDigest, bytesDigest, requestDigest, spentAt.toISOString());
      })
      .immediate();
    // Spent now whatever follows; what it authorizes goes ahead only if it is still valid at a fresh reading.
    valid(o.now());
    return spentAt;
  }

  /** Whether the grant id was spent (for status and tests). */
  spent(id: string): { bytesDigest: string; requestDigest: string; spentAt: string } | undefined {
    const row = this.db.prepare('SELECT bytes_digest, request_digest, spent_at FROM spent WHERE id_digest = ?').get(sha256Hex(`grant-id\n${id}`)) as { bytes_digest: string; request_digest: string; spent_at: string } | undefined;
    return row ? { bytesDigest: row.bytes_digest, requestDigest: row.request_digest, spentAt: row.spent_at } : undefined;
  }
}

/**
 * One grant store per process, opened on first use and kept; a store that cannot be opened (missing,
 * corrupt) throws its GrantError and is tried again on the next use.
 */
export function lazyGrantStore(path: string): () => GrantStore {
  let store: GrantStore | undefined;
  return () => (store ??= GrantStore.open(path));
}
