// A stored candidate rebased onto a newer PRIME generation, on real files: the same deltas and bytes (hard
// links, same inodes) under a new identity — the very identity a capture of the same change made on the
// new base would have — with rebase.json naming what it came from; and a CONFLICT naming Root and paths
// when PRIME changed what the candidate changed; rebaseOnto recognises a rebase by the change both carry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { digestOf } from '../../core/digest.js';
import { Refusal } from '../../core/errors.js';
import { sortManifest, type Manifest, type ManifestEntry } from '../../core/manifest.js';
import { candidateIdentity, readCandidate, storeCandidate, type RootChange } from '../../node-agent/store/candidates.js';
import { rebaseOnto, storeRebasedCandidate, type RebaseTarget } from '../../node-agent/store/rebased-candidate.js';
import { requireRoot } from '../support/require-root.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const file = (path: string, content: string): ManifestEntry => ({ path, type: 'file', mode: 0o644, uid: 1000, gid: 1000, size: Buffer.byteLength(content), sha256: sha(content) });
const dir = (path: string): ManifestEntry => ({ path, type: 'dir', mode: 0o755, uid: 1000, gid: 1000 });
const manifest = (...entries: ManifestEntry[]): Manifest => sortManifest({ entries, root: { mode: 0o755, uid: 1000, gid: 1000 } });
const D = (c: string): string => `sha256:${c.repeat(64)}`;

/** A candidate of Root "repo" on base generation 1: src/b.txt rewritten, docs/new.md added. */
async function original(top: string, baseDigest: string): Promise<{ candidates: string; digest: string; change: (base: string, gen: number) => RootChange }> {
  const upper = join(top, 'upper');
  mkdirSync(join(upper, 'src'), { recursive: true });
  mkdirSync(join(upper, 'docs'), { recursive: true });
  writeFileSync(join(upper, 'src', 'b.txt'), 'bravo 2\n');
  writeFileSync(join(upper, 'docs', 'new.md'), '# new\n');
  const upsert = [dir('docs'), file('docs/new.md', '# new\n'), file('src/b.txt', 'bravo 2\n')];
  const change = (base: string, gen: number): RootChange => ({
    root: 'repo',
    rootKey: 'k-repo',
    baseGeneration: gen,
    baseDigest: base,
    upperDir: upper,
    capture: { upsert, deleted: ['old.txt'], rootChanged: false, added: 2, modified: 1, upperFiles: ['docs/new.md', 'src/b.txt'], problems: [] },
  });
  const candidates = join(top, 'candidates');
  mkdirSync(candidates);
  const c = await storeCandidate(candidates, [change(baseDigest, 1)]);
  return { candidates, digest: c.digest, change };
}

const base = manifest(dir('src'), file('src/a.txt', 'alpha\n'), file('src/b.txt', 'bravo\n'), file('old.txt', 'old\n'));

test('a candidate rebased onto a PRIME that changed other paths: same bytes, new identity, its origin recorded', async (t) => {
  requireRoot('the rebased candidate (stored files keep their owners)');
  const top = mkdtempSync(join(tmpdir(), 'wl-rebase-'));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const o = await original(top, D('a'));
  const prime = manifest(dir('src'), file('src/a.txt', 'alpha 2\n'), file('src/b.txt', 'bravo\n'), file('old.txt', 'old\n'), file('other.txt', 'o\n'));
  const targets = new Map<string, RebaseTarget>([['k-repo', { generation: 2, digest: D('b'), base, prime }]]);
  const r = storeRebasedCandidate(o.candidates, o.digest, targets);
  assert.notEqual(r.digest, o.digest);
  // The identity is the one a capture of the same change on generation 2 would have had.
  assert.equal(r.digest, digestOf(candidateIdentity([o.change(D('b'), 2)])));
  const stored = readCandidate(r.dir);
  assert.equal(stored.digest, r.digest);
  const delta = stored.deltas.get('k-repo');
  assert.equal(delta?.baseGeneration, 2);
  assert.equal(delta?.baseDigest, D('b'));
  assert.deepEqual(delta?.deleted, ['old.txt']);
  // Same inodes: nothing was copied.
  const was = join(o.candidates, o.digest.slice(7), 'roots', 'k-repo', 'src', 'b.txt');
  assert.equal(statSync(join(r.dir, 'roots', 'k-repo', 'src', 'b.txt')).ino, statSync(was).ino);
  assert.equal(readFileSync(join(r.dir, 'roots', 'k-repo', 'docs', 'new.md'), 'utf8'), '# new\n');
  assert.deepEqual(JSON.parse(readFileSync(join(r.dir, 'rebase.json'), 'utf8')), { format: 'worldline.rebase/v1', from: o.digest, onto: [{ root: 'repo', generation: 2, digest: D('b') }] });
  // Idempotent.
  assert.deepEqual(storeRebasedCandidate(o.candidates, o.digest, targets), r);
});

test('PRIME changed a path the candidate changed, or deleted its directory: CONFLICT names Root and paths, nothing is stored', async (t) => {
  requireRoot('the rebased candidate (stored files keep their owners)');
  const top = mkdtempSync(join(tmpdir(), 'wl-rebase-'));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const o = await original(top, D('a'));
  const prime = manifest(dir('src'), file('src/a.txt', 'alpha\n'), file('src/b.txt', 'bravo from PRIME\n'), file('old.txt', 'old\n'), dir('docs'));
  const targets = new Map<string, RebaseTarget>([['k-repo', { generation: 3, digest: D('c'), base, prime }]]);
  const before = new Set(readdirSync(o.candidates));
  assert.throws(() => storeRebasedCandidate(o.candidates, o.digest, targets), (e: unknown) => e instanceof Refusal && e.code === 'CONFLICT' && /repo\/docs, repo\/docs\/new\.md, repo\/src\/b\.txt$/.test(e.message));
  assert.deepEqual(new Set(readdirSync(o.candidates)), before);
  // A Root with no generation to go to is refused by name too.
  assert.throws(() => storeRebasedCandidate(o.candidates, o.digest, new Map()), /no generation to rebase Root repo onto/);
});


test('rebaseOnto: a rebase of the same change names its new bases; another change, the same candidate or a missing one is no rebase', async (t) => {
  requireRoot('the rebased candidate (stored files keep their owners)');
  const top = mkdtempSync(join(tmpdir(), 'wl-rebase-'));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const o = await original(top, D('a'));
  const prime = manifest(dir('src'), file('src/a.txt', 'alpha 2\n'), file('src/b.txt', 'bravo\n'), file('old.txt', 'old\n'));
  const r = storeRebasedCandidate(o.candidates, o.digest, new Map([['k-repo', { generation: 2, digest: D('b'), base, prime }]]));
  assert.deepEqual(rebaseOnto(o.candidates, r.digest, o.digest), new Map([['k-repo', { root: 'repo', generation: 2, digest: D('b') }]]));
  assert.equal(rebaseOnto(o.candidates, o.digest, o.digest), undefined, 'a candidate is not a rebase of itself');
  assert.equal(rebaseOnto(o.candidates, D('e'), o.digest), undefined, 'nothing stored under that digest');
  // Another change on the same base (one more deletion) is not a rebase of the original, whatever rebase.json says.
  const other = await storeCandidate(o.candidates, [{ ...o.change(D('a'), 1), capture: { ...o.change(D('a'), 1).capture, deleted: ['old.txt', 'src/a.txt'] } }]);
  assert.equal(rebaseOnto(o.candidates, other.digest, o.digest), undefined);
  writeFileSync(join(other.dir, 'rebase.json'), JSON.stringify({ format: 'worldline.rebase/v1', from: o.digest, onto: [] }));
  assert.equal(rebaseOnto(o.candidates, other.digest, o.digest), undefined);
});
