// The pure rules of a Root's deletion: what the node-agent does for a deleted Root object
// (node-agent/roots/root-deletion.ts), whether a Collapse may commit into a Root object
// (node-agent/roots/root-collapse-gate.ts), and that a released store root is adopted afresh by any later
// Root of its name (node-agent/roots/root-binding.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rootCollapseRefusal } from '../../node-agent/roots/root-collapse-gate.js';
import { rootDeletion } from '../../node-agent/roots/root-deletion.js';
import { rootRecordBinding } from '../../node-agent/roots/root-binding.js';

const mine = { objectUid: 'uid-1', state: 'Ready' };

test('deletion: without the finalizer there is nothing to do', () => {
  assert.deepEqual(rootDeletion({ uid: 'uid-1', hasFinalizer: false, onDelete: 'Release' }, mine), { act: 'none' });
});

test('deletion: Release (and the default) releases this object\'s own root', () => {
  assert.deepEqual(rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'Release' }, mine), { act: 'release' });
  assert.deepEqual(rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: undefined }, mine), { act: 'release' });
  assert.deepEqual(rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'Release' }, { objectUid: null, state: 'Ready' }), { act: 'release' }, 'a record from before uids were kept');
});

test('deletion: KeepAdopted lets go, unless a release already began', () => {
  const kept = rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'KeepAdopted' }, mine);
  assert.equal(kept.act, 'let-go');
  assert.match(kept.act === 'let-go' ? kept.why : '', /KeepAdopted/);
  assert.deepEqual(rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'KeepAdopted' }, { ...mine, state: 'Releasing' }), { act: 'release' });
});

test('deletion: another object\'s record, no record, or a released one is let go untouched', () => {
  for (const record of [undefined, { objectUid: 'uid-0', state: 'Ready' }, { ...mine, state: 'Released' }]) {
    assert.equal(rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'Release' }, record).act, 'let-go', JSON.stringify(record));
  }
  const other = rootDeletion({ uid: 'uid-1', hasFinalizer: true, onDelete: 'Release' }, { objectUid: 'uid-0', state: 'Ready' });
  assert.match(other.act === 'let-go' ? other.why : '', /uid-0.*uid-1/);
});

const ready = { metadata: { uid: 'uid-1' }, status: { phase: 'Ready', reason: 'READY' } };

test('collapse gate: a Ready Root bound to the store record takes the collapse', () => {
  assert.equal(rootCollapseRefusal('project', ready, 'uid-1'), undefined);
  assert.equal(rootCollapseRefusal('project', ready, null), undefined, 'a record from before uids were kept');
});

test('collapse gate: missing, being deleted, not Ready, or another object: refused by name', () => {
  const cases: [Parameters<typeof rootCollapseRefusal>[1], string, RegExp][] = [
    [undefined, 'ROOT_NOT_FOUND', /does not exist/],
    [{ ...ready, metadata: { uid: 'uid-1', deletionTimestamp: '2026-01-01T00:00:00Z' } }, 'ROOT_RELEASING', /being deleted/],
    [{ ...ready, status: { phase: 'Broken', reason: 'ROOT_REPLACED' } }, 'ROOT_NOT_READY', /Broken \(ROOT_REPLACED\)/],
    [{ ...ready, status: { phase: 'Releasing' } }, 'ROOT_NOT_READY', /Releasing/],
    [{ ...ready, status: { phase: 'Adopting' } }, 'ROOT_NOT_READY', /Adopting/],
    [{ metadata: { uid: 'uid-1' } }, 'ROOT_NOT_READY', /without a phase/],
    [{ ...ready, metadata: { uid: 'uid-2' } }, 'ROOT_REPLACED', /uid-2.*uid-1/],
  ];
  for (const [root, code, message] of cases) {
    const r = rootCollapseRefusal('project', root, 'uid-1');
    assert.equal(r?.code, code, JSON.stringify(root));
    assert.match(r?.message ?? '', message);
    assert.match(r?.message ?? '', /project/);
  }
});

test('binding: a released record is adopted afresh, at its path or another, by any uid', () => {
  for (const nodePath of ['/srv/project', '/srv/other']) {
    assert.deepEqual(rootRecordBinding({ nodePath, objectUid: 'uid-old', state: 'Released' }, { name: 'project', uid: 'uid-new', path: '/srv/project' }), { act: 'adopt' });
  }
  assert.equal(rootRecordBinding({ nodePath: '/srv/project', objectUid: 'uid-old', state: 'Releasing' }, { name: 'project', uid: 'uid-new', path: '/srv/project' }).act, 'refuse', 'a release in progress is still the old object\'s');
});
