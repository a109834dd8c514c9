// A refused Root settles at Broken: the node-agent writes its refusal once and then leaves the object alone
// until something changes (its retry every 30 s finds the same refusal and writes nothing).
//
// Issue 12: every update of a Root wakes its reconciler, its own status writes included. A refused Root was
// retried on each wake by writing Adopting, walking the tree again and then comparing the refusal with the
// status read BEFORE that Adopting write: equal, so the refusal was not written back and the object stayed
// Adopting; the Adopting write woke it again, which wrote Broken, which woke it again... The Root flipped
// Adopting/Broken for as long as the agent ran, one tree walk per flip, and a poller mostly saw Adopting
// (world-escapes once waited 60 s for plant-dotdot, with other refused Roots flipping beside it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startStack, type Stack } from '../support/stack.js';
import { applyRoot } from '../support/worlds.js';

/** How long a refused Root is watched after it first shows Broken; the flipping cycle took well under 1 s. */
const SETTLED_FOR_MS = 6_000;

describe('a refused Root settles at Broken', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'refusal-settles-node' });
  });

  after(async () => {
    await s?.stop();
  });

  test('two refused Roots reach Broken and stay there: same phase and resourceVersion while watched, no Adopting flip', async () => {
    const names = ['settle-dotdot', 'settle-absolute'];
    const plants: Record<string, string> = { 'settle-dotdot': '../..', 'settle-absolute': '/etc/shadow' };
    for (const name of names) {
      const dir = join(s.scratch, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'ok.txt'), 'fine\n');
      symlinkSync(plants[name]!, join(dir, 'up'));
      const t0 = Date.now();
      const root = await applyRoot(s, name, dir, 30_000);
      assert.equal(root.status.phase, 'Broken', `${name}: ${JSON.stringify(root.status)}`);
      assert.equal(root.status.reason, 'EXTERNAL_SYMLINK', `${name}: ${root.status.message}`);
      console.error(`${name} Broken after ${Date.now() - t0} ms`);
    }
    // Give the agent's own status writes time to come back as watch events, then take the reference.
    await sleep(1_000);
    const first = new Map<string, Record<string, any>>();
    for (const name of names) first.set(name, (await s.get('root', name))!);
    const seen: string[] = [];
    const deadline = Date.now() + SETTLED_FOR_MS;
    while (Date.now() < deadline) {
      for (const name of names) {
        const r = await s.get('root', name);
        const ref = first.get(name)!;
        if (r?.status?.phase !== 'Broken' || r.metadata.resourceVersion !== ref.metadata.resourceVersion) {
          seen.push(`${name}: ${r?.status?.phase}/${r?.status?.reason} rv ${r?.metadata?.resourceVersion} (was ${ref.metadata.resourceVersion})`);
        }
      }
      await sleep(250);
    }
    assert.deepEqual(seen, [], 'a refused Root kept changing after it showed Broken (the agent re-announced Adopting and re-walked it)');
    for (const name of names) assert.equal(first.get(name)!.status.phase, 'Broken', `${name} was not Broken when the watch began`);
  });
});
