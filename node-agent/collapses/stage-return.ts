// Staging a return to a checkpoint: the next generation of a Root whose content is exactly an earlier
// generation's (the checkpoint). It is the checkpoint's stack of layers again (store/generation-stack.ts)
// under an empty layer of its own, so nothing is copied; the checkpoint's payload is walked and must have
// its recorded digest, so a checkpoint whose bytes changed since is refused. A checkpoint whose stack is
// MAX_STACK_DEPTH layers deep already is compacted instead (a full generation linking its layers' files,
// walked whole), so that returns never publish a stack deeper than collapses do.
import { randomUUID } from 'node:crypto';
import { lstatSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestDigest, type Manifest } from '../../core/manifest.js';
import { generationIdFor } from '../../core/root-key.js';
import type { Store } from '../store/open-store.js';
import { getGeneration, getGenerationManifest, getRoot, type GenerationRecord, type RootRecord } from '../store/store-records.js';
import { CollapseError } from './collapse-errors.js';
import { collapseWalkDigest } from '../store/store-walk.js';
import { withPayload } from '../store/payload-holds.js';
import { buildCompaction, type GenerationIdentity, type StageOptions, type StagedGeneration } from './stage-generation.js';
import { buildLayer } from './stage-layer.js';
import { readMarker } from '../store/generation-marker.js';
import { MAX_STACK_DEPTH, effectiveStack, stackIds } from '../store/generation-stack.js';

/** A return to a checkpoint, planned: the next generation's identity, and what it is built from. */
export interface ReturnPlan extends GenerationIdentity {
  root: RootRecord;
  from: GenerationRecord;
  checkpoint: GenerationRecord;
  manifest: Manifest;
}

/**
 * The next generation of `rootName` after `fromGeneration`, with the content of `checkpointGeneration`:
 * the checkpoint's recorded manifest, required to have its recorded digest. Nothing is written.
 */
export function planReturn(store: Store, rootName: string, fromGeneration: number, checkpointGeneration: number): ReturnPlan {
  const root = getRoot(store.db, rootName);
  if (!root) throw new CollapseError('ROOT_NOT_FOUND', `no root named ${rootName}`);
  const from = getGeneration(store.db, root.rootKey, fromGeneration);
  const checkpoint = getGeneration(store.db, root.rootKey, checkpointGeneration);
  const manifest = checkpoint && getGenerationManifest(store.db, checkpoint.id);
  if (!from || !checkpoint || !manifest) throw new CollapseError('CANDIDATE_INVALID', `root ${rootName} has no recorded generation ${from ? checkpointGeneration : fromGeneration}`);
  const digest = manifestDigest(manifest);
  if (digest !== checkpoint.digest) throw new CollapseError('CANDIDATE_INVALID', `the recorded manifest of generation ${checkpointGeneration} of ${rootName} does not have its digest`);
  const generation = fromGeneration + 1;
  return { root, from, checkpoint, manifest, digest, generation, generationId: generationIdFor(root.rootKey, generation, digest) };
}

/** Stages the return; `plan` is planReturn's for the same arguments (made here when absent). */
export async function stageReturn(store: Store, rootName: string, fromGeneration: number, checkpointGeneration: number, options: StageOptions & { plan?: ReturnPlan } = {}): Promise<StagedGeneration> {
  const { root, from, checkpoint, manifest, digest, generation, generationId } = options.plan ?? planReturn(store, rootName, fromGeneration, checkpointGeneration);
  const stagingDir = options.stagingDir ?? join(store.layout.staging, `collapse-${randomUUID()}`);
  // The next generation is the checkpoint's own stack again (a full checkpoint: a stack of itself alone),
  // with an empty layer of its own: nothing is copied or linked (but for a checkpoint MAX_STACK_DEPTH deep,
  // compacted below). Its payload is mounted at the commit, and walked there; here the checkpoint's
  // payload is walked and must still have its recorded digest.
  const checkpointIds = effectiveStack(store.db, stackIds(readMarker(store.layout, checkpoint.id), checkpoint.id)).ids;
  const layers = [generationId, ...checkpointIds];
  await rm(stagingDir, { recursive: true, force: true });
  mkdirSync(stagingDir, { mode: 0o700 });
  const staged = { rootName, rootKey: root.rootKey, baseGeneration: fromGeneration, baseGenerationId: from.id, baseDigest: from.digest, generation, generationId, digest, manifest, stagingDir };
  const refused = (): CollapseError => new CollapseError('STAGED_UNTESTED', `the checkpoint of ${rootName} (generation ${checkpointGeneration}) no longer has its recorded digest`);

  if (checkpointIds.length >= MAX_STACK_DEPTH) {
    const payloadPath = join(stagingDir, 'payload');
    let counts: { linked: number; copied: number };
    try {
      counts = await buildCompaction(store, payloadPath, manifest, checkpointIds, new Set(), '');
    } catch (e) {
      await rm(stagingDir, { recursive: true, force: true });
      throw new CollapseError('STAGED_UNTESTED', `compacting the checkpoint of ${rootName} (generation ${checkpointGeneration}) failed: ${String(e)}`, { cause: e });
    }
    await options.hooks?.afterStep?.('after-stage');
    // Every linked file is hashed: they are the checkpoint's inodes, which no boundary re-hash covers.
    const walk = await collapseWalkDigest(payloadPath, store.dir);
    if (walk.problems.length > 0 || walk.digest !== digest) {
      await rm(stagingDir, { recursive: true, force: true });
      throw refused();
    }
    await options.hooks?.afterStep?.('after-verify');
    return { ...staged, payloadPath, ...counts };
  }
  const layerPath = join(stagingDir, 'layer');
  // Its own layer is empty but for its top directory (the checkpoint's root attributes): every stacked
  // generation has a layer of its own, whose directory identifies it (store-records payload_dev/ino).
  // The checkpoint's payload is read (its root's owner and mode, its walk): held mounted meanwhile.
  const { walk, topAttributes, unsynced } = await withPayload(store, checkpoint.id, async (checkpointPayload) => {
    const top = lstatSync(checkpointPayload);
    const topAttributes = manifest.root ?? { mode: top.mode & 0o7777, uid: top.uid, gid: top.gid };
    const { unsynced } = buildLayer(layerPath, [], topAttributes, '');
    await options.hooks?.afterStep?.('after-stage');
    return { walk: await collapseWalkDigest(checkpointPayload, store.dir), topAttributes, unsynced };
  });
  if (walk.problems.length > 0 || walk.digest !== digest) {
    await rm(stagingDir, { recursive: true, force: true });
    throw refused();
  }
  await options.hooks?.afterStep?.('after-verify');
  return {
    ...staged,
    payloadPath: layerPath,
    unsynced,
    layers,
    layer: { items: [], root: topAttributes, overBase: false },
    linked: 0,
    copied: 0,
  };
}
