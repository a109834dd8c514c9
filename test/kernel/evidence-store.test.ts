// The content-addressed evidence store on real files: objects verified on write and on read, a
// resolution session's one budget for a whole graph checked before each read, and a session that failed
// ending for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../../core/digest.js';
import { EvidenceError, EvidenceStore } from '../../node-agent/evidence/evidence-store.js';
import { outcomeOf } from '../support/error-code.js';

function fixture(t: { after: (fn: () => void) => void }): EvidenceStore {
  const dir = mkdtempSync(join(tmpdir(), 'wl-evidence-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return new EvidenceStore(dir);
}
const codeOf = (f: () => unknown): string => outcomeOf(f, EvidenceError);

test('put is idempotent and names the bytes; read verifies them', (t) => {
  const s = fixture(t);
  const d = s.put(Buffer.from('statement one'));
  assert.equal(d, `sha256:${sha256Hex('statement one')}`);
  assert.equal(s.put(Buffer.from('statement one')), d);
  assert.deepEqual(s.session({ maxObjects: 4, maxBytes: 1024 }).read(d), Buffer.from('statement one'));
});

test('putAll stores each object as put does and answers their digests in order; an altered one among them is refused', (t) => {
  const s = fixture(t);
  const digests = s.putAll([Buffer.from('the observation'), Buffer.from('the decision'), Buffer.from('the observation')]);
  assert.deepEqual(digests, [`sha256:${sha256Hex('the observation')}`, `sha256:${sha256Hex('the decision')}`, `sha256:${sha256Hex('the observation')}`]);
  const read = s.session({ maxObjects: 4, maxBytes: 1024 });
  assert.deepEqual(read.read(digests[1] as string), Buffer.from('the decision'));
  assert.deepEqual(read.read(digests[0] as string), Buffer.from('the observation'));
  assert.deepEqual(s.putAll([]), []);
  // The decision's file altered in place: storing it again with another object refuses it by name.
  const decision = join(s.dir, sha256Hex('the decision'));
  chmodSync(decision, 0o600);
  writeFileSync(decision, 'the decisioN');
  assert.equal(codeOf(() => s.putAll([Buffer.from('another'), Buffer.from('the decision')])), 'EVIDENCE_CORRUPT');
});

test('an object whose bytes changed is refused on read, and a put of the true bytes refuses to trust it', (t) => {
  const s = fixture(t);
  const d = s.put(Buffer.from('the original'));
  const file = join(s.dir, d.slice(7));
  chmodSync(file, 0o600);
  writeFileSync(file, 'the substitute');
  assert.equal(codeOf(() => s.session({ maxObjects: 4, maxBytes: 1024 }).read(d)), 'EVIDENCE_CORRUPT');
  assert.equal(codeOf(() => s.put(Buffer.from('the original'))), 'EVIDENCE_CORRUPT');
  // A link planted under an object's name is not followed.
  unlinkSync(file);
  symlinkSync('/etc/hostname', file);
  assert.equal(codeOf(() => s.session({ maxObjects: 4, maxBytes: 1024 }).read(d)), 'EVIDENCE_CORRUPT');
});

test('one budget for the whole session: objects and bytes are counted across reads, checked before reading, and a failure ends the session', (t) => {
  const s = fixture(t);
  const a = s.put(Buffer.alloc(100, 1));
  const b = s.put(Buffer.alloc(100, 2));
  const c = s.put(Buffer.alloc(100, 3));
  const bytes = s.session({ maxObjects: 10, maxBytes: 250 });
  bytes.read(a);
  bytes.read(b);
  assert.equal(codeOf(() => bytes.read(c)), 'EVIDENCE_BUDGET_EXCEEDED');
  assert.deepEqual(bytes.used, { objects: 3, bytes: 200 }, 'the third object was opened and measured, never read');
  assert.equal(codeOf(() => bytes.read(a)), 'EVIDENCE_SESSION_ENDED', 'a failed session answers nothing more, even within budget');
  const objects = s.session({ maxObjects: 2, maxBytes: 10_000 });
  objects.read(a);
  objects.read(a);
  assert.equal(codeOf(() => objects.read(b)), 'EVIDENCE_BUDGET_EXCEEDED');
  const missing = s.session({ maxObjects: 10, maxBytes: 10_000 });
  assert.equal(codeOf(() => missing.read(`sha256:${'0'.repeat(64)}`)), 'EVIDENCE_MISSING');
  assert.equal(codeOf(() => missing.read(a)), 'EVIDENCE_SESSION_ENDED');
  assert.equal(codeOf(() => s.session({ maxObjects: 1, maxBytes: 1 }).read('sha256:../../etc/passwd')), 'EVIDENCE_DIGEST_INVALID');
});
