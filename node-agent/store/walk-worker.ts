// Worker-thread entry of walk-tree.ts: walks the trees named in workerData, in order, with one shared
// inode hash map (see WalkSyncOptions.inodeHashes), and posts the results: each WalkResult, or with
// reply 'digest' each tree's manifest digest in place of its manifest (WalkDigest).
import { parentPort, workerData } from 'node:worker_threads';
import { manifestDigest } from '../../core/manifest.js';
import { walkTreeSync, type KnownHash } from './walk-tree-sync.js';
import type { WalkDigest, WalkResult } from './walk-types.js';

const { rootPaths, sharedWithinStore, inodeHashes, reply } = workerData as { rootPaths: string[]; sharedWithinStore?: string; inodeHashes?: Map<string, KnownHash>; reply?: 'manifest' | 'digest' };
const digestOnly = ({ manifest, ...rest }: WalkResult): WalkDigest => ({ ...rest, digest: manifestDigest(manifest), entries: manifest.entries.length });
try {
  const hashes = inodeHashes ?? new Map<string, KnownHash>();
  const walks = rootPaths.map((p) => walkTreeSync(p, { inodeHashes: hashes, ...(sharedWithinStore === undefined ? {} : { sharedWithinStore }) }));
  const results = reply === 'digest' ? walks.map(digestOnly) : walks;
  parentPort!.postMessage({ ok: true, results });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  parentPort!.postMessage({ ok: false, error: { name: err.name, message: err.message, code: err.code, errno: err.errno, syscall: err.syscall, path: err.path } });
}
