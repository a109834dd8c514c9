// Mount points at or below a directory. A bind mount from the same filesystem keeps st_dev, so
// comparing devices alone misses it; the mount table does not.
import { mountsUnder } from './mount-table.js';

/** Real paths of mount points equal to `realRoot` or inside it. */
export function mountPointsUnder(realRoot: string): Set<string> {
  return new Set(mountsUnder(realRoot));
}
