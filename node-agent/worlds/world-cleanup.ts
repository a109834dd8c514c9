// Removes whatever a world's run left on the node: its processes (through its cgroup), mounts (deepest
// first), its disk's loop device, its directory and its cgroup — the same teardown a run ends with, so a
// process still running cannot keep a mount or a cgroup alive. The output log and exit record go too,
// unless the World's record still shows them (keepOutput: a finished World's output stays readable).
import { rmSync } from 'node:fs';
import { WorldCgroup, type CgroupLayout } from '../sandbox/cgroup.js';
import { worldPaths } from '../sandbox/run-paths.js';
import { exitFileFor } from '../sandbox/supervisor-record.js';
import { teardownRun, throwTeardownErrors } from '../sandbox/teardown-run.js';

export async function cleanupWorldLeftovers(worldsDir: string, uid: string, cgroups: CgroupLayout, opts: { keepOutput?: boolean } = {}): Promise<void> {
  const paths = worldPaths(worldsDir, uid);
  const cgroup = WorldCgroup.attach(cgroups, 'worldline', `world-${uid}`);
  const errors = await teardownRun(paths, cgroup, () => cgroup.killAll());
  if (!opts.keepOutput) {
    rmSync(paths.output, { force: true });
    rmSync(exitFileFor(paths.output), { force: true });
  }
  throwTeardownErrors(errors);
}
