// The kept user namespaces of idmapped lowers (node-agent/sandbox/idmap-namespace.ts): one per id range,
// made once, and a kept one still maps exactly as a new one of the same range — an idmapped mount made
// through it on a later use shows the same owners as one made through a fresh namespace.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, closeSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AT_FDCWD, createUserNamespace, mountIdmapped, statx } from '../../native/index.js';
import { idMap, withIdmapNamespace } from '../../node-agent/sandbox/idmap-namespace.js';
import { Cleanup } from './native-fixtures.js';

const cleanup = new Cleanup();
after(() => cleanup.run());
const base = cleanup.tempDir('idmap-kept');
const lower = join(base, 'lower');
mkdirSync(lower);
writeFileSync(join(lower, 'owned'), 'x');
chownSync(join(lower, 'owned'), 1000, 1001);

/** The owner of `owned` seen through an idmapped read-only bind of `lower` made with `userns`. */
function ownerThrough(userns: number, name: string): { uid: number; gid: number } {
  const target = join(base, name);
  mkdirSync(target);
  mountIdmapped(lower, target, userns, { readonly: true, recursive: false });
  cleanup.mounted(target);
  const sx = statx(AT_FDCWD, join(target, 'owned'), 0);
  return { uid: sx.uid, gid: sx.gid };
}

test('one namespace per id range, made once; a kept one maps as a fresh one does', () => {
  const a = withIdmapNamespace(300000, 65536, (fd) => ({ fd, ns: readlinkSync(`/proc/self/fd/${fd}`), owner: ownerThrough(fd, 'first') }));
  assert.match(a.ns, /^user:\[\d+\]$/);
  assert.notEqual(a.ns, readlinkSync('/proc/self/ns/user'));
  assert.match(readFileSync(`/proc/self/fdinfo/${a.fd}`, 'utf8'), /flags:\s+0[0-7]*2[0-7]{6}\n/, 'O_CLOEXEC: never inherited by a sandbox');
  assert.deepEqual(a.owner, { uid: 301000, gid: 301001 }, 'host 1000:1001 seen through the map');

  const again = withIdmapNamespace(300000, 65536, (fd) => ({ fd, ns: readlinkSync(`/proc/self/fd/${fd}`), owner: ownerThrough(fd, 'again') }));
  assert.equal(again.fd, a.fd, 'the same descriptor, kept open');
  assert.equal(again.ns, a.ns, 'the same namespace');
  assert.deepEqual(again.owner, a.owner);

  const fresh = createUserNamespace(idMap(300000, 65536), idMap(300000, 65536));
  try {
    assert.deepEqual(ownerThrough(fresh, 'fresh'), a.owner, 'a new namespace of the range maps the same');
  } finally {
    closeSync(fresh);
  }

  const other = withIdmapNamespace(400000, 65536, (fd) => ({ ns: readlinkSync(`/proc/self/fd/${fd}`), owner: ownerThrough(fd, 'other') }));
  assert.notEqual(other.ns, a.ns, 'another range, another namespace');
  assert.deepEqual(other.owner, { uid: 401000, gid: 401001 });
});
