// Idmapped lower layers (DESIGN §5 "Identities inside a world"): a user namespace fd from
// createUserNamespace, an idmapped read-only bind of the lower layer, an overlay over it, and a sandbox
// with the same map: a file owned by host uid 1000 appears as 1000 inside, and a write by uid 1000 lands
// in upper owned by host 201000 while lower stays unchanged.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, closeSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AT_FDCWD, createUserNamespace, mountIdmapped, mountOverlay, statx } from '../../native/index.js';
import { Cleanup, WORLD_MAP, buildRootfs, run, sandboxOptions } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('idmap');

test('createUserNamespace returns a user namespace fd with the map; host id 0 is refused', () => {
  const fd = createUserNamespace(WORLD_MAP, WORLD_MAP);
  try {
    assert.match(readlinkSync(`/proc/self/fd/${fd}`), /^user:\[\d+\]$/);
    assert.notEqual(readlinkSync(`/proc/self/fd/${fd}`), readlinkSync('/proc/self/ns/user'));
    assert.match(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'), /flags:\s+0[0-7]*2[0-7]{6}\n/, 'O_CLOEXEC');
  } finally {
    closeSync(fd);
  }
  assert.throws(() => createUserNamespace([{ inside: 0, outside: 0, count: 65536 }], WORLD_MAP), { code: 'ERR_INVALID_ARG_VALUE', message: /host id 0/ });
  assert.throws(() => createUserNamespace(WORLD_MAP, []), { code: 'ERR_INVALID_ARG_VALUE' });
});

test('idmapped lower + overlay + sandbox: owners translate both ways, lower unchanged', async () => {
  const lower = join(base, 'lower');
  const mapped = join(base, 'lower-mapped');
  const upper = join(base, 'upper');
  const work = join(base, 'work');
  for (const d of [lower, mapped, upper, work]) mkdirSync(d);
  writeFileSync(join(lower, 'owned'), 'lower\n', { mode: 0o644 });
  chownSync(join(lower, 'owned'), 1000, 1000);
  chownSync(lower, 1000, 1000);
  chownSync(upper, 201000, 201000); // the merged root takes upper's owner: uid 1000 inside

  const userns = createUserNamespace(WORLD_MAP, WORLD_MAP);
  try {
    mountIdmapped(lower, mapped, userns, { readonly: true, recursive: false });
  } finally {
    closeSync(userns);
  }
  cleanup.mounted(mapped);
  const sx = statx(AT_FDCWD, join(mapped, 'owned'), 0);
  assert.equal(sx.uid, 201000, 'host 1000 seen through the idmapped mount is 201000');
  assert.equal(sx.gid, 201000);
  assert.throws(() => writeFileSync(join(mapped, 'owned'), 'x'), { code: 'EROFS' });

  const rootfs = buildRootfs(base, cleanup);
  mountOverlay(join(rootfs, 'work'), { lower: [mapped], upper, work });
  cleanup.mounted(join(rootfs, 'work'));

  const r = await run(
    sandboxOptions(rootfs, 'stat -c %u:%g /work/owned; echo more >> /work/owned; echo new > /work/new; stat -c %u:%g /work/new; cat /work/owned', {
      cwd: '/work',
    }),
  );
  assert.deepEqual(r.exit, { code: 0, signal: null }, r.stderr);
  assert.equal(r.stdout, '1000:1000\n1000:1000\nlower\nmore\n');

  const up = statSync(join(upper, 'owned'));
  assert.equal(up.uid, 201000, 'copy-up keeps the mapped owner');
  assert.equal(readFileSync(join(upper, 'owned'), 'utf8'), 'lower\nmore\n');
  assert.equal(statSync(join(upper, 'new')).uid, 201000, 'a new file by uid 1000 is host 201000 in upper');
  assert.equal(statSync(join(upper, 'new')).gid, 201000);
  const low = statSync(join(lower, 'owned'));
  assert.equal(readFileSync(join(lower, 'owned'), 'utf8'), 'lower\n', 'lower unchanged');
  assert.equal(low.uid, 1000);
});
