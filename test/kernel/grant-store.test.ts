// Single-use grants on a real SQLite file: provisioned explicitly, refused when missing or corrupt; spent
// once (a replay or an altered grant under the same id refused); validity and revocation before, validity
// again after, and no refund; two spenders racing for each of 100 grants, exactly one winning every time;
// a spender killed right after spending leaves the grant spent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { GrantError, GrantStore, type GrantToSpend } from '../../node-agent/evidence/grant-store.js';
import { outcomeOf } from '../support/error-code.js';

const CHILD = new URL('./grant-child.js', import.meta.url);
const T0 = new Date('2026-12-01T00:00:00Z');
const at = (s: number): Date => new Date(T0.getTime() + s * 1000);
const grant = (id: string, over: Partial<GrantToSpend> = {}): GrantToSpend => ({ id, bytes: Buffer.from(`grant ${id}`), request: `collapse ${id}`, notBefore: at(0), notAfter: at(60), ...over });
const codeOf = (f: () => unknown): string => outcomeOf(f, GrantError);

function dir(t: { after: (fn: () => void) => void }): string {
  const d = mkdtempSync(join(tmpdir(), 'wl-grants-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test('a grant store is provisioned once, explicitly; a missing or corrupt one refuses', (t) => {
  const d = dir(t);
  const path = join(d, 'grants.db');
  assert.equal(codeOf(() => GrantStore.open(path)), 'GRANT_STORE_MISSING');
  GrantStore.provision(path).close();
  assert.equal(codeOf(() => GrantStore.provision(path)), 'GRANT_STORE_CORRUPT');
  GrantStore.open(path).close();
  writeFileSync(join(d, 'junk.db'), 'not a database at all, just bytes');
  assert.equal(codeOf(() => GrantStore.open(join(d, 'junk.db'))), 'GRANT_STORE_CORRUPT');
});

test('spent once: a replay and an altered grant under the same id are refused; invalid or revoked grants are not spent', (t) => {
  const s = GrantStore.provision(join(dir(t), 'grants.db'));
  const now = { now: () => at(10), revoked: () => false };
  assert.equal(codeOf(() => s.spend(grant('g1'), now)), 'ok');
  assert.equal(codeOf(() => s.spend(grant('g1'), now)), 'GRANT_SPENT');
  assert.equal(codeOf(() => s.spend(grant('g1', { bytes: Buffer.from('grant g1, widened') }), now)), 'GRANT_ALTERED');
  assert.equal(codeOf(() => s.spend(grant('g2'), { now: () => at(60), revoked: () => false })), 'GRANT_EXPIRED', 'the interval is half-open');
  assert.equal(codeOf(() => s.spend(grant('g2'), { now: () => at(-1), revoked: () => false })), 'GRANT_NOT_YET_VALID');
  assert.equal(codeOf(() => s.spend(grant('g2'), { now: () => at(10), revoked: (id) => id === 'g2' })), 'GRANT_REVOKED');
  assert.equal(s.spent('g2'), undefined, 'refused before spending: still unspent');
  assert.equal(codeOf(() => s.spend(grant('g2'), now)), 'ok');
  s.close();
});

test('a grant that expires between its spending and the fresh reading after it stays spent: no refund', (t) => {
  const s = GrantStore.provision(join(dir(t), 'grants.db'));
  const readings = [at(59), at(59), at(61)];
  assert.equal(codeOf(() => s.spend(grant('g'), { now: () => readings.shift() ?? at(61), revoked: () => false })), 'GRANT_EXPIRED');
  assert.ok(s.spent('g'));
  assert.equal(codeOf(() => s.spend(grant('g'), { now: () => at(1), revoked: () => false })), 'GRANT_SPENT');
  s.close();
});

test('two spenders race for each of 100 grants: exactly one wins every one', async (t) => {
  const path = join(dir(t), 'grants.db');
  GrantStore.provision(path).close();
  const ids = Array.from({ length: 100 }, (_, i) => `race-${i}`);
  const barrier = new SharedArrayBuffer(4);
  const run = () =>
    new Promise<string[]>((resolve, reject) => {
      const w = new Worker(CHILD, { workerData: { path, ids, barrier } });
      w.once('message', resolve);
      w.once('error', reject);
    });
  const [a, b] = await Promise.all([run(), run()]);
  assert.equal(a.length + b.length, 100, `won ${a.length} + ${b.length}`);
  assert.deepEqual([...a, ...b].sort(), [...ids].sort(), 'every grant won exactly once');
  const s = GrantStore.open(path);
  assert.ok(ids.every((id) => s.spent(id)));
  s.close();
});

test('a spender killed right after spending leaves the grant spent', (t) => {
  const path = join(dir(t), 'grants.db');
  GrantStore.provision(path).close();
  const r = spawnSync(process.execPath, [CHILD.pathname, path, 'crashed', 'crash']);
  assert.equal(r.signal, 'SIGKILL', r.stderr.toString());
  const s = GrantStore.open(path);
  assert.ok(s.spent('crashed'));
  assert.equal(codeOf(() => s.spend(grant('crashed', { bytes: Buffer.from('grant crashed'), notAfter: new Date(Date.now() + 60_000), notBefore: new Date(0) }), { now: () => new Date(), revoked: () => false })), 'GRANT_SPENT');
  s.close();
});
