// Prepared statements kept per connection (node-agent/store/statements.ts): one per SQL text and
// connection, reused with fresh parameters on every call, never shared between connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { statement } from '../../node-agent/store/statements.js';

test('statement prepares a SQL text once per connection and binds fresh parameters on every call', () => {
  const db = new Database(':memory:');
  const other = new Database(':memory:');
  try {
    for (const d of [db, other]) d.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)');
    const insert = 'INSERT INTO t (k, v) VALUES (?, ?)';
    const select = 'SELECT v FROM t WHERE k = ?';
    assert.equal(statement(db, insert), statement(db, insert), 'the same statement for the same text');
    assert.notEqual(statement(db, insert), statement(other, insert), 'a statement of another connection is its own');
    statement(db, insert).run('a', 1);
    statement(db, insert).run('b', 2);
    statement(other, insert).run('a', 10);
    assert.deepEqual(statement<[string], { v: number }>(db, select).get('a'), { v: 1 });
    assert.deepEqual(statement<[string], { v: number }>(db, select).get('b'), { v: 2 });
    assert.deepEqual(statement<[string], { v: number }>(other, select).get('a'), { v: 10 });
    assert.equal(statement(db, select).get('missing'), undefined);
    assert.throws(() => statement(db, 'SELECT nope FROM'), { code: 'SQLITE_ERROR' }, 'a bad text throws at once and is not kept');
    assert.throws(() => statement(db, 'SELECT nope FROM'), { code: 'SQLITE_ERROR' });
  } finally {
    db.close();
    other.close();
  }
});
