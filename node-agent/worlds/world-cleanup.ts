// Removes whatever a world left on the node: mounts (deepest first), its directory, its cgroup.
import { existsSync, rmSync } from 'node:fs';
import { WorldCgroup, type CgroupLayout } from '../sandbox/cgroup.js';
import { removeWorldDir, unmountLayers, unmountRootfs } from '../sandbox/rootfs.js';
import { worldPaths } from '../sandbox/run-paths.js';

export function cleanupWorldLeftovers(worldsDir: string, uid: string, cgroups: CgroupLayout): void {
  const paths = worldPaths(worldsDir, uid);
  if (existsSync(paths.dir)) {
    unmountRootfs(paths);
    unmountLayers(paths);
    removeWorldDir(paths);
  }
  rmSync(paths.output, { force: true });
  const cg = WorldCgroup.attach(cgroups, 'worldline', `world-${uid}`);
  cg.killAll();
  cg.remove();
}
