// The candidate diff on real files: a store-shaped base payload and candidate payload, read beneath their
// directories by the native addon (never through a link), rendered as patch, stat and name-only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ManifestEntry } from '../../core/manifest.js';
import { renderDiff, type DiffSource } from '../../node-agent/content/candidate-diff.js';
import type { StoredDelta } from '../../node-agent/store/candidates.js';

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex');
const file = (path: string, content: string | Buffer, mode = 0o644, uid = 1000): ManifestEntry => ({ path, type: 'file', mode, uid, gid: uid, size: Buffer.byteLength(content), sha256: sha(content) });
const dir = (path: string, mode = 0o755): ManifestEntry => ({ path, type: 'dir', mode, uid: 1000, gid: 1000 });
const link = (path: string, target: string): ManifestEntry => ({ path, type: 'symlink', mode: 0o777, uid: 1000, gid: 1000, target });

function fixture(t: { after: (fn: () => void) => void }) {
  const top = mkdtempSync(join(tmpdir(), 'wl-diff-'));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const basePayload = join(top, 'base');
  const candidatePayload = join(top, 'cand');
  mkdirSync(basePayload);
  mkdirSync(candidatePayload);
  const base = new Map<string, ManifestEntry>();
  const put = (root: string, e: ManifestEntry, content?: string | Buffer): void => {
    if (e.type === 'dir') mkdirSync(join(root, e.path), { recursive: true });
    else if (e.type === 'file') writeFileSync(join(root, e.path), content ?? '');
    if (root === basePayload) base.set(e.path, e);
  };
  return { top, basePayload, candidatePayload, base, put };
}

const text = (n: number, change?: number): string => Array.from({ length: n }, (_, i) => (i === change ? `line ${i} changed` : `line ${i}`)).join('\n') + '\n';

test('candidate diff: text hunks, additions, deletions, binary, mode, owner, symlink and type changes, in byte order', (t) => {
  const f = fixture(t);
  const upsert: ManifestEntry[] = [];
  const cand = (e: ManifestEntry, content?: string | Buffer): void => {
    f.put(f.candidatePayload, e, content);
    upsert.push(e);
  };
  f.put(f.basePayload, file('a.txt', text(20)), text(20));
  cand(file('a.txt', text(20, 10)), text(20, 10));
  f.put(f.basePayload, file('gone.txt', 'bye\n'), 'bye\n');
  cand(file('new.txt', 'hello\n'), 'hello\n');
  const bin = Buffer.from([0, 1, 2, 3]);
  f.put(f.basePayload, file('img.bin', bin), bin);
  cand(file('img.bin', Buffer.from([0, 9])), Buffer.from([0, 9]));
  f.put(f.basePayload, file('run.sh', 'echo\n'), 'echo\n');
  cand(file('run.sh', 'echo\n', 0o755, 0), 'echo\n');
  f.base.set('cur', link('cur', 'v1'));
  cand(link('cur', 'v2'));
  f.put(f.basePayload, file('was-file', 'x\n'), 'x\n');
  cand(dir('was-file'));
  const delta: StoredDelta = { format: 'worldline.delta/v1', root: 'repo', baseGeneration: 1, baseDigest: `sha256:${'a'.repeat(64)}`, upsert, deleted: ['gone.txt'] };
  const src: DiffSource = { root: 'repo', delta, candidatePayload: f.candidatePayload, basePayload: f.basePayload, baseEntry: (p) => f.base.get(p) };

  const patch = renderDiff([src], 'patch');
  assert.equal(patch.truncated, false);
  assert.equal(patch.paths, 7);
  const out = patch.text;
  // Byte order of paths; the hunk carries three lines of context around the one changed line.
  const order = [...out.matchAll(/^diff --worldline a\/(\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(order, ['repo/a.txt', 'repo/cur', 'repo/gone.txt', 'repo/img.bin', 'repo/new.txt', 'repo/run.sh', 'repo/was-file', 'repo/was-file']);
  assert.match(out, /--- a\/repo\/a\.txt\n\+\+\+ b\/repo\/a\.txt\n@@ -8,7 \+8,7 @@\n line 7\n line 8\n line 9\n-line 10\n\+line 10 changed\n line 11\n/);
  assert.match(out, /diff --worldline a\/repo\/new\.txt b\/repo\/new\.txt\nnew file mode 100644\n--- \/dev\/null\n\+\+\+ b\/repo\/new\.txt\n@@ -0,0 \+1 @@\n\+hello\n/);
  assert.match(out, /deleted file mode 100644\n--- a\/repo\/gone\.txt\n\+\+\+ \/dev\/null\n@@ -1 \+0,0 @@\n-bye\n/);
  assert.match(out, /Binary files: a\/repo\/img\.bin and b\/repo\/img\.bin differ \(4 bytes -> 2 bytes\)/);
  assert.match(out, /diff --worldline a\/repo\/run\.sh b\/repo\/run\.sh\nold mode 100644\nnew mode 100755\nold owner 1000:1000\nnew owner 0:0\ndiff/, 'same bytes: headers only');
  assert.match(out, /-v1\n\+v2\n/, 'a symlink shows its target');
  assert.match(out, /deleted file mode 100644\n--- a\/repo\/was-file\n\+\+\+ \/dev\/null\n@@ -1 \+0,0 @@\n-x\ndiff --worldline a\/repo\/was-file b\/repo\/was-file\nnew directory mode 040755\n/, 'a type change is a deletion and an addition');

  const stat = renderDiff([src], 'stat').text;
  assert.match(stat, / repo\/a\.txt +\| 2 \+-\n/);
  assert.match(stat, / repo\/img\.bin +\| Bin\n/);
  assert.match(stat, / repo\/was-file +\| dir added\n/);
  assert.match(stat, / repo\/run\.sh +\| 0\n/, 'a mode or owner change alone changes no line');
  assert.match(stat, / 7 paths changed, 3 insertions\(\+\), 4 deletions\(-\)\n$/);
  assert.equal(renderDiff([src], 'name-only').text, ['a.txt', 'cur', 'gone.txt', 'img.bin', 'new.txt', 'run.sh', 'was-file'].map((p) => `repo/${p}\n`).join(''));
});

test('candidate diff: bounded output names what it left out; a link planted in the payload is not followed; changed base bytes are not shown as the base', (t) => {
  const f = fixture(t);
  const upsert: ManifestEntry[] = [];
  for (let i = 0; i < 30; i++) {
    const name = `f${String(i).padStart(2, '0')}.txt`;
    writeFileSync(join(f.candidatePayload, name), text(50));
    upsert.push(file(name, text(50)));
  }
  // The candidate payload holds a link where the delta says a file is: it must not be read through.
  writeFileSync(join(f.top, 'secret'), 'top secret\n');
  symlinkSync(join(f.top, 'secret'), join(f.candidatePayload, 'planted.txt'));
  upsert.push(file('planted.txt', 'top secret\n'));
  // The base file was written in place after the fork: its bytes no longer match the base manifest.
  f.put(f.basePayload, file('moved.txt', 'original\n'), 'rewritten in place\n');
  writeFileSync(join(f.candidatePayload, 'moved.txt'), 'new\n');
  upsert.push(file('moved.txt', 'new\n'));
  const delta: StoredDelta = { format: 'worldline.delta/v1', root: 'r', baseGeneration: 1, baseDigest: `sha256:${'b'.repeat(64)}`, upsert, deleted: [] };
  const src: DiffSource = { root: 'r', delta, candidatePayload: f.candidatePayload, basePayload: f.basePayload, baseEntry: (p) => f.base.get(p) };

  const all = renderDiff([src], 'patch').text;
  assert.doesNotMatch(all, /top secret/);
  assert.match(all, /Files not diffable: \/dev\/null and b\/r\/planted\.txt differ \(none -> unavailable: ELOOP\)/);
  assert.doesNotMatch(all, /rewritten in place/);
  assert.match(all, /a\/r\/moved\.txt and b\/r\/moved\.txt differ \(unavailable: the base file changed since the candidate was forked/);

  const small = renderDiff([src], 'patch', { maxOutputBytes: 2000, maxFileBytes: 1 << 20, maxEditLength: 20_000 });
  assert.equal(small.truncated, true);
  assert.ok(Buffer.byteLength(small.text) < 2200);
  const shown = [...small.text.matchAll(/^diff --worldline/gm)].length;
  assert.ok(shown >= 1 && shown < 32);
  assert.match(small.text, new RegExp(`\\.\\.\\. truncated: ${32 - shown} of 32 changed paths not shown \\(output limit 2000 bytes\\)\\n$`));

  const large = renderDiff([src], 'patch', { maxOutputBytes: 1 << 20, maxFileBytes: 100, maxEditLength: 20_000 });
  assert.ok(large.text.includes(`Files too large to diff: /dev/null and b/r/f00.txt differ (none -> ${Buffer.byteLength(text(50))} bytes)`), large.text.slice(0, 300));
});
