// The end of every supervised run (a World's or a Check's): kill what may still run, unmount its view
// and layers, detach its disk's loop device, remove its directory when nothing is mounted below it,
// empty and remove its cgroup. Each step runs even when an earlier one failed, so one stuck mount does
// not also leak a cgroup; what failed comes back to the caller, which decides how to report it.
import type { WorldCgroup } from './cgroup.js';
import { detachRunDisk } from './disk-image.js';
import { removeWorldDir, unmountLayers, unmountRootfs } from './rootfs.js';
import type { WorldPaths } from './run-paths.js';

export async function teardownRun(paths: WorldPaths, cgroup: WorldCgroup | undefined, kill: () => void): Promise<Error[]> {
  const errors: Error[] = [];
  const attempt = (fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      errors.push(err as Error);
    }
  };
  attempt(kill);
  attempt(() => unmountRootfs(paths));
  let layersGone = false;
  attempt(() => {
    const left = unmountLayers(paths);
    if (left.length === 0) layersGone = true;
    else errors.push(new Error(`still mounted after teardown: ${left.join(', ')}`));
  });
  if (layersGone) {
    // The run's disk (disk-image.ts) is unmounted with the layers; its loop device goes before its image.
    try {
      detachRunDisk(paths);
    } catch (err) {
      errors.push(err as Error);
    }
    attempt(() => removeWorldDir(paths));
  }
  if (cgroup) {
    attempt(() => cgroup.killAll());
    try {
      for (let i = 0; i < 50 && cgroup.remove().length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    } catch (err) {
      errors.push(err as Error);
    }
  }
  return errors;
}

/** Throws the teardown's errors as one (nothing when the list is empty). */
export function throwTeardownErrors(errors: Error[]): void {
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new AggregateError(errors, `teardown failed: ${errors.map((e) => e.message).join('; ')}`);
}
