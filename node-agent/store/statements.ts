// Prepared statements kept per database connection. Preparing parses and compiles the SQL every time,
// and the store's record functions run the same few statements many times per collapse and per World.
// A kept statement is safe to reuse: better-sqlite3 binds the parameters afresh on every call. Two
// things would not be safe, and no caller does them:
// - changing a statement's mode (pluck, raw, expand) would change it for every caller;
// - iterating one keeps it busy until the iteration ends (receipt-rows.ts prepares its own for that).
import type { Database, Statement } from 'better-sqlite3';

const kept = new WeakMap<Database, Map<string, Statement<unknown[], unknown>>>();

/** db.prepare(sql), prepared once per connection. */
export function statement<BindParameters extends unknown[] | object = unknown[], Result = unknown>(db: Database, sql: string): Statement<BindParameters, Result> {
  let byText = kept.get(db);
  if (byText === undefined) kept.set(db, (byText = new Map<string, Statement<unknown[], unknown>>()));
  let s = byText.get(sql);
  if (s === undefined) byText.set(sql, (s = db.prepare<unknown[], unknown>(sql)));
  return s as unknown as Statement<BindParameters, Result>;
}
