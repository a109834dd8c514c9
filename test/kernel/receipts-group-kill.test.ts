// kill -9 during grouped appends: a child process opens the node's ledger (store rows and export mirror)
// and appends with several writers, printing each receipt only after its promise resolved; the parent
// SIGKILLs it at seeded random moments, several rounds on the same ledger, and after each one reopens it
// as the node-agent would and checks: every acknowledged receipt is in the ledger at its sequence with its
// transaction id, each transaction once; the chain and every signature verify (with the independent
// OpenSSL verifier); the store's rows equal the lines and the mirror equals the ledger.
//
// A torn last line: kill -9 cannot interrupt the copy of one write() into the page cache part-way
// through a page, but Linux checks for a fatal signal between the pages of a larger write, so a group
// spanning pages could in principle be cut. No acknowledged receipt can be in the cut part (the promise
// waits for the whole write and its fsync), and the store's rows witness what was: opened with them, the
// ledger cuts such a tail itself (tornTailCut). If a round leaves one, the test checks that every
// acknowledged receipt is before it and that the open cut exactly those bytes, and counts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPublicKey, verifyLedger } from '../../cli/receipts-verify.js';
import { openCollapseLedger, receiptPaths } from '../../node-agent/receipts/open-ledger.js';
import { readReceiptRows } from '../../node-agent/receipts/receipt-rows.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { requireRoot } from '../support/require-root.js';
import { rng } from '../support/seeded-random.js';

requireRoot('the grouped receipt appends crash test');

const child = fileURLToPath(new URL('./receipts-group-child.js', import.meta.url));
const ROUNDS = 6;
const WRITERS = 8;

/** Runs the child until `killAfterMs` after it is ready, SIGKILLs it; the acknowledged receipts it printed. */
function runAndKill(storeDir: string, exportPath: string, round: number, killAfterMs: number): Promise<{ signal: NodeJS.Signals | null; acked: { sequence: number; id: string }[] }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, storeDir, exportPath, String(round), String(WRITERS)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let timer: NodeJS.Timeout | undefined;
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d: string) => {
      out += d;
      if (timer === undefined && out.startsWith('ready\n')) timer = setTimeout(() => p.kill('SIGKILL'), killAfterMs);
    });
    p.on('error', reject);
    p.on('close', (_code, signal) => {
      clearTimeout(timer);
      // Only whole lines count: a line is one write to the pipe, so a cut one was never printed.
      const lines = out.split('\n').slice(1, -1);
      resolve({ signal, acked: lines.map((l) => {
        const [seq, id] = l.split(' ');
        return { sequence: Number(seq), id: id! };
      }) });
    });
  });
}

test('kill -9 during grouped appends: every acknowledged receipt survives, the chain verifies, rows and mirror match', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wl-receipts-kill-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const storeDir = join(dir, 'store');
  const exportPath = join(dir, 'export.jsonl');
  const seed = Number(process.env['WORLDLINE_RECEIPTS_KILL_SEED'] ?? 20261204);
  t.diagnostic(`seed ${seed} (replay with WORLDLINE_RECEIPTS_KILL_SEED=${seed})`);
  const random = rng(seed);
  const everAcked = new Map<string, number>();
  let torn = 0;

  for (let round = 1; round <= ROUNDS; round++) {
    const killAfterMs = 20 + Math.floor(random() * 280);
    const { signal, acked } = await runAndKill(storeDir, exportPath, round, killAfterMs);
    assert.equal(signal, 'SIGKILL', `round ${round}: the child ended by itself`);
    assert.ok(acked.length > 0, `round ${round}: the child acknowledged nothing in ${killAfterMs} ms`);
    for (const a of acked) everAcked.set(a.id, a.sequence);

    const ledgerPath = receiptPaths({ dir: storeDir }).ledger;
    const { store } = await openStore({ dir: storeDir });
    try {
      const before = readFileSync(ledgerPath);
      const whole = before.lastIndexOf(0x0a) + 1;
      const opened = openCollapseLedger(store, { exportPath });
      if (whole < before.length) {
        const lastSeq = whole === 0 ? 0 : before.subarray(0, whole).toString('utf8').trimEnd().split('\n').length;
        assert.ok(Math.max(...everAcked.values()) <= lastSeq, `round ${round}: an acknowledged receipt is in the torn tail`);
        assert.equal(opened.ledger.tornTailCut, before.length - whole, `round ${round}: the open did not cut exactly the unfinished line`);
        torn++;
        t.diagnostic(`round ${round}: torn tail of ${before.length - whole} bytes after line ${lastSeq} (never acknowledged), cut at open`);
      } else {
        assert.equal(opened.ledger.tornTailCut, 0, `round ${round}: the open cut a ledger that ended with a whole line`);
      }
      const { ledger } = opened;
      ledger.close();
      const bytes = readFileSync(ledgerPath);
      const v = verifyLedger(bytes, loadPublicKey(readFileSync(opened.publicKeyPath, 'utf8')));
      assert.ok(v.ok, `round ${round}: the ledger does not verify: ${JSON.stringify(v)}`);
      const lines = bytes.toString('utf8').slice(0, -1).split('\n');
      const txOfLine = lines.map((l) => (JSON.parse(l) as { receipt: { transaction: { id: string } } }).receipt.transaction.id);
      for (const [id, sequence] of everAcked) {
        assert.equal(txOfLine[sequence - 1], id, `round ${round}: acknowledged receipt ${sequence} (${id}) is not line ${sequence}`);
      }
      assert.equal(new Set(txOfLine).size, lines.length, `round ${round}: a transaction has more than one receipt`);
      assert.deepEqual(readReceiptRows(store.db).map((r) => r.line), lines, `round ${round}: the rows are not the lines`);
      assert.ok(readFileSync(exportPath).equals(bytes), `round ${round}: the mirror is not the ledger`);
      t.diagnostic(`round ${round}: killed after ${killAfterMs} ms; ${acked.length} acknowledged, ${lines.length} in the ledger (${lines.length - everAcked.size} written but never acknowledged so far)`);
    } finally {
      store.close();
    }
  }
  t.diagnostic(`${everAcked.size} acknowledged receipts over ${ROUNDS} rounds; torn tails: ${torn}`);
});
