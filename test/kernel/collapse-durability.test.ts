// What a collapse makes durable before its exchange, seen by strace from outside the process: the order
// of fsyncs, writes to the database's WAL and the one renameat2 that changes PRIME. Recovery after a power
// loss can only settle what reached the disk, so before the exchange every path the new PRIME reads (the
// generation's layer, its marker and directories, live.next/) and the intent row must be durable; after
// it, the exchange itself. The database's final commit is not fsynced (unsynced-commit.ts): recovery
// rebuilds it from the intent and live/, which collapse-crash.test.ts shows at "after-exchange".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../node-agent/store/open-store.js';
import { getRoot, listIntents } from '../../node-agent/store/store-records.js';
import { generationDir } from '../../node-agent/store/store-layout.js';
import { closedStoreWithCandidate } from './collapse-fixtures.js';
import { scratch } from './store-fixtures.js';

const child = fileURLToPath(new URL('./collapse-child.js', import.meta.url));

interface Call {
  pid: string;
  call: string;
  /** The path of the call's first fd (strace -y), or its first argument. */
  path: string;
  args: string;
  /** The line of the trace that starts it. */
  line: number;
}

/**
 * The traced calls in the order strace wrote them: a call's line once it returned, or its `<unfinished ...>`
 * line when another thread's call came in between (its return is then a `<... resumed>` line of its own).
 */
function parseTrace(text: string): { calls: Call[]; finishedBefore: (index: number) => Set<number> } {
  const calls: Call[] = [];
  const pending = new Map<string, number>(); // pid -> index of its unfinished call
  const finishedAt: number[] = []; // index of the call -> the line position where it finished
  let position = 0;
  for (const line of text.split('\n')) {
    position++;
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>/.exec(line);
    if (resumed) {
      const i = pending.get(resumed[1]!);
      if (i !== undefined) finishedAt[i] = position;
      pending.delete(resumed[1]!);
      continue;
    }
    const m = /^(\d+)\s+(\w+)\((.*)$/.exec(line);
    if (!m) continue;
    const args = m[3]!;
    const fdPath = /^-?\d+<([^>]*)>/.exec(args);
    const quoted = /^"([^"]*)"/.exec(args);
    const unfinished = line.endsWith('<unfinished ...>');
    const index = calls.length;
    calls.push({ pid: m[1]!, call: m[2]!, path: fdPath?.[1] ?? quoted?.[1] ?? '', args, line: position });
    if (unfinished) pending.set(m[1]!, index);
    else finishedAt[index] = position;
  }
  // The calls that had finished before call `index` started.
  const finishedBefore = (index: number): Set<number> => {
    const start = calls[index]!.line;
    const set = new Set<number>();
    finishedAt.forEach((at, i) => {
      if (at !== undefined && at < start) set.add(i);
    });
    return set;
  };
  return { calls, finishedBefore };
}

const isSync = (c: Call): boolean => c.call === 'fsync' || c.call === 'fdatasync';

test('before its exchange, a collapse has made durable every path the new PRIME reads and every WAL frame it wrote (the intent); after it, the exchange', async (t) => {
  const s = await scratch(t);
  const { dir, childArgs } = await closedStoreWithCandidate(t, s.dir);
  const out = join(s.dir, 'strace.txt');
  const args = childArgs('none');
  // Each fsync is held 250 ms on its way out (strace's fault injection), so a sync the exchange did not wait
  // for finishes after it, whatever else the process does meanwhile.
  const trace = ['-f', '-y', '-qq', '-e', 'trace=fsync,fdatasync,renameat2,pwrite64,write', '-e', 'inject=fsync,fdatasync:delay_exit=250000'];
  const r = spawnSync('strace', [...trace, '-o', out, process.execPath, child, ...args], { encoding: 'utf8' });
  assert.equal(r.error, undefined, `strace could not run (the Debian package strace): ${String(r.error)}`);
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /"ok":true/);

  const { store } = await openStore({ dir });
  t.after(() => store.close());
  const root = getRoot(store.db, 'project')!;
  assert.equal(root.generation, 2, 'the collapse committed');
  assert.deepEqual(listIntents(store.db, 'collapse'), []);
  const generationId = (store.db.prepare('SELECT id FROM generations WHERE root_key = ? AND number = 2').get(root.rootKey) as { id: string }).id;
  const genDir = generationDir(store.layout, generationId);
  // Every file and directory of the new generation's own layer (what the exchange makes PRIME read).
  const layer = join(genDir, 'layer');
  const layerPaths: string[] = [layer];
  const visit = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        layerPaths.push(p);
        visit(p);
      } else if (e.isFile()) layerPaths.push(p);
    }
  };
  visit(layer);
  assert.ok(layerPaths.length > 3, `the layer holds the change: ${layerPaths.map((p) => relative(layer, p)).join(', ')}`);

  const { calls, finishedBefore } = parseTrace(readFileSync(out, 'utf8'));
  const exchanges = calls.map((c, i) => ({ c, i })).filter(({ c }) => c.call === 'renameat2' && c.args.includes('RENAME_EXCHANGE'));
  assert.equal(exchanges.length, 1, 'one exchange');
  const exchange = exchanges[0]!;
  assert.match(exchange.c.args, /live\.next.*live/, 'live.next/ exchanged with live/');
  const before = finishedBefore(exchange.i);
  const syncedBefore = new Set([...before].filter((i) => isSync(calls[i]!)).map((i) => calls[i]!.path));

  const required = [...layerPaths, join(genDir, 'marker.json'), genDir, store.layout.generations, store.layout.staging, join(dir, 'live.next')];
  const missing = required.filter((p) => !syncedBefore.has(p));
  assert.deepEqual(missing, [], 'each path the new PRIME reads, and the directories naming them, fsynced before the exchange');

  // Every write to the WAL made before the exchange (the intent's commit among them) is followed by a sync of
  // the WAL that finished before the exchange.
  const wal = join(dir, 'state.db-wal');
  const walWrites = calls.map((c, i) => ({ c, i })).filter(({ c, i }) => i < exchange.i && (c.call === 'pwrite64' || c.call === 'write') && c.path === wal);
  assert.ok(walWrites.length > 0, 'the intent was written to the WAL before the exchange');
  const lastWrite = walWrites[walWrites.length - 1]!.i;
  const walSync = [...before].some((i) => i > lastWrite && isSync(calls[i]!) && calls[i]!.path === wal);
  assert.ok(walSync, 'the WAL synced after its last write before the exchange');

  // The exchange itself made durable: the store directory (live/'s parent) synced after the renameat2.
  const after = calls.slice(exchange.i + 1);
  assert.ok(after.some((c) => isSync(c) && c.path === dir), 'the store directory fsynced after the exchange');
  // The final commit is written to the WAL after the exchange, and not waited for on disk.
  const walAfter = after.findIndex((c) => (c.call === 'pwrite64' || c.call === 'write') && c.path === wal);
  assert.ok(walAfter >= 0, 'the commit rows written to the WAL after the exchange');
});
