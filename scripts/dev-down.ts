// npm run dev:down — stops everything dev:up started, and keeps every object: etcd's data stays, so the
// next dev:up finds the Roots, Worlds, Checks and Collapses again (as a stopped kind cluster does).
// npm run dev:reset — the same, then deletes the control plane's data. Neither removes the node-agent's
// store: host paths of adopted Roots link into it, so removing it would lose data.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { devPaths, type DevState } from './dev-paths.js';
import { stopProcess } from './process-util.js';

export async function stopDevStack(opts: { reset?: boolean } = {}): Promise<string[]> {
  if (!existsSync(devPaths.state)) {
    if (opts.reset) rmSync(devPaths.controlPlaneDir, { recursive: true, force: true });
    return [];
  }
  const state = JSON.parse(readFileSync(devPaths.state, 'utf8')) as DevState;
  // Stop in reverse start order: node-agent, controller, then the API server before etcd.
  const stopped: string[] = [];
  for (const p of [...state.pids].reverse()) {
    await stopProcess(p.pid);
    stopped.push(`${p.name} (pid ${p.pid})`);
  }
  rmSync(devPaths.state, { force: true });
  if (opts.reset) rmSync(devPaths.controlPlaneDir, { recursive: true, force: true });
  return stopped;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const reset = process.argv.includes('--reset');
  stopDevStack({ reset })
    .then((stopped) => {
      console.log(stopped.length ? `stopped: ${stopped.join(', ')}` : 'no dev stack is running');
      console.log(reset ? 'the control plane\'s data is deleted (the node-agent store stays)' : 'every object is kept for the next npm run dev:up; npm run dev:reset deletes them');
    })
    .catch((err: unknown) => {
      console.error(`dev:down failed: ${(err as Error).message}`);
      process.exit(1);
    });
}
