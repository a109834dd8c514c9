// Benchmark: what the PRIME watcher costs the node-agent for writes it is not interested in. It marks the
// store's whole filesystem (FAN_MARK_FILESYSTEM), so every file created and written there by any process
// is an event it reads, resolves to a path and places outside every tree. Here, in this process: N small
// files written (create, write, close) in a directory next to a watched tree, on the same filesystem,
// with no watcher (the baseline) and with one draining every 100 ms as the agent's does (plus a drain
// at the end, so every event is read). The difference in this process's CPU (user + system) is the
// watcher's, the kernel's queueing of the events included. Also an empty drain (nothing queued), and a
// quiet second's CPU with the watcher's timer running.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrimeWatcher } from '../../node-agent/store/prime-watcher.js';
import { median } from './stats.js';

export interface WatcherCostResult {
  files: number;
  rounds: number;
  /** CPU of writing the files, no watcher, ms (median over rounds). */
  baselineCpuMs: number;
  /** The same with the watcher draining, ms. */
  watchedCpuMs: number;
  /** (watched − baseline) / files, µs. */
  perFileUs: number;
  /** One drain of an empty queue, µs (median of 1,000). */
  emptyDrainUs: number;
  /** CPU over one quiet second with the watcher's 100 ms timer running, ms. */
  quietSecondCpuMs: number;
}

const cpuMs = (from: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
};

function writeFiles(dir: string, files: number, tag: string): void {
  for (let i = 0; i < files; i++) writeFileSync(join(dir, `${tag}-${i}`), 'x');
}

/** Writes in slices of 1,000 files with a pause between, so the timer's drains run among them as they would. */
async function writeSliced(dir: string, files: number, tag: string): Promise<void> {
  for (let done = 0; done < files; done += 1000) {
    writeFiles(dir, Math.min(1000, files - done), `${tag}-${done}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function benchWatcherCost(o: { dir: string; files: number; rounds: number }): Promise<WatcherCostResult> {
  const scratch = join(o.dir, `worldline-bench-watcher-${process.pid}`);
  const store = join(scratch, 'store');
  const tree = join(store, 'tree');
  mkdirSync(tree, { recursive: true, mode: 0o700 });
  const baseline: number[] = [];
  const watched: number[] = [];
  let emptyDrainUs = NaN;
  let quietSecondCpuMs = NaN;
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const withWatcher of [false, true]) {
        const noise = join(scratch, `noise-${round}-${withWatcher ? 'w' : 'b'}`);
        mkdirSync(noise, { mode: 0o700 });
        const watcher = withWatcher ? new PrimeWatcher(store) : undefined;
        try {
          watcher?.watch('tree', tree);
          watcher?.drain();
          const from = process.cpuUsage();
          await writeSliced(noise, o.files, 'f');
          watcher?.drain();
          const used = cpuMs(from);
          if (watcher) {
            // Every event was outside the tree: nothing may be reported under it.
            const token = watcher.mark('tree');
            writeFileSync(join(tree, `seen-${round}`), 'y');
            const after = watcher.changesSince('tree', token);
            if (after.gap || after.paths.join() !== `seen-${round}`) throw new Error(`the watcher did not report exactly the write in its tree: ${JSON.stringify(after)}`);
            watched.push(used);
            if (round === 0) {
              const t: number[] = [];
              for (let i = 0; i < 1000; i++) {
                const s = process.hrtime.bigint();
                watcher.drain();
                t.push(Number(process.hrtime.bigint() - s) / 1000);
              }
              emptyDrainUs = median(t);
              const quiet = process.cpuUsage();
              await new Promise((r) => setTimeout(r, 1000));
              quietSecondCpuMs = cpuMs(quiet);
            }
          } else baseline.push(used);
        } finally {
          watcher?.close();
          rmSync(noise, { recursive: true, force: true });
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const b = median(baseline);
  const w = median(watched);
  return { files: o.files, rounds: o.rounds, baselineCpuMs: b, watchedCpuMs: w, perFileUs: ((w - b) * 1000) / o.files, emptyDrainUs, quietSecondCpuMs };
}
