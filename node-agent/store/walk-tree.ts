// Walk a tree off the main thread: walkTreeSync in a worker thread, so hashing 100k files does not stall
// the agent's event loop (health probes, metrics, watches). See walk-tree-sync.ts for what is measured.
import { Worker } from 'node:worker_threads';
import type { WalkResult } from './walk-types.js';

export type { WalkProblem, WalkProblemCode, WalkResult } from './walk-types.js';

type WorkerReply = { ok: true; result: WalkResult } | { ok: false; error: { name: string; message: string; code?: string; errno?: number; syscall?: string; path?: string } };

export interface WalkOptions {
  /** See WalkSyncOptions.sharedWithinStore: the store directory, for walks of store payloads only. */
  sharedWithinStore?: string;
}

export function walkTree(rootPath: string, options: WalkOptions = {}): Promise<WalkResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./walk-worker.js', import.meta.url), { workerData: { rootPath, sharedWithinStore: options.sharedWithinStore } });
    let replied = false;
    worker.once('message', (reply: WorkerReply) => {
      replied = true;
      if (reply.ok) return resolve(reply.result);
      reject(Object.assign(new Error(reply.error.message), reply.error));
    });
    worker.once('error', (e) => {
      replied = true;
      reject(e);
    });
    worker.once('exit', (code) => {
      if (!replied) reject(new Error(`tree walk worker exited with code ${code} before replying`));
    });
  });
}
