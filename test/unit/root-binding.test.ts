// The binding of a store root to its Root object: the pure rule (node-agent/roots/root-binding.ts) and the
// store schema's migration 10 that records the object's uid (a row from before keeps NULL and is bound once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { rootRecordBinding } from '../../node-agent/roots/root-binding.js';
import { bindRootObjectUid, getRoot, upsertRoot } from '../../node-agent/store/store-records.js';
import { SCHEMA_VERSION, migrate } from '../../node-agent/store/store-schema.js';

const root = { name: 'project', uid: 'uid-new', path: '/srv/project' };

test('no record: adopt', () => {
  assert.deepEqual(rootRecordBinding(undefined, root), { act: 'adopt' });
});

test('the record of this object at its path: serve', () => {
  assert.deepEqual(rootRecordBinding({ nodePath: '/srv/project', objectUid: 'uid-new' }, root), { act: 'serve' });
});

test('another uid at the same path: ROOT_REPLACED naming both uids and the path', () => {
  const b = rootRecordBinding({ nodePath: '/srv/project', objectUid: 'uid-old' }, root);
  assert.equal(b.act, 'refuse');
  assert.ok(b.act === 'refuse');
  assert.equal(b.code, 'ROOT_REPLACED');
  for (const part of ['uid-old', 'uid-new', '/srv/project', 'project', 'another name']) assert.ok(b.message.includes(part), `${part} in: ${b.message}`);
});

test('another path: ROOT_PATH_MISMATCH naming both paths, whatever the uid', () => {
  for (const objectUid of ['uid-old', 'uid-new', null]) {
    const b = rootRecordBinding({ nodePath: '/srv/old', objectUid }, root);
    assert.ok(b.act === 'refuse', `uid ${objectUid}`);
    assert.equal(b.code, 'ROOT_PATH_MISMATCH');
    for (const part of ['/srv/old', '/srv/project', 'uid-new', 'another name']) assert.ok(b.message.includes(part), `${part} in: ${b.message}`);
    if (objectUid) assert.ok(b.message.includes(objectUid));
  }
});

test('a record from before uids were kept, at this path: bind this object once', () => {
  assert.deepEqual(rootRecordBinding({ nodePath: '/srv/project', objectUid: null }, root), { act: 'bind', objectUid: 'uid-new' });
});

test('migration 10 keeps roots adopted before it, with no uid, and binds one uid once', () => {
  const db = new Database(':memory:');
  migrate(db, 9);
  db.prepare(
    `INSERT INTO roots (name, node_path, root_key, state, generation, digest, reason, message, updated_at)
     VALUES ('project', '/srv/project', 'project', 'Ready', 3, 'sha256:x', NULL, NULL, 'then')`,
  ).run();
  migrate(db);
  assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  const before = getRoot(db, 'project')!;
  assert.equal(before.objectUid, null);
  assert.equal(before.generation, 3);
  assert.equal(before.nodePath, '/srv/project');

  const now = new Date('2026-01-01T00:00:00Z');
  assert.equal(bindRootObjectUid(db, 'project', 'uid-first', now), true);
  assert.equal(bindRootObjectUid(db, 'project', 'uid-second', now), false, 'a recorded uid is never overwritten');
  assert.equal(bindRootObjectUid(db, 'absent', 'uid-x', now), false);
  const bound = getRoot(db, 'project')!;
  assert.equal(bound.objectUid, 'uid-first');

  // A later write of the record (a collapse advancing PRIME) carries the uid along.
  upsertRoot(db, { ...bound, generation: 4, digest: 'sha256:y' }, now);
  assert.equal(getRoot(db, 'project')!.objectUid, 'uid-first');
  assert.equal(getRoot(db, 'project')!.generation, 4);
  db.close();
});
