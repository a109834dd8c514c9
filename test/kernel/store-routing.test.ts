import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rename, rm, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { MNT_DETACH, umount2 } from '../../native/index.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import type { Store } from '../../node-agent/store/open-store.js';
import { checkRouting, primePath } from '../../node-agent/store/routing.js';
import { StoreError } from '../../node-agent/store/store-errors.js';
import { makeSampleTree, openTestStore, scratch } from './store-fixtures.js';

interface Case {
  name: string;
  /** Breaks one hop of the route; `host` is the adopted host path, `payload` PRIME's payload dir. */
  breakIt: (store: Store, host: string, payload: string, scratchDir: string) => Promise<void>;
  mentions: string;
}

const cases: Case[] = [
  {
    name: 'host link repointed elsewhere',
    mentions: 'points to',
    breakIt: async (_store, host, _payload, dir) => {
      await mkdir(join(dir, 'decoy'));
      await unlink(host);
      await symlink(join(dir, 'decoy'), host);
    },
  },
  {
    name: 'host link pointed at the payload directly, bypassing live/',
    mentions: 'points to',
    breakIt: async (_store, host, payload) => {
      await unlink(host);
      await symlink(payload, host);
    },
  },
  {
    name: 'host path replaced by a directory',
    mentions: 'is not a symlink',
    breakIt: async (_store, host) => {
      await unlink(host);
      await mkdir(host);
    },
  },
  {
    name: 'live/<root key> replaced by a directory',
    mentions: 'is not a symlink',
    breakIt: async (store) => {
      await unlink(join(store.dir, 'live', 'project'));
      await mkdir(join(store.dir, 'live', 'project'));
    },
  },
  {
    name: 'live/ replaced by an empty directory',
    mentions: 'is not a symlink',
    breakIt: async (store, _host, _payload, dir) => {
      await rename(join(store.dir, 'live'), join(dir, 'old-live'));
      await mkdir(join(store.dir, 'live'), { mode: 0o700 });
    },
  },
  {
    name: 'payload swapped for another directory under the same name',
    mentions: 'device:inode',
    breakIt: async (_store, _host, payload, dir) => {
      umount2(payload, MNT_DETACH); // root can take the seal off first (limit 9)
      await rename(payload, join(dir, 'stolen-payload'));
      await mkdir(payload);
    },
  },
  {
    name: 'generation directory replaced by a link to a copy',
    mentions: 'is not a directory',
    breakIt: async (_store, _host, payload, dir) => {
      const gen = join(payload, '..');
      await rename(gen, join(dir, 'gen-copy'));
      await symlink(join(dir, 'gen-copy'), gen);
    },
  },
  {
    name: 'live link pointed at another generation',
    mentions: 'not to generation',
    breakIt: async (store) => {
      await mkdir(join(store.dir, 'generations', 'project_g2_0000000000000000', 'payload'), { recursive: true });
      await unlink(join(store.dir, 'live', 'project'));
      await symlink('../generations/project_g2_0000000000000000/payload', join(store.dir, 'live', 'project'));
    },
  },
  {
    name: 'marker removed',
    mentions: 'marker',
    breakIt: async (_store, _host, payload) => rm(join(payload, '..', 'marker.json')),
  },
];

for (const c of cases) {
  test(`LIVE_MAPPING_BROKEN: ${c.name}`, async (t) => {
    const s = await scratch(t);
    const store = await openTestStore(t, join(s.dir, 'store'));
    const host = join(s.dir, 'project');
    await makeSampleTree(host);
    await adoptRoot(store, { name: 'project', hostPath: host });
    const payload = await primePath(store, 'project');
    await c.breakIt(store, host, payload, s.dir);
    const calls = [() => checkRouting(store, 'project'), () => primePath(store, 'project'), () => adoptRoot(store, { name: 'project', hostPath: host })];
    for (const call of calls) {
      await assert.rejects(call(), (e: unknown) => {
        assert.ok(e instanceof StoreError, String(e));
        assert.equal(e.code, 'LIVE_MAPPING_BROKEN');
        assert.ok(e.message.includes(c.mentions), e.message);
        return true;
      });
    }
  });
}

test('ROOT_NOT_FOUND for a root the store does not hold', async (t) => {
  const s = await scratch(t);
  const store = await openTestStore(t, join(s.dir, 'store'));
  await assert.rejects(checkRouting(store, 'nope'), (e: unknown) => e instanceof StoreError && e.code === 'ROOT_NOT_FOUND');
});
