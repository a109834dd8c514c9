import { test } from 'node:test';
import assert from 'node:assert/strict';
import { link, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { closeSync, constants, lstatSync, openSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sha256Hex } from '../../core/digest.js';
import { manifestDigest, validateManifest } from '../../core/manifest.js';
import { walkTree, walkTreeDigests, walkTrees } from '../../node-agent/store/walk-tree.js';
import { walkTreeSync, type KnownHash } from '../../node-agent/store/walk-tree-sync.js';
import { hashFileSync, hashOpenFileOfSize } from '../../node-agent/store/hash-file.js';
import { forceBeneathFallback } from '../../native/index.js';
import { makeSampleTree, scratch } from './store-fixtures.js';

const execFileP = promisify(execFile);

test('walk: a valid manifest, the same from the worker and in-thread', async (t) => {
  const s = await scratch(t);
  await makeSampleTree(s.dir);
  const viaWorker = await walkTree(s.dir);
  const inThread = walkTreeSync(s.dir);
  assert.deepEqual(viaWorker.manifest, inThread.manifest);
  assert.deepEqual(viaWorker.problems, []);
  assert.deepEqual(validateManifest(viaWorker.manifest), []);
  const byPath = new Map(viaWorker.manifest.entries.map((e) => [e.path, e]));
  assert.equal(byPath.get('tool')?.mode, 0o4755);
  assert.equal(byPath.get('shared')?.mode, 0o1777);
  assert.equal(byPath.get('src/owned')?.uid, 1000);
  assert.equal(byPath.get('src/lib/up-link')?.target, '../main.ts');
  assert.equal(byPath.get('README.md')?.sha256, sha256Hex('# sample\n'));
  assert.equal(byPath.get('README.md')?.size, 9);
  assert.equal(viaWorker.manifest.root?.mode, 0o750);
});

test('walk: hardlinks that stay inside the root are accepted', async (t) => {
  const s = await scratch(t);
  await writeFile(join(s.dir, 'a'), 'x');
  await mkdir(join(s.dir, 'd'));
  await link(join(s.dir, 'a'), join(s.dir, 'd/b'));
  const w = await walkTree(s.dir);
  assert.deepEqual(w.problems, []);
  assert.equal(w.manifest.entries.filter((e) => e.type === 'file').length, 2);
});

test('walk: every problem is reported, sorted, with its path', async (t) => {
  const s = await scratch(t);
  await writeFile(join(s.dir, 'outside'), 'x');
  const root = join(s.dir, 'root');
  await mkdir(root);
  await symlink('/etc', join(root, 'b-abs'));
  await link(join(s.dir, 'outside'), join(root, 'a-hard'));
  await symlink('../..', join(root, 'c-up'));
  const w = await walkTree(root);
  assert.deepEqual(w.problems.map((p) => [p.path, p.code]), [
    ['a-hard', 'EXTERNAL_HARDLINK'],
    ['b-abs', 'EXTERNAL_SYMLINK'],
    ['c-up', 'EXTERNAL_SYMLINK'],
  ]);
  // Refused links are not measured; a hardlinked file is (its link count is judged after the walk).
  assert.deepEqual(w.manifest.entries.map((e) => e.path), ['a-hard']);
});

test('walk: sharedWithinStore lifts EXTERNAL_HARDLINK for store payloads only, never for other trees', async (t) => {
  const s = await scratch(t);
  const store = join(s.dir, 'store');
  const gen1 = join(store, 'generations', 'g1', 'payload');
  const gen2 = join(store, 'generations', 'g2', 'payload');
  const host = join(s.dir, 'host');
  for (const d of [gen1, gen2, host]) await mkdir(d, { recursive: true });
  await writeFile(join(gen1, 'shared'), 'x');
  await link(join(gen1, 'shared'), join(gen2, 'shared'));
  await link(join(gen1, 'shared'), join(host, 'shared'));
  const codes = async (path: string, o: { sharedWithinStore?: string } = {}): Promise<string[]> => (await walkTree(path, o)).problems.map((p) => p.code);
  assert.deepEqual(await codes(gen2), ['EXTERNAL_HARDLINK']);
  assert.deepEqual(await codes(gen2, { sharedWithinStore: store }), []);
  // A host directory (adoption) is judged as before, whatever the option says.
  assert.deepEqual(await codes(host, { sharedWithinStore: store }), ['EXTERNAL_HARDLINK']);
});

test('walk: a file swapped for a link between lstat and open is caught', async (t) => {
  const s = await scratch(t);
  await writeFile(join(s.dir, 'secret'), 'outside');
  const root = join(s.dir, 'root');
  await mkdir(root);
  await writeFile(join(root, 'f'), 'inside');
  const w = walkTreeSync(root, {
    afterLstat: (rel) => {
      if (rel !== 'f') return;
      renameSync(join(root, 'f'), join(s.dir, 'f-was'));
      symlinkSync(join(s.dir, 'secret'), join(root, 'f'));
    },
  });
  assert.deepEqual(w.problems.map((p) => [p.path, p.code]), [['f', 'CHANGED_DURING_WALK']]);
});

for (const fallback of [false, true]) {
  const how = fallback ? 'the per-component O_NOFOLLOW fallback' : 'openat2 RESOLVE_NO_SYMLINKS';
  test(`walk: a parent directory swapped for a link is caught, though the file is the same inode (${how})`, async (t) => {
    const s = await scratch(t);
    const root = join(s.dir, 'root');
    await mkdir(join(root, 'd'), { recursive: true });
    await writeFile(join(root, 'd/f'), 'inside');
    forceBeneathFallback(fallback);
    t.after(() => forceBeneathFallback(false));
    const w = walkTreeSync(root, {
      afterLstat: (rel) => {
        if (rel !== 'd/f') return;
        // The path now goes through a link to outside the root; dev/ino of the file alone cannot tell.
        renameSync(join(root, 'd'), join(s.dir, 'd-was'));
        symlinkSync(join(s.dir, 'd-was'), join(root, 'd'));
      },
    });
    assert.deepEqual(w.problems.map((p) => [p.path, p.code]), [['d/f', 'CHANGED_DURING_WALK']]);
    assert.match(w.problems[0]!.message, /beneath the root \(ELOOP\)/, `refused on the way to the file (${how})`);
  });
}

test('walk: a walk in its worker thread prints nothing (no fd warnings for the files it opens beneath the root)', async (t) => {
  // Node warns on stderr when a worker closes, through fs, an fd its fs did not open; the walk opens
  // files through the addon, so it must close them there too.
  const s = await scratch(t);
  await makeSampleTree(s.dir);
  const walker = new URL('../../node-agent/store/walk-tree.js', import.meta.url).href;
  const script = `const { walkTree } = await import(${JSON.stringify(walker)}); const w = await walkTree(${JSON.stringify(s.dir)}); console.log(w.manifest.entries.filter((e) => e.type === 'file').length);`;
  const file = join(s.dir, '..', `walk-${process.pid}.mjs`); // a file, not -e: the worker would inherit --input-type
  await writeFile(file, script);
  t.after(() => rm(file, { force: true }));
  const { stdout, stderr } = await execFileP(process.execPath, [file]);
  assert.ok(Number(stdout.trim()) > 0, `the walk hashed files: ${stdout}`);
  assert.equal(stderr, '');
});

test('walk: names that are not UTF-8 are refused by name', async (t) => {
  const s = await scratch(t);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(Buffer.concat([Buffer.from(`${s.dir}/`), Buffer.from([0x66, 0xff])]), 'x');
  const w = walkTreeSync(s.dir);
  assert.deepEqual(w.problems.map((p) => p.code), ['UNSUPPORTED_NAME']);
});

test('walk: files of every size around the read buffer hash to their content, and the hash stops at the size the lstat gave', async (t) => {
  const s = await scratch(t);
  const MiB = 1 << 20;
  const sizes = [0, 1, 4095, MiB - 1, MiB, MiB + 1, 2 * MiB + 3];
  const content = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 7) & 0xff));
  for (const n of sizes) await writeFile(join(s.dir, `f${n}`), content(n));
  const w = walkTreeSync(s.dir);
  assert.deepEqual(w.problems, []);
  for (const n of sizes) {
    const e = w.manifest.entries.find((x) => x.path === `f${n}`);
    assert.equal(e?.size, n);
    assert.equal(e?.sha256, sha256Hex(content(n)), `f${n}`);
  }
  assert.equal(w.bytes, sizes.reduce((a, b) => a + b, 0));
  // A file longer, or shorter, than its lstat said is not hashed as that size.
  const rootFd = openSync(s.dir, constants.O_RDONLY | constants.O_DIRECTORY);
  t.after(() => closeSync(rootFd));
  const buffer = Buffer.allocUnsafe(MiB);
  for (const n of [1, MiB, MiB + 1]) {
    const seen = lstatSync(join(s.dir, `f${n}`), { bigint: true });
    assert.deepEqual(hashFileSync(rootFd, `f${n}`, seen, buffer), { ok: true, sha256: sha256Hex(content(n)), size: n });
    for (const off of [-1n, 1n]) {
      const r = hashFileSync(rootFd, `f${n}`, { ...seen, size: seen.size + off }, buffer); // the fields it checks, one size off
      assert.equal(r.ok, false, `f${n} taken for ${seen.size + off} bytes`);
    }
  }
  // A file far longer than expected is not read on past the first byte beyond the expected end.
  const fd = openSync(join(s.dir, `f${2 * MiB + 3}`), constants.O_RDONLY);
  t.after(() => closeSync(fd));
  assert.equal(hashOpenFileOfSize(fd, buffer, 1).size, 2);
});

test('walk digest ignores timestamps', async (t) => {
  const s = await scratch(t);
  await makeSampleTree(s.dir);
  const d1 = manifestDigest(walkTreeSync(s.dir).manifest);
  const { utimes } = await import('node:fs/promises');
  await utimes(join(s.dir, 'README.md'), 1, 1);
  await rename(join(s.dir, 'empty'), join(s.dir, 'empty2'));
  await rename(join(s.dir, 'empty2'), join(s.dir, 'empty'));
  assert.equal(manifestDigest(walkTreeSync(s.dir).manifest), d1);
});

test('walk: trees walked together read a shared inode once; a write to it (new ctime) is read again', async (t) => {
  const s = await scratch(t);
  const a = join(s.dir, 'a');
  const b = join(s.dir, 'b');
  await mkdir(a);
  await mkdir(b);
  await writeFile(join(a, 'shared'), 'x'.repeat(4096));
  await link(join(a, 'shared'), join(b, 'shared'));
  await writeFile(join(b, 'own'), 'own bytes');

  const [wa, wb] = await walkTrees([a, b]);
  assert.equal(wa!.bytes, 4096);
  assert.equal(wb!.bytes, 9, 'only the file b does not share is read');
  assert.deepEqual(wb!.manifest, walkTreeSync(b).manifest, 'the shared hash is the one a fresh walk computes');

  // The digest-only walk: the same trees, the same sharing, each manifest's digest in place of its entries.
  const [da, db] = await walkTreeDigests([a, b]);
  assert.equal(da!.digest, manifestDigest(wa!.manifest));
  assert.equal(db!.digest, manifestDigest(wb!.manifest));
  assert.equal(db!.entries, wb!.manifest.entries.length);
  assert.equal(db!.bytes, 9, 'a digest-only walk reads a shared inode once too');
  assert.ok(!('manifest' in db!), 'no entries cross the thread boundary');
  await symlink('/etc/passwd', join(b, 'out'));
  const [, withProblem] = await walkTreeDigests([a, b]);
  assert.ok(withProblem!.problems.some((p) => p.code === 'EXTERNAL_SYMLINK' && p.path === 'out'), 'problems come back with the digest');
  assert.deepEqual(withProblem!.problems, walkTreeSync(b).problems);
  await rm(join(b, 'out'));

  const known = new Map<string, KnownHash>();
  walkTreeSync(a, { inodeHashes: known });
  await writeFile(join(a, 'shared'), 'y'.repeat(4096)); // same size; ctime (and mtime) move
  const again = walkTreeSync(b, { inodeHashes: known });
  assert.equal(again.bytes, 4096 + 9, 'the written inode is hashed again');
  assert.equal(again.manifest.entries.find((e) => e.path === 'shared')?.sha256, sha256Hex('y'.repeat(4096)));
});
