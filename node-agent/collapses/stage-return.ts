// Staging a return to a checkpoint: the next generation of a Root whose content is exactly an earlier
// generation's (the checkpoint). Every file is a link to the checkpoint payload's inode, directories and
// symlinks are re-created, and the staged payload is walked and must have the checkpoint's recorded
// digest — so a checkpoint whose bytes changed in place since (generations share inodes) is refused.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestDigest } from '../../core/manifest.js';
import { generationIdFor } from '../../core/root-key.js';
import type { Store } from '../store/open-store.js';
import { payloadDir } from '../store/store-layout.js';
import { getGeneration, getGenerationManifest, getRoot } from '../store/store-records.js';
import { CollapseError } from './collapse-errors.js';
import { collapseWalkDigest } from '../store/store-walk.js';
import { buildPayload, type StageOptions, type StagedGeneration } from './stage-generation.js';

export async function stageReturn(store: Store, rootName: string, fromGeneration: number, checkpointGeneration: number, options: StageOptions = {}): Promise<StagedGeneration> {
  const root = getRoot(store.db, rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
  const from = getGeneration(store.db, root.rootKey, fromGeneration);
  const checkpoint = getGeneration(store.db, root.rootKey, checkpointGeneration);
  const manifest = checkpoint && getGenerationManifest(store.db, checkpoint.id);
  if (!from || !checkpoint || !manifest) throw new CollapseError('CANDIDATE_INVALID', `root ${rootName} has no recorded generation ${from ? checkpointGeneration : fromGeneration}`);
  const digest = manifestDigest(manifest);
  if (digest !== checkpoint.digest) throw new CollapseError('CANDIDATE_INVALID', `the recorded manifest of generation ${checkpointGeneration} of ${rootName} does not have its digest`);
  const generation = fromGeneration + 1;
  const stagingDir = options.stagingDir ?? join(store.layout.staging, `collapse-${randomUUID()}`);
  const payloadPath = join(stagingDir, 'payload');
  await rm(stagingDir, { recursive: true, force: true });
  mkdirSync(stagingDir, { mode: 0o700 });
  let counts: { linked: number; copied: number };
  try {
    counts = await buildPayload(payloadPath, manifest, new Set(), payloadDir(store.layout, checkpoint.id), '');
  } catch (e) {
    await rm(stagingDir, { recursive: true, force: true });
    throw new CollapseError('STAGED_UNTESTED', `building generation ${generation} of ${rootName} from checkpoint ${checkpointGeneration} failed: ${String(e)}`, { cause: e });
  }
  await options.hooks?.afterStep?.('after-stage');
  const walk = await collapseWalkDigest(payloadPath, store.dir);
  if (walk.problems.length > 0 || walk.digest !== digest) {
    await rm(stagingDir, { recursive: true, force: true });
    throw new CollapseError('STAGED_UNTESTED', `the checkpoint of ${rootName} (generation ${checkpointGeneration}) no longer has its recorded digest`);
  }
  await options.hooks?.afterStep?.('after-verify');
  return {
    rootName,
    rootKey: root.rootKey,
    baseGeneration: fromGeneration,
    baseGenerationId: from.id,
    baseDigest: from.digest,
    generation,
    generationId: generationIdFor(root.rootKey, generation, digest),
    digest,
    manifest,
    stagingDir,
    payloadPath,
    ...counts,
  };
}
