// Trees that would escape their Root are refused at adoption, by name, and nothing of them moves: a
// symlink planted before adoption (absolute, ../.., a name then ..), a hard link to a file outside, a
// special file. The host directory and the store are byte-identical afterwards.
//
// On a stack of its own. Inside world-escapes, plant-dotdot was once seen to stay Adopting for over 60 s:
// a refused Root's own status writes woke its reconciler, which announced Adopting again and flipped the
// Root Adopting/Broken for as long as the refusal held, with Broken visible for a few hundred ms at a
// time (issue 12). Fixed in node-agent/roots/root-reconciler.ts; root-refusal-settles.test.ts holds it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot, hashTree, storeSnapshot } from '../support/worlds.js';

describe('adoption refuses trees that would escape their Root', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'adoption-node' });
  });

  after(async () => {
    await s?.stop();
  });

  test('escaping symlinks planted before adoption are refused at adoption (absolute, ../.., name-then-..), as are outside hardlinks and special files', async () => {
    const cases: { name: string; plant: (dir: string) => void; reason: string; mentions: string }[] = [
      { name: 'plant-absolute', plant: (d) => symlinkSync('/etc/shadow', join(d, 'leak')), reason: 'EXTERNAL_SYMLINK', mentions: 'leak' },
      { name: 'plant-dotdot', plant: (d) => symlinkSync('../..', join(d, 'up')), reason: 'EXTERNAL_SYMLINK', mentions: 'up' },
      {
        // a/b/x -> .. is contained (it is a/). a/b/y -> x/../.. normalizes to a/, inside the root, and climbs no
        // more than its depth; but the kernel enters x (a/), then .. (the root), then .. (the root's parent).
        name: 'plant-name-dotdot',
        plant: (d) => {
          mkdirSync(join(d, 'a', 'b'), { recursive: true });
          symlinkSync('..', join(d, 'a', 'b', 'x'));
          symlinkSync('x/../..', join(d, 'a', 'b', 'y'));
          // realpathSync.native asks libc (which walks like the kernel); Node's JS realpathSync resolves link targets lexically.
          assert.equal(realpathSync.native(join(d, 'a', 'b', 'y')), s.scratch, 'the planted link does not escape as intended');
        },
        reason: 'EXTERNAL_SYMLINK',
        mentions: 'a/b/y',
      },
      {
        name: 'plant-hardlink',
        plant: (d) => {
          const outside = join(s.scratch, 'outside-target.txt');
          writeFileSync(outside, 'outside\n');
          linkSync(outside, join(d, 'hl'));
        },
        reason: 'EXTERNAL_HARDLINK',
        mentions: 'hl',
      },
      {
        name: 'plant-fifo',
        plant: (d) => {
          const made = spawnSync('mkfifo', [join(d, 'pipe')]);
          assert.equal(made.status, 0);
        },
        reason: 'SPECIAL_FILE',
        mentions: 'pipe',
      },
    ];
    for (const c of cases) {
      const dir = join(s.scratch, c.name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'ok.txt'), 'fine\n');
      c.plant(dir);
      const before = hashTree(dir);
      const store = storeSnapshot(s.storeDir);
      const root = await applyRoot(s, c.name, dir);
      assert.equal(root.status.phase, 'Broken', `${c.name}: ${JSON.stringify(root.status)}`);
      assert.equal(root.status.reason, c.reason, `${c.name}: ${root.status.message}`);
      assert.ok(root.status.message.includes(c.mentions), `${c.name}: the refusal does not name ${c.mentions}: ${root.status.message}`);
      assert.ok(statSync(dir).isDirectory() && hashTree(dir) === before, `${c.name}: the host directory changed`);
      assert.deepEqual(storeSnapshot(s.storeDir), store, `${c.name}: the store changed`);
    }
  });
});
