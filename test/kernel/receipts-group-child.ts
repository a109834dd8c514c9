// A second process for the grouped-append crash test (receipts-group-kill.test.ts). argv:
//   <store dir> <export path> <round> <writers>
// Opens the node's ledger as the node-agent does (openCollapseLedger on the store, with the export
// mirror), prints "ready", then runs <writers> loops that each append a receipt with appendAsync and, only
// once its promise resolved, print "<sequence> <transaction id>" — so every printed line is a receipt the
// ledger acknowledged. It runs until the parent kills it.
import { openCollapseLedger } from '../../node-agent/receipts/open-ledger.js';
import { openStore } from '../../node-agent/store/open-store.js';
import type { ReceiptContent } from '../../core/receipts/receipt.js';

const [dir, exportPath, round, writers] = process.argv.slice(2);

function content(id: string, i: number): ReceiptContent {
  return {
    transaction: { id, state: 'DENIED' },
    world: { namespace: 'ns', name: `w${i}`, uid: `u${i}` },
    mode: 'Candidate',
    decision: { authorized: false, reasons: ['CONFLICT'] },
    evidence: { requirementHash: null, subject: null, verifierIdentity: null, executedVerifierIdentity: null },
    roots: [{ root: 'repo', fromGeneration: i, toGeneration: null, beforeDigest: `sha256:b${i}`, afterDigest: null }],
    issuedAt: '2026-03-04T05:06:07.000Z',
  };
}

const { store } = await openStore({ dir: dir! });
const { ledger } = openCollapseLedger(store, { exportPath: exportPath! });
// process.stdout on a pipe writes synchronously on Linux: a printed line has left this process before
// the next receipt is asked for.
process.stdout.write('ready\n');
let n = 0;
await Promise.all(Array.from({ length: Number(writers) }, async (_, w) => {
  for (;;) {
    const id = `r${round!}-w${w}-${n++}`;
    const r = await ledger.appendAsync(content(id, n));
    process.stdout.write(`${r.body.sequence} ${id}\n`);
  }
}));
