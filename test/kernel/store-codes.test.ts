// Store refusals produced by name on the real filesystem, one each: a Root name that is not DNS-1123
// (ROOT_NAME_INVALID), a host path that is not absolute and normalized (ROOT_PATH_INVALID), a Root adopted
// twice (ROOT_ALREADY_ADOPTED: same name from another path, another name for the same path), a database
// written by a newer agent (STORE_SCHEMA_UNSUPPORTED), and a store directory replaced by a link or owned by
// another user (STORE_LAYOUT_INVALID). Each refusal changes nothing of the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chown, mkdir, rename, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { listRoots } from '../../node-agent/store/store-records.js';
import { SCHEMA_VERSION } from '../../node-agent/store/store-schema.js';
import { requireRoot } from '../support/require-root.js';
import { makeSampleTree, openTestStore, scratch } from './store-fixtures.js';

requireRoot('the store refusal codes (adoption moves directories owned by other users)');

const refused = (code: string, message?: RegExp) => (e: unknown): boolean => {
  const err = e as { code?: string; message?: string };
  assert.equal(err.code, code, String(err.message));
  if (message) assert.match(err.message ?? '', message);
  return true;
};

test('adoption refuses a bad name, a bad path and a second adoption by name, and adopts nothing', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  const host = join(s.dir, 'project');
  const other = join(s.dir, 'other');
  await makeSampleTree(host);
  await makeSampleTree(other);
  await assert.rejects(adoptRoot(store, { name: 'Not_A_Name', hostPath: host }), refused('ROOT_NAME_INVALID', /"Not_A_Name" is not a DNS-1123 subdomain/));
  await assert.rejects(adoptRoot(store, { name: 'project', hostPath: 'relative/project' }), refused('ROOT_PATH_INVALID', /must be an absolute, normalized path/));
  await assert.rejects(adoptRoot(store, { name: 'project', hostPath: `${host}/../project` }), refused('ROOT_PATH_INVALID'));
  await assert.rejects(adoptRoot(store, { name: 'project', hostPath: '/' }), refused('ROOT_PATH_INVALID'));
  assert.deepEqual(listRoots(store.db), [], 'a refused adoption recorded a Root');

  await adoptRoot(store, { name: 'project', hostPath: host });
  await assert.rejects(adoptRoot(store, { name: 'project', hostPath: other }), refused('ROOT_ALREADY_ADOPTED', new RegExp(`root project is already adopted from ${host}`)));
  await assert.rejects(adoptRoot(store, { name: 'again', hostPath: host }), refused('ROOT_ALREADY_ADOPTED'));
  assert.deepEqual(listRoots(store.db).map((r) => [r.name, r.nodePath]), [['project', host]]);
});

test('a database from a newer agent is STORE_SCHEMA_UNSUPPORTED and is left as it is', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  (await openStore({ dir })).store.close();
  const db = new Database(join(dir, 'state.db'));
  db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  db.close();
  await assert.rejects(openStore({ dir }), refused('STORE_SCHEMA_UNSUPPORTED', new RegExp(`database schema ${SCHEMA_VERSION + 1} is newer than this agent's ${SCHEMA_VERSION}`)));
  const after = new Database(join(dir, 'state.db'), { readonly: true });
  assert.equal(after.pragma('user_version', { simple: true }), SCHEMA_VERSION + 1, 'the refusal changed the schema');
  after.close();
});

test('a store directory replaced by a link, or owned by another user, is STORE_LAYOUT_INVALID', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const first = await openStore({ dir });
  const staging = first.store.layout.staging;
  first.store.close();
  // A link in place of staging/ (to a directory of the test's own).
  const elsewhere = join(s.dir, 'elsewhere');
  await mkdir(elsewhere);
  await rename(staging, `${staging}.real`);
  await symlink(elsewhere, staging);
  await assert.rejects(openStore({ dir }), refused('STORE_LAYOUT_INVALID', /is not a directory \(a link or a file is in its place\)/));
  // The real directory back, owned by another user.
  await rename(staging, `${staging}.link`);
  await rename(`${staging}.real`, staging);
  await chown(staging, 1000, 1000);
  await assert.rejects(openStore({ dir }), refused('STORE_LAYOUT_INVALID', /is owned by uid 1000, not 0/));
});
