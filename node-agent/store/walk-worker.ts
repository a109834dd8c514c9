// Worker-thread entry of walk-tree.ts: walks the trees named in workerData, in order, with one shared
// inode hash map (see WalkSyncOptions.inodeHashes), and posts the results.
import { parentPort, workerData } from 'node:worker_threads';
import { walkTreeSync, type KnownHash } from './walk-tree-sync.js';

const { rootPaths, sharedWithinStore, inodeHashes } = workerData as { rootPaths: string[]; sharedWithinStore?: string; inodeHashes?: Map<string, KnownHash> };
try {
  const hashes = inodeHashes ?? new Map<string, KnownHash>();
  const results = rootPaths.map((p) => walkTreeSync(p, { inodeHashes: hashes, ...(sharedWithinStore === undefined ? {} : { sharedWithinStore }) }));
  parentPort!.postMessage({ ok: true, results });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  parentPort!.postMessage({ ok: false, error: { name: err.name, message: err.message, code: err.code, errno: err.errno, syscall: err.syscall, path: err.path } });
}
