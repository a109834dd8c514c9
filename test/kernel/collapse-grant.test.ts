// Single-use collapse grants (node-agent/evidence/collapse-grant.ts) on a real SQLite grant store: an
// authorization minted for one transaction is spent once for its exchange; the same grant again, other
// bytes under its id, a grant past its validity (the boundary came too late) or one the trust policy
// revokes is refused by name, and a refused first check spends nothing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COLLAPSE_GRANT_TTL_MS, mintCollapseGrant, spendCollapseGrant, type CollapseAuthorization } from '../../node-agent/evidence/collapse-grant.js';
import { GrantError, GrantStore } from '../../node-agent/evidence/grant-store.js';
import { outcomeOf } from '../support/error-code.js';

const dir = mkdtempSync(join(tmpdir(), 'wl-collapse-grant-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const store = GrantStore.provision(join(dir, 'grants.db'));
after(() => store.close());

const T0 = new Date('2026-12-03T10:00:00.000Z');
const auth = (id: string): CollapseAuthorization => ({ transactionId: id, collapse: { namespace: 'team', name: 'c', uid: 'u-1' }, worldUid: 'w-1', mode: 'Candidate', roots: [{ name: 'repo', generation: 3, digest: `sha256:${'a'.repeat(64)}` }] });
const boundary = { prime: new Map([['repo', `sha256:${'a'.repeat(64)}`]]), staged: new Map([['repo', `sha256:${'b'.repeat(64)}`]]) };
const at = (ms: number) => ({ now: () => new Date(T0.getTime() + ms), revoked: () => false });
const codeOf = (f: () => unknown): string => outcomeOf(f, GrantError);

test('an authorization is spent once for its exchange; the same grant again is GRANT_SPENT, other bytes under its id GRANT_ALTERED', () => {
  const g = mintCollapseGrant(auth('tx-1'), T0);
  assert.equal(codeOf(() => spendCollapseGrant(store, g, boundary, at(1000))), 'ok');
  assert.ok(store.spent('tx-1'));
  assert.equal(codeOf(() => spendCollapseGrant(store, g, boundary, at(2000))), 'GRANT_SPENT');
  const other = mintCollapseGrant({ ...auth('tx-1'), mode: 'CheckpointReturn' }, T0);
  assert.equal(codeOf(() => spendCollapseGrant(store, other, boundary, at(2000))), 'GRANT_ALTERED');
});

test('a boundary reached after the grant\'s validity is GRANT_EXPIRED and spends nothing; a revoked grant is GRANT_REVOKED', () => {
  const g = mintCollapseGrant(auth('tx-2'), T0);
  assert.equal(codeOf(() => spendCollapseGrant(store, g, boundary, at(COLLAPSE_GRANT_TTL_MS))), 'GRANT_EXPIRED');
  assert.equal(store.spent('tx-2'), undefined, 'a refused first check spent the grant');
  assert.equal(codeOf(() => spendCollapseGrant(store, g, boundary, { now: () => T0, revoked: (id) => id === 'tx-2' })), 'GRANT_REVOKED');
  assert.equal(store.spent('tx-2'), undefined);
  assert.equal(codeOf(() => spendCollapseGrant(store, g, boundary, at(COLLAPSE_GRANT_TTL_MS - 1))), 'ok');
});

test('the grant binds what was authorized: each Root\'s generation and digest, in a canonical order', () => {
  const a = mintCollapseGrant({ ...auth('tx-3'), roots: [{ name: 'b', generation: 1, digest: 'sha256:1' }, { name: 'a', generation: 2, digest: 'sha256:2' }] }, T0);
  const b = mintCollapseGrant({ ...auth('tx-3'), roots: [{ name: 'a', generation: 2, digest: 'sha256:2' }, { name: 'b', generation: 1, digest: 'sha256:1' }] }, T0);
  assert.deepEqual(a.bytes, b.bytes);
  const moved = mintCollapseGrant({ ...auth('tx-3'), roots: [{ name: 'a', generation: 3, digest: 'sha256:2' }, { name: 'b', generation: 1, digest: 'sha256:1' }] }, T0);
  assert.notDeepEqual(a.bytes, moved.bytes);
  assert.match(a.bytes.toString(), /"format":"worldline.collapse-grant\/v1"/);
});
