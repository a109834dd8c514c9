// Snapshots on a real stack (issue 11, deliverables 3 and 4): while a World runs and another World's
// checkpoint exists, PRIME (the adopted tree, a full generation) is edited in place through the store's
// link to it in every way a file can be. Every edit is refused (the tree is sealed by a read-only bind
// mount of itself, node-agent/store/generation-stack.ts), the running World reads the bytes it forked from
// its first read to its last, the other World's change then commits onto PRIME as adopted, every
// generation of the Root still re-hashes to the digest recorded in its marker, and the checkpoint is
// returned to with its digest. Then the directory's owner edits it through its host path: the node-agent
// publishes the edit as the next generation (the Root's status shows it), a World captured before it is
// refused PRIME_MOVED.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, rename, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestDigest } from '../../core/manifest.js';
import { readMarker } from '../../node-agent/store/generation-marker.js';
import { layoutOf, payloadDir } from '../../node-agent/store/store-layout.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, describeRun, outputLogPath, runWorld, shWorld, worldManifest } from '../support/worlds.js';

const OWNER = 1000;

/** Every in-place edit of a tree, each a different system call on the way to its bytes, names or metadata. */
function edits(host: string): [string, () => Promise<unknown>][] {
  return [
    ['append to a file', () => appendFile(join(host, 'a.txt'), 'foreign\n')],
    ['overwrite a file', () => writeFile(join(host, 'b.txt'), 'replaced\n')],
    ['truncate a file', () => truncate(join(host, 'a.txt'), 0)],
    ['create a file', () => writeFile(join(host, 'new.txt'), 'x')],
    ['remove a file', () => unlink(join(host, 'b.txt'))],
    ['rename a file', () => rename(join(host, 'a.txt'), join(host, 'moved.txt'))],
    ['make a directory', () => mkdir(join(host, 'dir'))],
    ['write inside a directory', () => writeFile(join(host, 'sub/c.txt'), 'replaced\n')],
    ['change a mode', () => chmod(join(host, 'a.txt'), 0o777)],
    ['change an owner', () => chown(join(host, 'a.txt'), 4242, 4242)],
    ['make a symlink', () => symlink('/etc/shadow', join(host, 'link'))],
  ];
}

/** The owner (uid OWNER) writes `text` to `path` through the Root's host path; resolves with Root `owned` once it shows `generation`. */
async function ownerWrites(s: Stack, path: string, text: string, generation: number): Promise<any> {
  const wrote = spawnSync(process.execPath, ['--input-type=commonjs', '-e', 'require("node:fs").writeFileSync(process.argv[1], process.argv[2])', path, text], { uid: OWNER, gid: OWNER, encoding: 'utf8' });
  assert.equal(wrote.status, 0, wrote.stderr);
  return s.waitFor(`the owner's edit published (Root generation ${generation})`, async () => {
    const r = await s.get('root', 'owned');
    return r?.status?.generation === generation ? r : undefined;
  }, 30_000);
}

describe('snapshots: PRIME edited in place while a World runs and a checkpoint exists', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'snapshot-node', agentArgs: ['--compact-at-depth', '2'] });
  });
  after(async () => {
    await s?.stop();
  });

  test('every edit is refused; the running World, every generation and the checkpoint keep their recorded bytes', async () => {
    const host = join(s.scratch, 'snap');
    mkdirSync(join(host, 'sub'), { recursive: true, mode: 0o755 });
    for (const [name, text] of [['a.txt', 'alpha\n'], ['b.txt', 'bravo\n'], ['sub/c.txt', 'charlie\n']] as const) writeFileSync(join(host, name), text);
    for (const p of [host, join(host, 'sub'), join(host, 'a.txt'), join(host, 'b.txt'), join(host, 'sub/c.txt')]) chownSync(p, OWNER, OWNER);
    assert.equal((await applyRoot(s, 'snap', host)).status.phase, 'Ready');

    // The checkpoint: a World forked from generation 1 (the adopted tree, a full generation) and captured;
    // generation 1 is what its CheckpointReturn goes back to once its collapse has committed.
    const changed = await runWorld(s, 'snap-change', shWorld(['snap'], 'echo changed >> a.txt && echo delta > d.txt'));
    assert.equal(changed.status.phase, 'Captured', describeRun(changed));
    const checkpointDigest = changed.status.base[0].digest as string;

    // A World forked from the same generation reads its view, waits while PRIME is edited, reads it again.
    const read = 'cat a.txt b.txt sub/c.txt; ls -ln . sub | sed 1d';
    await s.apply(worldManifest('snap-reader', shWorld(['snap'], `${read}; echo ===; sleep 4; ${read}`)));
    const running = await s.waitWorld('snap-reader', ['Running', 'Captured', 'Failed', 'Refused']);
    assert.equal(running.status.phase, 'Running', JSON.stringify(running.status));
    // The store's own link to PRIME (the host path shows the owner's view, owner-view.ts: the next test).
    const prime = join(s.storeDir, 'live', 'snap');
    for (const [what, edit] of edits(prime)) await assert.rejects(edit(), { code: 'EROFS' }, `${what} through the live link`);
    assert.equal((await s.get('world', 'snap-reader'))?.status?.phase, 'Running', 'the edits were tried while the World ran');

    const reader = await s.waitWorld('snap-reader', ['Captured', 'Failed', 'Refused'], 'default', 60_000);
    assert.equal(reader.status.phase, 'Captured', JSON.stringify(reader.status));
    const [first, second] = readFileSync(outputLogPath(s, reader.metadata.uid as string), 'utf8').split('===\n');
    assert.ok(first?.startsWith('alpha\nbravo\ncharlie\n'), first);
    assert.equal(second, first, 'the World saw the same bytes, names, owners and modes before and after the edits');
    assert.equal(readFileSync(join(host, 'a.txt'), 'utf8'), 'alpha\n');

    // PRIME is still generation 1 as adopted: the captured change commits onto it (no FOREIGN_WRITE).
    await s.apply(collapseManifest('snap-col', 'snap-change'));
    const committed = await waitCollapse(s, 'snap-col', 30_000);
    assert.equal(committed.status.phase, 'Committed', JSON.stringify(committed.status));
    assert.equal(readFileSync(join(host, 'a.txt'), 'utf8'), 'alpha\nchanged\n');

    // Every generation of the Root re-hashes to the digest its marker recorded.
    const layout = layoutOf(s.storeDir);
    const rootKey = readMarker(layout, readdirSync(layout.generations).find((id) => readMarker(layout, id)?.digest === checkpointDigest)!)!.rootKey;
    const generations = readdirSync(layout.generations).map((id) => ({ id, marker: readMarker(layout, id) })).filter((g) => g.marker?.rootKey === rootKey);
    // (A background compaction of generation 2, generations/<id>.full, may be there too: it must have generation 2's bytes.)
    assert.deepEqual(generations.filter((g) => !g.id.endsWith('.full')).map((g) => g.marker!.generation).sort(), [1, 2]);
    for (const g of generations) assert.equal(manifestDigest(walkTreeSync(payloadDir(layout, g.id)).manifest), g.marker!.digest, `${g.id} (generation ${g.marker!.generation}) kept its bytes`);

    // The checkpoint is returned to, with the digest it was recorded with.
    await s.apply(collapseManifest('snap-back', 'snap-change', 'CheckpointReturn'));
    const back = await waitCollapse(s, 'snap-back', 30_000);
    assert.equal(back.status.phase, 'Committed', JSON.stringify(back.status));
    assert.equal(back.status.result[0].digest, checkpointDigest);
    assert.equal(readFileSync(join(host, 'a.txt'), 'utf8'), 'alpha\n');
  });

  test("the owner's edit through the host path is published as the next generation; a World captured before it is refused PRIME_MOVED", async () => {
    chmodSync(s.scratch, 0o755); // the owner reaches their directory, as from their home
    const host = join(s.scratch, 'owned');
    mkdirSync(host, { mode: 0o755 });
    writeFileSync(join(host, 'a.txt'), 'alpha\n');
    for (const p of [host, join(host, 'a.txt')]) chownSync(p, OWNER, OWNER);
    assert.equal((await applyRoot(s, 'owned', host)).status.phase, 'Ready');
    const before = await runWorld(s, 'owned-agent', shWorld(['owned'], 'echo agent > agent.txt'));
    assert.equal(before.status.phase, 'Captured', describeRun(before));

    const root = await ownerWrites(s, join(host, 'a.txt'), 'alpha, by its owner\n', 2);
    assert.equal(root.status.phase, 'Ready');
    const prime = join(s.storeDir, 'live', 'owned');
    assert.equal(readFileSync(join(prime, 'a.txt'), 'utf8'), 'alpha, by its owner\n', 'PRIME holds the edit');
    assert.equal(statSync(join(prime, 'a.txt')).uid, OWNER);

    await s.apply(collapseManifest('owned-col', 'owned-agent'));
    const refused = await waitCollapse(s, 'owned-col', 30_000);
    assert.equal(refused.status.phase, 'Denied', JSON.stringify(refused.status));
    assert.ok(refused.status.decision.reasons.includes('PRIME_MOVED'), JSON.stringify(refused.status.decision));
    assert.equal(readFileSync(join(host, 'a.txt'), 'utf8'), 'alpha, by its owner\n', 'the owner keeps what they wrote');
    assert.match(await s.agent.metrics(), /worldline_owner_edits_total\{outcome="PUBLISHED"\} [1-9]/);

    // An edit capture refuses (a symlink leaving the Root) is named on the Root until the owner undoes it.
    const owner = (code: string, ...args: string[]): void => {
      const r = spawnSync(process.execPath, ['--input-type=commonjs', '-e', code, ...args], { uid: OWNER, gid: OWNER, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    };
    owner('require("node:fs").symlinkSync("/etc/passwd", process.argv[1])', join(host, 'escape'));
    const named = await s.waitFor('OwnerEditsPublished=False', async () => {
      const r = await s.get('root', 'owned');
      const c = (r?.status?.conditions ?? []).find((x: { type: string }) => x.type === 'OwnerEditsPublished');
      return c?.status === 'False' ? c : undefined;
    }, 30_000);
    assert.equal(named.reason, 'OWNER_EDIT_UNPUBLISHABLE');
    assert.match(named.message, /escape.*EXTERNAL_SYMLINK/);
    assert.match(await s.agent.metrics(), /worldline_owner_edits_total\{outcome="OWNER_EDIT_UNPUBLISHABLE"\} [1-9]/);
    owner('require("node:fs").unlinkSync(process.argv[1])', join(host, 'escape'));
    await s.waitFor('OwnerEditsPublished=True', async () => {
      const r = await s.get('root', 'owned');
      return (r?.status?.conditions ?? []).some((x: { type: string; status: string }) => x.type === 'OwnerEditsPublished' && x.status === 'True');
    }, 30_000);
    assert.equal((await s.get('root', 'owned'))?.status?.generation, 2, 'nothing was published of the undone edit');
  });

  test('the agent compacts a deep PRIME in the background (--compact-at-depth 2), and the next publication stacks over the compaction', async () => {
    const host = join(s.scratch, 'owned');
    const generations = join(s.storeDir, 'generations');
    // Generation 2 (the owner's edit over the adopted tree) is two layers deep: compacted after it was published.
    const compaction = await s.waitFor('the compaction of generation 2', async () => readdirSync(generations).find((n) => n.startsWith('owned_g2_') && n.endsWith('.full')), 30_000);
    await s.waitFor('worldline_compactions_total{outcome="compacted"}', async () => /worldline_compactions_total\{outcome="compacted"\} [1-9]/.test(await s.agent.metrics()) || undefined, 30_000);
    assert.equal((await s.get('root', 'owned'))?.status?.generation, 2, 'a compaction does not move PRIME');
    const g2 = compaction.slice(0, -'.full'.length);
    assert.equal(manifestDigest(walkTreeSync(payloadDir(layoutOf(s.storeDir), compaction)).manifest), readMarker(layoutOf(s.storeDir), g2)?.digest, 'the compaction has generation 2\'s bytes');

    const root = await ownerWrites(s, join(host, 'later.txt'), 'after the compaction\n', 3);
    const g3 = readdirSync(generations).find((n) => n.startsWith('owned_g3_') && !n.endsWith('.full'))!;
    assert.deepEqual(readMarker(layoutOf(s.storeDir), g3)?.layers, [g3, compaction], 'stacked over the compaction: two layers, not three');
    const prime = join(s.storeDir, 'live', 'owned');
    assert.equal(manifestDigest(walkTreeSync(prime).manifest), root.status.digest, 'PRIME walks to the digest the Root shows');
    assert.equal(readFileSync(join(prime, 'later.txt'), 'utf8'), 'after the compaction\n');
    assert.equal(readFileSync(join(prime, 'a.txt'), 'utf8'), 'alpha, by its owner\n', 'what the compaction holds shows through');
  });
});
