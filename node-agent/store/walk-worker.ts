// Worker-thread entry of walk-tree.ts: walks the tree named in workerData and posts the result.
import { parentPort, workerData } from 'node:worker_threads';
import { walkTreeSync } from './walk-tree-sync.js';

const { rootPath, sharedWithinStore } = workerData as { rootPath: string; sharedWithinStore?: string };
try {
  parentPort!.postMessage({ ok: true, result: walkTreeSync(rootPath, sharedWithinStore === undefined ? {} : { sharedWithinStore }) });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  parentPort!.postMessage({ ok: false, error: { name: err.name, message: err.message, code: err.code, errno: err.errno, syscall: err.syscall, path: err.path } });
}
