// Small helpers for the dev scripts: liveness of a pid and stopping a process group.
import { setTimeout as sleep } from 'node:timers/promises';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM the process group (or the process), wait up to `graceMs`, then SIGKILL. */
export async function stopProcess(pid: number, graceMs = 10_000): Promise<void> {
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  if (!alive(pid)) return;
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  if (alive(pid)) signal('SIGKILL');
  while (alive(pid)) await sleep(50);
}
