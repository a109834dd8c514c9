// A Root object is bound to the store's record of its root by uid and path, on a real stack (kube-apiserver
// + etcd, controller, node-agent as root). Deleting a Root with spec.onDelete KeepAdopted leaves its directory
// adopted in the store (root-release.test.ts covers the default, Release); a new
// Root of the same name is another object: at the same path it is refused ROOT_REPLACED, at another path
// ROOT_PATH_MISMATCH, by name, and is never Ready over the old directory. PRIME, the store and both host
// paths stay as they were (the old path still links into the store). A record from before the store kept
// uids takes the uid of the object that reconciles it, once, and says so in the agent's log.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startStack, type Stack } from '../support/stack.js';
import { kc } from '../support/wait.js';
import { applyRoot, hashTree, ownedDir, ownedFile, rootKeyOf, storeSnapshot } from '../support/worlds.js';

describe('a Root replaced by another object of its name', () => {
  let s: Stack;
  let dir: string;
  let firstUid: string;

  before(async () => {
    s = await startStack({ nodeName: 'replace-node' });
    dir = join(s.scratch, 'replaced');
    ownedDir(dir);
    ownedFile(join(dir, 'README.md'), 'the adopted content\n');
    ownedFile(join(dir, 'private'), 'owner only\n', 1000, 0o600);
    const root = await applyRoot(s, 'replaced', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    firstUid = root.metadata.uid;
    await kc(s.cp, ['patch', 'root', 'replaced', '--type=merge', '-p', JSON.stringify({ spec: { onDelete: 'KeepAdopted' } })]);
  });

  after(async () => {
    await s?.stop();
  });

  /** Deletes the Root object and waits until the apiserver no longer has it. */
  const deleteRoot = async (name: string): Promise<void> => {
    await kc(s.cp, ['delete', 'root', name, '--wait=true']);
    await s.waitFor(`Root ${name} gone`, async () => ((await s.get('root', name)) === undefined ? true : undefined));
  };

  /** What must not move while a replacement is refused: the host link, PRIME's bytes, the store's trees. */
  const untouched = () => ({ link: readlinkSync(dir), prime: realpathSync(dir), primeHash: hashTree(dir), store: storeSnapshot(s.storeDir) });

  test('a record from before uids were kept takes this object uid once, logged, and stays Ready', async () => {
    await s.restartAgent({
      signal: 'SIGTERM',
      between: () => {
        const db = new Database(join(s.storeDir, 'state.db'));
        try {
          assert.equal(db.prepare('UPDATE roots SET object_uid = NULL WHERE name = ?').run('replaced').changes, 1);
        } finally {
          db.close();
        }
      },
    });
    await s.agent.waitForLog((r) => r.msg === 'root record from before uids were kept now bound to this Root object' && r['root'] === 'replaced' && r['uid'] === firstUid);
    const root = await s.waitFor('Root replaced Ready after the restart', async () => {
      const r = await s.get('root', 'replaced');
      return r?.status?.phase === 'Ready' ? r : undefined;
    });
    assert.equal(root.metadata.uid, firstUid);
    // That the uid was recorded, not only logged, shows below: a NULL record would take the next object's uid.
  });

  test('recreated at the same path: ROOT_REPLACED naming both uids; nothing moves', async () => {
    const before = untouched();
    assert.ok(lstatSync(dir).isSymbolicLink(), 'the adopted path links into the store');
    await deleteRoot('replaced');
    assert.deepEqual(untouched(), before, 'deleting the Root object moved nothing');

    const root = await applyRoot(s, 'replaced', dir);
    const secondUid = root.metadata.uid as string;
    assert.notEqual(secondUid, firstUid);
    assert.equal(root.status.phase, 'Broken', JSON.stringify(root.status));
    assert.equal(root.status.reason, 'ROOT_REPLACED', root.status.message);
    for (const part of [firstUid, secondUid, dir]) assert.ok(root.status.message.includes(part), `the refusal names ${part}: ${root.status.message}`);
    assert.equal(root.status.generation, undefined, 'no generation is reported for a refused Root');
    assert.deepEqual(untouched(), before, 'the refusal moved nothing');
    assert.equal(readlinkSync(dir), join(s.storeDir, 'live', `${rootKeyOf(dir)}_view`), 'the host path still routes through the store');

  });

  test('recreated at another path: ROOT_PATH_MISMATCH naming both paths; neither path moves', async () => {
    const before = untouched();
    await deleteRoot('replaced');
    const other = join(s.scratch, 'elsewhere');
    ownedDir(other);
    ownedFile(join(other, 'new.txt'), 'never adopted\n');
    const otherHash = hashTree(other);

    const root = await applyRoot(s, 'replaced', other);
    assert.equal(root.status.phase, 'Broken', JSON.stringify(root.status));
    assert.equal(root.status.reason, 'ROOT_PATH_MISMATCH', root.status.message);
    for (const part of [dir, other, root.metadata.uid as string]) assert.ok(root.status.message.includes(part), `the refusal names ${part}: ${root.status.message}`);
    assert.ok(lstatSync(other).isDirectory(), 'the new path is still a plain directory');
    assert.equal(hashTree(other), otherHash, 'the new path is untouched');
    assert.deepEqual(untouched(), before, 'the old path, PRIME and the store are untouched');
  });
});
