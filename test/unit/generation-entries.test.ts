// The store's entry spans (node-agent/store/generation-entries.ts) on a real SQLite database: every
// recorded generation reads back as exactly its manifest, whether it was written from its delta or from a
// comparison with the latest generation, and the migration from one row per entry per generation keeps
// every generation's manifest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { applyDelta, compareEntries, manifestDigest, type Manifest, type ManifestDelta, type ManifestEntry } from '../../core/manifest.js';
import { entryReader, manifestAt } from '../../node-agent/store/generation-entries.js';
import { isStoreError } from '../../node-agent/store/store-errors.js';
import { getGenerationManifest, insertGeneration } from '../../node-agent/store/store-records.js';
import { migrate, versionBefore } from '../../node-agent/store/store-schema.js';

const PATHS = ['a', 'a/b', 'a/b/c', 'a/c', 'a0', 'b', 'b/x', 'c'];
const now = new Date('2026-12-04T00:00:00Z');

const entryArb = (path: string): fc.Arbitrary<ManifestEntry> =>
  fc.oneof(
    fc.record({ mode: fc.constantFrom(0o755, 0o700), uid: fc.nat(3), gid: fc.nat(3) }).map((r) => ({ path, type: 'dir' as const, ...r })),
    fc.record({ mode: fc.constantFrom(0o644, 0o600), uid: fc.nat(3), gid: fc.nat(3), size: fc.nat(9), h: fc.constantFrom('a', 'b', 'c') }).map(({ h, ...r }) => ({ path, type: 'file' as const, ...r, sha256: h.repeat(64) })),
    fc.constantFrom('a', '../x').map((target) => ({ path, type: 'symlink' as const, mode: 0o777, uid: 0, gid: 0, target })),
  );

/** A delta over PATHS: each path upserted, deleted or left; the root's attributes changed sometimes. */
const deltaArb: fc.Arbitrary<ManifestDelta> = fc
  .tuple(
    fc.tuple(...PATHS.map((p) => fc.oneof(fc.constant<'keep'>('keep'), fc.constant<'delete'>('delete'), entryArb(p)))),
    fc.option(fc.record({ mode: fc.constantFrom(0o755, 0o750), uid: fc.nat(2), gid: fc.nat(2) }), { nil: undefined }),
  )
  .map(([ops, rootAttributes]) => ({
    upsert: ops.filter((o): o is ManifestEntry => typeof o === 'object'),
    deleted: ops.flatMap((o, i) => (o === 'delete' ? [PATHS[i]!] : [])),
    ...(rootAttributes ? { rootAttributes } : {}),
  }));

/** How a generation is handed to insertGeneration: with its delta, with none, or with one naming another base. */
const wayArb = fc.constantFrom('delta', 'none', 'stale');

function fresh(): Database.Database {
  const db = new Database(':memory:');
  migrate(db);
  return db;
}

function record(db: Database.Database, number: number, m: Manifest, change?: { from: number; delta: ManifestDelta }): string {
  const id = `g${number}`;
  insertGeneration(db, { id, rootKey: 'rk', number, digest: manifestDigest(m), payloadDev: '1', payloadIno: String(number) }, m, now, change);
  return id;
}

function plain(m: Manifest): Manifest {
  return { entries: m.entries.map((e) => ({ ...e })), ...(m.root ? { root: { ...m.root } } : {}) };
}

function assertReads(db: Database.Database, number: number, m: Manifest): void {
  assert.deepEqual(plain(manifestAt(db, 'rk', number)), plain(m), `generation ${number}`);
  const r = entryReader(db, 'rk', number);
  for (const p of PATHS) assert.deepEqual(r.get(p), m.entries.find((e) => e.path === p), `generation ${number}: ${p}`);
  assert.deepEqual(r.range('a/', 'a0'), m.entries.filter((e) => e.path.startsWith('a/')), `generation ${number}: below a`);
  assert.deepEqual(r.range('', undefined), m.entries, `generation ${number}: all`);
}

test('every generation reads back as its manifest, however it was recorded', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(deltaArb, wayArb), { minLength: 1, maxLength: 8 }), (steps) => {
      const db = fresh();
      const first: Manifest = { root: { mode: 0o755, uid: 1, gid: 1 }, entries: [{ path: 'a', type: 'dir', mode: 0o755, uid: 0, gid: 0 }] };
      const manifests = [first];
      record(db, 1, first);
      for (const [n, [delta, way]] of steps.entries()) {
        const number = n + 2;
        const next = applyDelta(manifests.at(-1)!, delta);
        const change = way === 'delta' ? { from: number - 1, delta } : way === 'stale' ? { from: number - 2, delta: { upsert: [], deleted: [] } } : undefined;
        const before = (db.prepare('SELECT COUNT(*) AS n FROM entry_spans').get() as { n: number }).n;
        record(db, number, next, change);
        const added = (db.prepare('SELECT COUNT(*) AS n FROM entry_spans').get() as { n: number }).n - before;
        // From its delta, a generation writes one span per upserted entry (and one for changed root attributes), no more.
        if (way === 'delta') assert.equal(added, delta.upsert.length + (delta.rootAttributes ? 1 : 0));
        manifests.push(next);
      }
      for (const [i, m] of manifests.entries()) assertReads(db, i + 1, m);
      db.close();
    }),
    { numRuns: 300 },
  );
});

test('a generation older than a recorded one is refused, and a recorded one is left as it is', () => {
  const db = fresh();
  const m: Manifest = { entries: [{ path: 'a', type: 'dir', mode: 0o755, uid: 0, gid: 0 }] };
  record(db, 1, m);
  record(db, 2, m);
  assert.throws(() => insertGeneration(db, { id: 'other', rootKey: 'rk', number: 1, digest: 'x', payloadDev: '1', payloadIno: '9' }, m, now), /UNIQUE|only appended/);
  assert.throws(() => insertGeneration(db, { id: 'older', rootKey: 'rk', number: 0, digest: 'x', payloadDev: '1', payloadIno: '9' }, m, now), /only appended/);
  record(db, 2, { entries: [] }); // idempotent: the same id again changes nothing
  assertReads(db, 2, m);
  db.close();
});

test('a manifest read from the store must digest to its generation; what is served is frozen', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-entries-'));
  const file = join(dir, 'store.db');
  const db = new Database(file);
  migrate(db);
  const m1: Manifest = { root: { mode: 0o755, uid: 0, gid: 0 }, entries: [{ path: 'f', type: 'file', mode: 0o644, uid: 0, gid: 0, size: 1, sha256: 'a'.repeat(64) }] };
  const delta: ManifestDelta = { upsert: [{ path: 'g', type: 'file', mode: 0o644, uid: 0, gid: 0, size: 2, sha256: 'b'.repeat(64) }], deleted: [] };
  const m2 = applyDelta(m1, delta);
  record(db, 1, m1);
  record(db, 2, m2, { from: 1, delta });
  // Served from the recording connection's cache: frozen, so no caller changes what the next one reads.
  const served = getGenerationManifest(db, 'g1')!;
  assert.deepEqual(plain(served), m1);
  assert.throws(() => served.entries.push(m1.entries[0]!), TypeError);
  assert.throws(() => {
    (served.entries[0] as { size?: number }).size = 5;
  }, TypeError);
  // Another connection has nothing cached: it reads the rows, which must digest to the recorded digest.
  const other = new Database(file);
  assert.deepEqual(plain(getGenerationManifest(other, 'g2')!), plain(m2));
  assert.equal(getGenerationManifest(other, 'nope'), undefined);
  other.prepare(`UPDATE entry_spans SET size = 7 WHERE root_key = 'rk' AND path = 'g'`).run();
  const third = new Database(file);
  assert.throws(() => getGenerationManifest(third, 'g2'), (e: unknown) => isStoreError(e, 'GENERATION_ENTRIES_MISMATCH'));
  assert.deepEqual(plain(getGenerationManifest(third, 'g1')!), m1, 'generation 1 does not hold the changed span');
  for (const d of [db, other, third]) d.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the migration to entry spans keeps every generation of every Root, and the next one builds on the latest', () => {
  const db = new Database(':memory:');
  migrate(db, versionBefore('CREATE TABLE entry_spans'));
  const root = { mode: 0o755, uid: 1000, gid: 1000 };
  const gens: Manifest[] = [
    { root, entries: [{ path: 'd', type: 'dir', mode: 0o755, uid: 1, gid: 1 }, { path: 'd/f', type: 'file', mode: 0o644, uid: 1, gid: 1, size: 1, sha256: 'a'.repeat(64) }] },
    { root, entries: [{ path: 'd', type: 'dir', mode: 0o755, uid: 1, gid: 1 }, { path: 'd/f', type: 'file', mode: 0o644, uid: 1, gid: 1, size: 2, sha256: 'b'.repeat(64) }] },
    { entries: [{ path: 'l', type: 'symlink', mode: 0o777, uid: 0, gid: 0, target: 'd/f' }] },
  ];
  // As the schema before spans held them: the manifest as JSON and one row per entry, per generation.
  const gen = db.prepare(`INSERT INTO generations (id, root_key, number, digest, manifest_json, payload_dev, payload_ino, created_at) VALUES (?, ?, ?, ?, ?, '1', ?, 'now')`);
  const row = db.prepare(`INSERT INTO generation_entries (generation_id, path, type, mode, uid, gid, size, sha256, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  for (const [key, list] of [['rk', gens], ['other', gens.slice(0, 1)]] as const) {
    for (const [i, m] of list.entries()) {
      const id = `${key}-${i + 1}`;
      gen.run(id, key, i + 1, manifestDigest(m), JSON.stringify(m), id);
      if (m.root) row.run(id, '', 'dir', m.root.mode, m.root.uid, m.root.gid, null, null, null);
      for (const e of m.entries) row.run(id, e.path, e.type, e.mode, e.uid, e.gid, e.size ?? null, e.sha256 ?? null, e.target ?? null);
    }
  }
  migrate(db);
  for (const [i, m] of gens.entries()) assertReads(db, i + 1, m);
  assert.deepEqual(plain(manifestAt(db, 'other', 1)), gens[0]);
  for (const [i, m] of gens.entries()) assert.deepEqual(plain(getGenerationManifest(db, `rk-${i + 1}`)!), m);
  const delta: ManifestDelta = { upsert: [{ path: 'm', type: 'dir', mode: 0o700, uid: 0, gid: 0 }], deleted: [] };
  const next = applyDelta(gens[2]!, delta);
  record(db, 4, next, { from: 3, delta });
  assertReads(db, 4, next);
  assertReads(db, 3, gens[2]!);
  const tables = db.prepare(`SELECT name FROM sqlite_master WHERE name = 'generation_entries'`).all();
  assert.deepEqual(tables, []);
  assert.ok(!(db.prepare('PRAGMA table_info(generations)').all() as { name: string }[]).some((c) => c.name === 'manifest_json'));
  assert.deepEqual([...next.entries].sort(compareEntries), next.entries);
  db.close();
});
