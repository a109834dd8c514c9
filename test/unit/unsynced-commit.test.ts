// commitUnsynced: one commit with synchronous = NORMAL (its WAL frames written, not fsynced), the store's
// FULL again after it, whether the commit succeeded or threw (and then nothing of it is kept).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { commitUnsynced, walPathOf } from '../../node-agent/store/unsynced-commit.js';

const SYNCHRONOUS = { NORMAL: 1, FULL: 2 };

function walDatabase(t: { after: (fn: () => void) => void }): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), 'wl-unsynced-'));
  const db = new Database(join(dir, 'state.db'));
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE t (x INTEGER)');
  return db;
}

test('the commit runs with synchronous = NORMAL, and FULL is back after it, every time', (t) => {
  const db = walDatabase(t);
  const seen: number[] = [];
  for (let n = 0; n < 3; n++) {
    commitUnsynced(db, () => {
      seen.push(db.pragma('synchronous', { simple: true }) as number);
      db.prepare('INSERT INTO t VALUES (?)').run(n);
    });
    assert.equal(db.pragma('synchronous', { simple: true }), SYNCHRONOUS.FULL);
  }
  assert.deepEqual(seen, [SYNCHRONOUS.NORMAL, SYNCHRONOUS.NORMAL, SYNCHRONOUS.NORMAL]);
  assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 3);
});

test('a commit that throws keeps nothing and leaves synchronous = FULL', (t) => {
  const db = walDatabase(t);
  assert.throws(() => commitUnsynced(db, () => {
    db.prepare('INSERT INTO t VALUES (1)').run();
    throw new Error('refused');
  }), /refused/);
  assert.equal(db.pragma('synchronous', { simple: true }), SYNCHRONOUS.FULL);
  assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0);
});

test('walPathOf names the file SQLite writes beside the database in WAL mode', (t) => {
  const db = walDatabase(t);
  commitUnsynced(db, () => db.prepare('INSERT INTO t VALUES (1)').run());
  assert.ok(statSync(walPathOf(db.name)).size > 0, 'the commit is in the WAL');
});
