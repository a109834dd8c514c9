import { test } from 'node:test';
import assert from 'node:assert/strict';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { StoreError } from '../../node-agent/store/store-errors.js';
import { makeSampleTree, openTestStore, run, scratch, snapshotStore, snapshotTree, type Scratch } from './store-fixtures.js';

interface Case {
  name: string;
  code: string;
  /** Builds the host path to adopt (inside s.dir) and returns it. */
  setup: (s: Scratch) => Promise<string>;
  /** Text the refusal message must contain (the offending path, usually). */
  mentions?: string;
}

async function sample(s: Scratch): Promise<string> {
  const host = join(s.dir, 'project');
  await makeSampleTree(host);
  return host;
}

const cases: Case[] = [
  { name: 'missing path', code: 'ROOT_PATH_MISSING', setup: async (s) => join(s.dir, 'nope') },
  {
    name: 'a file, not a directory',
    code: 'ROOT_PATH_NOT_DIRECTORY',
    setup: async (s) => {
      await writeFile(join(s.dir, 'file'), 'x');
      return join(s.dir, 'file');
    },
  },
  {
    name: 'a link to a directory',
    code: 'ROOT_PATH_IS_LINK',
    setup: async (s) => {
      const real = await sample(s);
      await symlink(real, join(s.dir, 'alias'));
      return join(s.dir, 'alias');
    },
  },
  { name: 'absolute symlink', code: 'EXTERNAL_SYMLINK', mentions: 'src/abs', setup: async (s) => withEntry(s, (h) => symlink('/etc/passwd', join(h, 'src/abs'))) },
  { name: '.. escape', code: 'EXTERNAL_SYMLINK', mentions: 'src/up', setup: async (s) => withEntry(s, (h) => symlink('../../etc', join(h, 'src/up'))) },
  {
    name: 'name-then-.. (x -> ., y -> x/../..)',
    code: 'EXTERNAL_SYMLINK',
    mentions: 'src/y',
    setup: async (s) =>
      withEntry(s, async (h) => {
        await symlink('.', join(h, 'src/x'));
        await symlink('x/../..', join(h, 'src/y'));
      }),
  },
  {
    name: 'hardlink to a file outside',
    code: 'EXTERNAL_HARDLINK',
    mentions: 'src/shadow',
    setup: async (s) =>
      withEntry(s, async (h) => {
        await writeFile(join(s.dir, 'outside'), 'secret');
        await link(join(s.dir, 'outside'), join(h, 'src/shadow'));
      }),
  },
  { name: 'fifo', code: 'SPECIAL_FILE', mentions: 'pipe', setup: async (s) => withEntry(s, (h) => run('mkfifo', [join(h, 'pipe')])) },
  {
    name: 'socket',
    code: 'SPECIAL_FILE',
    mentions: 'sock',
    setup: async (s) => withEntry(s, (h) => run('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', join(h, 'sock')])),
  },
  { name: 'character device', code: 'SPECIAL_FILE', mentions: 'null', setup: async (s) => withEntry(s, (h) => run('mknod', [join(h, 'null'), 'c', '1', '3'])) },
  { name: 'tmpfs mounted inside', code: 'SPECIAL_FILE', mentions: 'src/mnt', setup: async (s) => withEntry(s, (h) => s.mountTmpfs(join(h, 'src/mnt'))) },
  {
    name: 'bind mount from the same filesystem',
    code: 'SPECIAL_FILE',
    mentions: 'bound',
    setup: async (s) =>
      withEntry(s, async (h) => {
        await mkdir(join(s.dir, 'elsewhere'));
        await mkdir(join(h, 'bound'));
        await run('mount', ['--bind', join(s.dir, 'elsewhere'), join(h, 'bound')]);
        s.track(join(h, 'bound'));
      }),
  },
  {
    name: 'the root itself is a mount point',
    code: 'ROOT_PATH_UNSUPPORTED',
    setup: async (s) => {
      await s.mountTmpfs(join(s.dir, 'mnt'));
      await writeFile(join(s.dir, 'mnt', 'f'), 'x');
      return join(s.dir, 'mnt');
    },
  },
  { name: 'the store inside the root', code: 'ROOT_PATH_UNSUPPORTED', setup: async (s) => s.dir },
];

async function withEntry(s: Scratch, add: (host: string) => Promise<unknown>): Promise<string> {
  const host = await sample(s);
  await add(host);
  return host;
}

for (const c of cases) {
  test(`refusal leaves host and store unchanged: ${c.name}`, async (t) => {
    const s = await scratch(t);
    const store = await openTestStore(t, join(s.dir, 'store'));
    const host = await c.setup(s);
    const hostBefore = c.code === 'ROOT_PATH_MISSING' ? undefined : snapshotTree(join(host, c.code === 'ROOT_PATH_NOT_DIRECTORY' ? '..' : ''));
    const storeBefore = snapshotStore(store);
    await assert.rejects(adoptRoot(store, { name: 'project', hostPath: host }), (e: unknown) => {
      assert.ok(e instanceof StoreError, String(e));
      assert.equal(e.code, c.code, e.message);
      if (c.mentions) assert.ok(e.message.includes(c.mentions), e.message);
      return true;
    });
    if (hostBefore) assert.deepEqual(snapshotTree(join(host, c.code === 'ROOT_PATH_NOT_DIRECTORY' ? '..' : '')), hostBefore);
    assert.deepEqual(snapshotStore(store), storeBefore);
  });
}
