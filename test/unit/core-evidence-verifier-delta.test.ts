import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ManifestEntry } from '../../core/manifest.js';
import { verifierModifiedByCandidate } from '../../core/evidence/verifier-delta.js';

const entry = (path: string, type: ManifestEntry['type'] = 'file'): ManifestEntry => ({ path, type, mode: 0o644, uid: 0, gid: 0 });
const BOUND = ['checks/lib/common.sh', 'checks/verify.sh', 'Makefile'];

test('verifierModifiedByCandidate: table', async (t) => {
  const cases: { why: string; upsert: ManifestEntry[]; deleted: string[]; want: string[] }[] = [
    { why: 'untouched', upsert: [entry('README.md')], deleted: ['old.txt'], want: [] },
    { why: 'rewritten', upsert: [entry('checks/verify.sh')], deleted: [], want: ['checks/verify.sh'] },
    { why: 'deleted', upsert: [], deleted: ['Makefile'], want: ['Makefile'] },
    { why: 'parent directory deleted', upsert: [], deleted: ['checks', 'checks/lib', 'checks/lib/common.sh', 'checks/verify.sh'], want: ['checks/lib/common.sh', 'checks/verify.sh'] },
    { why: 'parent replaced by a symlink (redirect)', upsert: [entry('checks', 'symlink')], deleted: [], want: ['checks/lib/common.sh', 'checks/verify.sh'] },
    { why: 'parent directory only re-moded', upsert: [entry('checks', 'dir')], deleted: [], want: [] },
    { why: 'a sibling added', upsert: [entry('checks/new.sh')], deleted: [], want: [] },
    { why: 'file replaced by a directory', upsert: [entry('Makefile', 'dir')], deleted: [], want: ['Makefile'] },
  ];
  for (const c of cases) {
    await t.test(c.why, () => assert.deepEqual(verifierModifiedByCandidate(BOUND, { upsert: c.upsert, deleted: c.deleted }), c.want));
  }
  await t.test('no delta', () => assert.deepEqual(verifierModifiedByCandidate(BOUND, null), []));
});
