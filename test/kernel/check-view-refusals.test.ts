// Building a check's view of a candidate refuses by name what it cannot build faithfully: a bound verifier
// that is not a regular file in PRIME (VERIFIER_STAGING_FAILED: it was deleted or replaced by a link
// outside any collapse), and a candidate entry whose parent directory is in neither the candidate nor its
// base (CHECK_VIEW_FAILED: the view would have to make up that directory's owner and mode). Real
// directories with real owners (as root); the same steps the check reconciler takes (materialize.ts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../../core/digest.js';
import type { ManifestEntry } from '../../core/manifest.js';
import { buildDeltaLayer, CheckSetupError, stageVerifiers, type CheckRoot } from '../../node-agent/checks/materialize.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the check view refusal tests (files owned by the Root\'s owner)');

const OWNER = 1000;
const dir = mkdtempSync(join(tmpdir(), 'wl-check-view-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;

function ownedDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o755 });
  chownSync(path, OWNER, OWNER);
}

function ownedFile(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o755 });
  chownSync(path, OWNER, OWNER);
}

/** A base payload with checks/verify.sh, and a PRIME payload shaped by `prime`. */
function roots(prime: (payload: string) => void, delta: CheckRoot['delta'] = null): { root: CheckRoot; work: string } {
  const work = join(dir, `case-${seq++}`);
  const base = join(work, 'base');
  ownedDir(join(base, 'checks'));
  ownedFile(join(base, 'checks', 'verify.sh'), '#!/bin/sh\nexit 0\n');
  const primePayload = join(work, 'prime');
  ownedDir(primePayload);
  prime(primePayload);
  return { root: { name: 'proj', rootKey: 'rk', path: '/work/proj', basePayload: base, primePayload, bound: ['checks/verify.sh'], delta }, work };
}

const refusedWith = (code: string, pattern: RegExp) => (e: unknown) => e instanceof CheckSetupError && e.code === code && pattern.test(e.message);

test('a bound verifier present in PRIME is staged with PRIME\'s bytes and owner', () => {
  const { root, work } = roots((p) => {
    ownedDir(join(p, 'checks'));
    ownedFile(join(p, 'checks', 'verify.sh'), '#!/bin/sh\necho prime\n');
  });
  const staged = stageVerifiers(root, join(work, 'staging'));
  assert.deepEqual(staged, [{ path: 'proj/checks/verify.sh', sha256: sha256Hex(Buffer.from('#!/bin/sh\necho prime\n')) }]);
  assert.equal(readFileSync(join(work, 'staging', 'checks', 'verify.sh'), 'utf8'), '#!/bin/sh\necho prime\n');
  assert.equal(lstatSync(join(work, 'staging', 'checks', 'verify.sh')).uid, OWNER);
});

test('a bound verifier deleted from PRIME is VERIFIER_STAGING_FAILED', () => {
  const { root, work } = roots((p) => ownedDir(join(p, 'checks')));
  assert.throws(() => stageVerifiers(root, join(work, 'staging')), refusedWith('VERIFIER_STAGING_FAILED', /verifier checks\/verify\.sh is not a regular file in PRIME of root proj/));
  assert.equal(existsSync(join(work, 'staging', 'checks', 'verify.sh')), false, 'nothing was staged in its place');
});

test('a bound verifier replaced by a link in PRIME is VERIFIER_STAGING_FAILED, and the link target is not staged', () => {
  const { root, work } = roots((p) => {
    ownedDir(join(p, 'checks'));
    writeFileSync(join(p, '..', 'elsewhere.sh'), '#!/bin/sh\necho not the verifier\n');
    symlinkSync(join(p, '..', 'elsewhere.sh'), join(p, 'checks', 'verify.sh'));
  });
  assert.throws(() => stageVerifiers(root, join(work, 'staging')), refusedWith('VERIFIER_STAGING_FAILED', /not a regular file in PRIME/));
  assert.equal(existsSync(join(work, 'staging', 'checks', 'verify.sh')), false);
});

function fileEntry(path: string, content: string): ManifestEntry {
  return { path, type: 'file', mode: 0o644, uid: OWNER, gid: OWNER, size: Buffer.byteLength(content), sha256: sha256Hex(Buffer.from(content)) };
}

/** A stored candidate directory holding `fresh/new.txt` for root key rk. */
function candidateWithNewFile(work: string): string {
  const candidate = join(work, 'candidate');
  mkdirSync(join(candidate, 'roots', 'rk', 'fresh'), { recursive: true });
  writeFileSync(join(candidate, 'roots', 'rk', 'fresh', 'new.txt'), 'new\n');
  return candidate;
}

test('a candidate file under a directory the candidate records is laid out with that directory\'s owner and mode', async () => {
  const dirEntry: ManifestEntry = { path: 'fresh', type: 'dir', mode: 0o750, uid: OWNER, gid: OWNER };
  const delta = { format: 'worldline.delta/v1' as const, root: 'proj', baseGeneration: 1, baseDigest: 'sha256:b', upsert: [dirEntry, fileEntry('fresh/new.txt', 'new\n')], deleted: [] };
  const { root, work } = roots(() => undefined, delta);
  await buildDeltaLayer(root, candidateWithNewFile(work), join(work, 'delta'));
  const st = lstatSync(join(work, 'delta', 'fresh'));
  assert.deepEqual([st.mode & 0o7777, st.uid], [0o750, OWNER]);
  assert.equal(readFileSync(join(work, 'delta', 'fresh', 'new.txt'), 'utf8'), 'new\n');
});

test('a candidate file under a directory in neither the candidate nor its base is CHECK_VIEW_FAILED', async () => {
  const delta = { format: 'worldline.delta/v1' as const, root: 'proj', baseGeneration: 1, baseDigest: 'sha256:b', upsert: [fileEntry('fresh/new.txt', 'new\n')], deleted: [] };
  const { root, work } = roots(() => undefined, delta);
  await assert.rejects(buildDeltaLayer(root, candidateWithNewFile(work), join(work, 'delta')), refusedWith('CHECK_VIEW_FAILED', /directory fresh of root proj is in neither the candidate nor its base/));
  assert.equal(existsSync(join(work, 'delta', 'fresh')), false, 'no directory was made up');
});
