// npm run dev:down — stops everything dev:up started and removes the control plane's data. The
// node-agent's store stays: host paths of adopted Roots link into it, so removing it would lose data.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { devPaths, type DevState } from './dev-paths.js';
import { stopProcess } from './process-util.js';

export async function stopDevStack(): Promise<string[]> {
  if (!existsSync(devPaths.state)) return [];
  const state = JSON.parse(readFileSync(devPaths.state, 'utf8')) as DevState;
  // Stop in reverse start order: node-agent, controller, then the API server before etcd.
  const stopped: string[] = [];
  for (const p of [...state.pids].reverse()) {
    await stopProcess(p.pid);
    stopped.push(`${p.name} (pid ${p.pid})`);
  }
  rmSync(devPaths.state, { force: true });
  rmSync(devPaths.controlPlaneDir, { recursive: true, force: true });
  return stopped;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  stopDevStack()
    .then((stopped) => console.log(stopped.length ? `stopped: ${stopped.join(', ')}` : 'no dev stack is running'))
    .catch((err: unknown) => {
      console.error(`dev:down failed: ${(err as Error).message}`);
      process.exit(1);
    });
}
