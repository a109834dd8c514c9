// Deleting a Root on a real stack (kube-apiserver + etcd, controller, node-agent as root). With
// spec.onDelete Release (the default) the node-agent, which holds the Root with worldline.dev/root-release
// once it adopted it, ends the Worlds that fork it (ROOT_RELEASING), puts PRIME back at the host path as
// a plain directory with its owners and modes, keeps the history (older generations) and the receipts in
// the store, and drops the finalizer. KeepAdopted leaves the store and the host link as they were. A
// released directory is adopted afresh by a new Root of the name. A Collapse into a Root object that is
// not Ready (here a replacement, Broken ROOT_REPLACED) is refused by name (docs/security-model.md limit 18).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack, type Stack } from '../support/stack.js';
import { kc } from '../support/wait.js';
import { collapseManifest, waitCollapse } from '../support/collapses.js';
import { applyRoot, describeRun, hashTree, ownedDir, ownedFile, rootKeyOf, runWorld, shWorld, worldManifest } from '../support/worlds.js';

const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const FINALIZER = 'worldline.dev/root-release';

/** Every entry below `top` (the top followed if it is a link): path, type, mode, owner, content or target. No times, no inodes. */
function shape(top: string): string[] {
  const out: string[] = [];
  const visit = (abs: string, rel: string, follow: boolean): void => {
    const st = follow ? statSync(abs) : lstatSync(abs);
    const kind = st.isDirectory() ? 'd' : st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
    const body = kind === 'f' ? readFileSync(abs, 'utf8') : kind === 'l' ? readlinkSync(abs) : '';
    out.push(`${rel || '.'} ${kind} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ${JSON.stringify(body)}`);
    if (kind === 'd') for (const n of readdirSync(abs).sort()) visit(join(abs, n), rel ? `${rel}/${n}` : n, false);
  };
  visit(top, '', true);
  return out;
}

/** A directory owned by uid 1000 with mixed modes and owners: the shape a release must give back. */
function mixedTree(dir: string): void {
  ownedDir(dir);
  chmodSync(dir, 0o750);
  ownedFile(join(dir, 'a.txt'), 'alpha\n', 1000, 0o640);
  ownedFile(join(dir, 'private'), 'owner only\n', 1001, 0o600);
  ownedFile(join(dir, 'run.sh'), '#!/bin/sh\n', 1000, 0o755);
  mkdirSync(join(dir, 'sub'), { mode: 0o700 });
  chownSync(join(dir, 'sub'), 1000, 1002);
  ownedFile(join(dir, 'sub', 'deep.txt'), 'deep\n', 1000, 0o444);
  symlinkSync('sub/deep.txt', join(dir, 'deep-link'));
  lchownSync(join(dir, 'deep-link'), 1000, 1000);
}

describe('a Root deleted: released, or kept adopted', () => {
  let s: Stack;

  before(async () => {
    s = await startStack({ nodeName: 'release-node' });
  });
  after(async () => {
    await s?.stop();
  });

  const finalizersOf = async (name: string): Promise<string[]> => ((await s.get('root', name))?.metadata?.finalizers as string[] | undefined) ?? [];
  const waitHeld = (name: string): Promise<true> => s.waitFor(`Root ${name} holds ${FINALIZER}`, async () => (await finalizersOf(name)).includes(FINALIZER) || undefined, 30_000);
  const waitGone = (name: string): Promise<true> => s.waitFor(`Root ${name} gone`, async () => ((await s.get('root', name)) === undefined ? true : undefined), 60_000);
  /** Deletes the Root and waits until it is gone; on a timeout says where it stood and what the agent warned. */
  const deleteAndWait = async (name: string): Promise<void> => {
    try {
      await kc(s.cp, ['delete', 'root', name, '--wait=true', '--timeout=60s']);
      await waitGone(name);
    } catch (err) {
      const warned = s.agent.logs.filter((r) => r.level === 'warn' || r.level === 'error').slice(-10);
      throw new Error(`${(err as Error).message}\nRoot ${name} status: ${JSON.stringify((await s.get('root', name))?.status ?? null)}\nagent warnings: ${JSON.stringify(warned)}`);
    }
  };
  /** Generation directories of the root `name` (its root key is its name: core/root-key.ts, names up to 63 characters). */
  const generationsOf = (name: string): string[] => readdirSync(join(s.storeDir, 'generations')).filter((g) => g.startsWith(`${name}_g`)).sort();

  test('Release: after a collapse, deleting the Root gives back the collapsed tree as a plain directory, same owners and modes; history and receipts stay', async () => {
    const dir = join(s.scratch, 'released');
    mixedTree(dir);
    const root = await applyRoot(s, 'released', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await waitHeld('released');

    const w = await runWorld(s, 'edit-released', shWorld(['released'], 'echo more >> a.txt && echo new > added.txt && chmod 0604 added.txt'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));
    await s.apply(collapseManifest('edit-released', 'edit-released'));
    const c = await waitCollapse(s, 'edit-released', 60_000);
    assert.equal(c.status.phase, 'Committed', JSON.stringify(c.status));
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'alpha\nmore\n');
    const expected = shape(dir);
    assert.ok(expected.some((l) => l.startsWith('added.txt f 604 1000:1000')), expected.join('\n'));
    assert.ok(expected.some((l) => l.startsWith('private f 600 1001:1001')), expected.join('\n'));

    await deleteAndWait('released');
    const st = lstatSync(dir);
    assert.ok(st.isDirectory() && !st.isSymbolicLink(), `${dir} is a plain directory again`);
    assert.deepEqual(shape(dir), expected, 'the collapsed content, owners, modes and links, as PRIME had them');
    assert.deepEqual(readdirSync(s.scratch).filter((n) => n.includes('worldline-release')), [], 'no copy left beside it');
    assert.equal(generationsOf('released').length, 2, `both generations stay in the store as history: ${generationsOf('released').join(', ')}`);
    assert.ok(!readdirSync(join(s.storeDir, 'live')).includes('released'), 'live/ no longer maps it');
    const released = s.agent.logs.find((r) => r.msg === 'root released' && r['root'] === 'released');
    assert.equal(released?.['generation'], 2, JSON.stringify(released));

    const ledger = join(s.storeDir, 'receipts', 'ledger.jsonl');
    const publicKey = join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem');
    execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--public-key', publicKey], { encoding: 'utf8' }); // throws unless it verifies
    assert.ok(readFileSync(ledger, 'utf8').includes(c.status.receipt.id), 'the collapse receipt stays in the ledger');
  });

  test('re-adoption: a new Root of the name adopts the released directory afresh, numbered after its history', async () => {
    const dir = join(s.scratch, 'released');
    const before = shape(dir);
    const root = await applyRoot(s, 'released', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    assert.equal(root.status.generation, 3, 'generations 1 and 2 are the released history');
    assert.equal(readlinkSync(dir), join(s.storeDir, 'live', `${rootKeyOf(dir)}_view`));
    assert.deepEqual(shape(dir), before);
    await waitHeld('released');
  });

  test('KeepAdopted: deleting the Root leaves the directory adopted and the host path a link into the store', async () => {
    const dir = join(s.scratch, 'kept');
    mixedTree(dir);
    const root = await applyRoot(s, 'kept', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await waitHeld('kept');
    await kc(s.cp, ['patch', 'root', 'kept', '--type=merge', '-p', JSON.stringify({ spec: { onDelete: 'KeepAdopted' } })]);
    const link = readlinkSync(dir);
    const hash = hashTree(dir);
    await deleteAndWait('kept');
    assert.equal(readlinkSync(dir), link, 'still the link to live/');
    assert.equal(hashTree(dir), hash, 'PRIME untouched');
    assert.ok(readdirSync(join(s.storeDir, 'live')).includes(rootKeyOf(dir)));
  });

  test('a World running on a Root being deleted ends by name (ROOT_RELEASING) before the release', async () => {
    const dir = join(s.scratch, 'busy');
    mixedTree(dir);
    const root = await applyRoot(s, 'busy', dir);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    await waitHeld('busy');
    await s.apply(worldManifest('long-busy', shWorld(['busy'], 'sleep 300')));
    await s.waitWorld('long-busy', ['Running'], 'default', 60_000);

    await kc(s.cp, ['delete', 'root', 'busy', '--wait=false']);
    const w = await s.waitWorld('long-busy', ['Failed', 'Captured', 'Refused'], 'default', 60_000);
    assert.equal(w.status.phase, 'Failed', JSON.stringify(w.status));
    assert.equal(w.status.reason, 'ROOT_RELEASING', w.status.message);
    assert.match(w.status.message, /Root busy is being deleted/);
    await waitGone('busy');
    assert.ok(lstatSync(dir).isDirectory() && !lstatSync(dir).isSymbolicLink(), 'released once the World ended');
    assert.ok(s.agent.logs.some((r) => r.msg === 'root released' && r['root'] === 'busy'), 'the agent logged the release');
  });

  test('a Collapse into a Root object that is not Ready (replaced: Broken ROOT_REPLACED) is refused by name; PRIME stays', async () => {
    const dir = join(s.scratch, 'swapped');
    mixedTree(dir);
    const first = await applyRoot(s, 'swapped', dir);
    assert.equal(first.status.phase, 'Ready', JSON.stringify(first.status));
    await waitHeld('swapped');
    const w = await runWorld(s, 'edit-swapped', shWorld(['swapped'], 'echo changed > a.txt'));
    assert.equal(w.status.phase, 'Captured', describeRun(w));

    await kc(s.cp, ['patch', 'root', 'swapped', '--type=merge', '-p', JSON.stringify({ spec: { onDelete: 'KeepAdopted' } })]);
    await kc(s.cp, ['delete', 'root', 'swapped', '--wait=true', '--timeout=60s']);
    const second = await applyRoot(s, 'swapped', dir);
    assert.equal(second.status.phase, 'Broken', JSON.stringify(second.status));
    assert.equal(second.status.reason, 'ROOT_REPLACED');
    const prime = hashTree(dir);

    await s.apply(collapseManifest('edit-swapped', 'edit-swapped'));
    const c = await waitCollapse(s, 'edit-swapped', 60_000);
    assert.equal(c.status.phase, 'Denied', JSON.stringify(c.status));
    assert.deepEqual(c.status.decision?.reasons ?? [c.status.reason], ['ROOT_NOT_READY'], JSON.stringify(c.status));
    assert.match(c.status.message, /Root swapped is Broken \(ROOT_REPLACED\), not Ready/);
    assert.equal(hashTree(dir), prime, 'nothing was committed into the old directory');
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'alpha\n');
  });
});
