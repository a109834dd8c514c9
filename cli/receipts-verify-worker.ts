// A thread of `worldline receipts verify`: checks one chunk of complete ledger lines (receipts-lines.ts
// checkLines) out of the ledger's shared bytes and posts the result. The links between lines, and which
// problem comes first, are judged by the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { checkLines } from './receipts-lines.js';
import { signerCheck, type LedgerSigners } from './receipts-signers.js';

interface Job {
  bytes: SharedArrayBuffer;
  start: number;
  end: number;
  signers: LedgerSigners;
}

const job = workerData as Job;
const text = Buffer.from(job.bytes, job.start, job.end - job.start).toString('utf8');
parentPort?.postMessage(checkLines(text, signerCheck(job.signers)));
