// A collapse that meets an unexpected error between its intent and the exchange is Denied with reason
// COLLAPSE_FAILED, receipted, and PRIME stays exactly the base — on a real stack (kube-apiserver + etcd,
// controller, node-agent as root). The error is a real errno: the collapse is paused right after its
// intent is recorded (the collapse step hook), the store's staging directory is swapped for a regular
// file, and the collapse goes on to stage into it (ENOTDIR). Nothing is a named collapse or store
// refusal there, which is what COLLAPSE_FAILED is for.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { applyRoot, describeRun, ownedDir, ownedFile, runWorld, shWorld } from '../support/worlds.js';

const CLI = new URL('../../cli/worldline.js', import.meta.url).pathname;

describe('a collapse failing on an unexpected error', () => {
  let s: Stack;
  let path: string;

  before(async () => {
    s = await startStack({ nodeName: 'collapse-failed-node' });
    path = join(s.scratch, 'proj');
    ownedDir(path);
    ownedFile(join(path, 'README.md'), 'not yet\n');
    const root = await applyRoot(s, 'proj', path);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
  });

  after(async () => {
    await s?.stop();
  });

  test('an errno while staging is Denied COLLAPSE_FAILED with a receipt; PRIME and the host path keep the base', async () => {
    const r = await runWorld(s, 'w', shWorld(['proj'], 'echo ok > README.md'));
    assert.equal(r.status.phase, 'Captured', describeRun(r));

    const flag = join(s.storeDir, 'test-hooks', 'after-intent.paused');
    await s.restartAgent({ signal: 'SIGTERM', env: { WORLDLINE_TEST_COLLAPSE_HOOK: 'after-intent:pause' } });
    await s.apply(collapseManifest('col', 'w'));
    await s.waitFor('the collapse paused after its intent', async () => existsSync(flag), 60_000);
    const staging = join(s.storeDir, 'staging');
    const away = join(s.storeDir, 'staging.test-away');
    renameSync(staging, away);
    writeFileSync(staging, 'not a directory\n');
    let c: Record<string, any>;
    try {
      rmSync(flag);
      c = await waitCollapse(s, 'col');
    } finally {
      rmSync(staging, { force: true });
      renameSync(away, staging);
    }

    assert.equal(c.status.phase, 'Denied', JSON.stringify(c.status));
    assert.equal(c.status.reason, 'COLLAPSE_FAILED', JSON.stringify(c.status));
    assert.deepEqual(c.status.decision, { authorized: false, reasons: ['COLLAPSE_FAILED'] });
    assert.equal(c.status.transaction.state, 'DENIED');
    assert.match(c.status.message, /ENOTDIR/);
    assert.ok(c.status.receipt?.id, 'the denied transaction has its receipt');
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'not yet\n', 'the host path shows the base');
    const root = await s.get('root', 'proj');
    assert.equal(root?.status?.generation, 1, 'PRIME is still the base generation');

    // The next agent starts clean on this store (any intent left is settled), and the ledger verifies.
    await s.restartAgent({ signal: 'SIGTERM' });
    execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', join(s.storeDir, 'receipts', 'ledger.jsonl'), '--public-key', join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem')]);
    assert.equal(readFileSync(join(path, 'README.md'), 'utf8'), 'not yet\n');
  });
});
