import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../node-agent/store/open-store.js';
import { StoreError } from '../../node-agent/store/store-errors.js';
import { scratch } from './store-fixtures.js';

const child = fileURLToPath(new URL('./store-child.js', import.meta.url));

/** Open the store from another process; its one line of JSON output. */
function openElsewhere(dir: string): Promise<{ ok?: boolean; code?: string; message?: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [child, 'open', dir], (_err, stdout) => resolve(JSON.parse(stdout)));
  });
}

test('a second process cannot open a store that is open', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const { store } = await openStore({ dir });
  const refused = await openElsewhere(dir);
  assert.equal(refused.code, 'STORE_LOCKED');
  assert.ok(refused.message?.includes(store.dir), refused.message);

  store.close();
  assert.deepEqual(await openElsewhere(dir), { ok: true }, 'the lock goes with the holder');
});

test('a second open in the same process is refused as well', async (t) => {
  const s = await scratch(t);
  const dir = join(s.dir, 'store');
  const { store } = await openStore({ dir });
  t.after(() => store.close());
  await assert.rejects(openStore({ dir }), (e: unknown) => e instanceof StoreError && e.code === 'STORE_LOCKED');
});
