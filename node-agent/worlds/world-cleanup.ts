// Removes whatever a world left on the node: mounts (deepest first), its disk's loop device, its directory,
// its cgroup.
import { existsSync, rmSync } from 'node:fs';
import { WorldCgroup, type CgroupLayout } from '../sandbox/cgroup.js';
import { detachRunDisk } from '../sandbox/disk-image.js';
import { removeWorldDir, unmountLayers, unmountRootfs } from '../sandbox/rootfs.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { exitFileFor } from '../sandbox/supervisor-record.js';

export function cleanupWorldLeftovers(worldsDir: string, uid: string, cgroups: CgroupLayout): void {
  const paths = worldPaths(worldsDir, uid);
  if (existsSync(paths.dir)) {
    unmountRootfs(paths);
    unmountLayers(paths);
  }
  // A loop device may outlive its image (unlinked while attached): detach it whether or not the directory is there.
  detachRunDisk(paths);
  if (existsSync(paths.dir)) removeWorldDir(paths);
  rmSync(paths.output, { force: true });
  rmSync(exitFileFor(paths.output), { force: true });
  const cg = WorldCgroup.attach(cgroups, 'worldline', `world-${uid}`);
  cg.killAll();
  cg.remove();
}
