// Where a world's files and mounts live inside the node store: one directory per World (by uid).
import { join } from 'node:path';

export interface WorldPaths {
  dir: string;
  rootfs: string;
  layers: string;
  credential: string;
  output: string;
}

export interface LayerPaths {
  dir: string;
  /** The generation seen through an idmapped, read-only mount. */
  lower: string;
  upper: string;
  work: string;
  merged: string;
}

/** A world's working directory, and its output log kept beside it (it outlives the run, until the World is deleted). */
export function worldPaths(worldsDir: string, worldUid: string): WorldPaths {
  if (!/^[A-Za-z0-9-]+$/.test(worldUid)) throw new Error(`invalid world uid "${worldUid}"`);
  const dir = join(worldsDir, worldUid);
  return { dir, rootfs: join(dir, 'rootfs'), layers: join(dir, 'layers'), credential: join(dir, 'credential'), output: join(worldsDir, `${worldUid}.output.log`) };
}

export function layerPaths(w: WorldPaths, rootKey: string): LayerPaths {
  if (!/^[A-Za-z0-9._-]+$/.test(rootKey)) throw new Error(`invalid root key "${rootKey}"`);
  const dir = join(w.layers, rootKey);
  return { dir, lower: join(dir, 'lower'), upper: join(dir, 'upper'), work: join(dir, 'work'), merged: join(dir, 'merged') };
}
