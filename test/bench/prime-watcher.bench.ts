// Benchmark: what the PRIME watcher costs the node-agent for writes it is not interested in. It marks the
// store's whole filesystem (FAN_MARK_FILESYSTEM), so every file created and written there by any process
// is an event it reads, resolves to a path and places outside every tree. Here, in this process: N small
// files written (create, write, close) in a directory next to a watched tree, on the same filesystem, in
// slices of 1,000, each slice followed by one drain (the agent drains every 100 ms). Timed apart: this
// process's CPU (user + system) in the writes, the baseline, and in the drains, the watcher's work. The
// kernel's queueing of the events is in the writes, so the drains are a lower bound of what watching costs.
// Also an empty drain (nothing queued), and a quiet second's CPU with the watcher's 100 ms timer running.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrimeWatcher } from '../../node-agent/store/prime-watcher.js';
import { median } from './stats.js';

export interface WatcherCostResult {
  files: number;
  rounds: number;
  /** CPU of writing the files (the baseline), ms (median over rounds). */
  writeCpuMs: number;
  /** CPU of the drains that read and placed their events, ms. */
  drainCpuMs: number;
  /** drainCpuMs / files, µs. */
  perFileUs: number;
  /** One drain of an empty queue, µs (median of 1,000). */
  emptyDrainUs: number;
  /** CPU over one quiet second with the watcher's 100 ms timer running, ms. */
  quietSecondCpuMs: number;
}

const SLICE = 1000;

const cpuMs = (from: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
};

export async function benchWatcherCost(o: { dir: string; files: number; rounds: number }): Promise<WatcherCostResult> {
  const scratch = join(o.dir, `worldline-bench-watcher-${process.pid}`);
  const store = join(scratch, 'store');
  const tree = join(store, 'tree');
  mkdirSync(tree, { recursive: true, mode: 0o700 });
  const writes: number[] = [];
  const drains: number[] = [];
  let emptyDrainUs = NaN;
  let quietSecondCpuMs = NaN;
  try {
    for (let round = 0; round < o.rounds; round++) {
      const noise = join(scratch, `noise-${round}`);
      mkdirSync(noise, { mode: 0o700 });
      // No timer: every drain is one of ours, after a slice (a slice stays far below the queue's bound).
      const watcher = new PrimeWatcher(store, { intervalMs: 0 });
      try {
        watcher.watch('tree', tree);
        const token = watcher.mark('tree');
        let write = 0;
        let drain = 0;
        for (let done = 0; done < o.files; done += SLICE) {
          const w = process.cpuUsage();
          for (let i = done; i < Math.min(o.files, done + SLICE); i++) writeFileSync(join(noise, `f-${i}`), 'x');
          write += cpuMs(w);
          const d = process.cpuUsage();
          watcher.drain();
          drain += cpuMs(d);
        }
        // Every event was outside the tree: nothing may be reported under it, and a write in it must be.
        writeFileSync(join(tree, `seen-${round}`), 'y');
        const after = watcher.changesSince('tree', token);
        if (after.gap || after.paths.join() !== `seen-${round}`) throw new Error(`the watcher did not report exactly the write in its tree: ${JSON.stringify(after)}`);
        writes.push(write);
        drains.push(drain);
        if (round === 0) {
          const t: number[] = [];
          for (let i = 0; i < 1000; i++) {
            const s = process.hrtime.bigint();
            watcher.drain();
            t.push(Number(process.hrtime.bigint() - s) / 1000);
          }
          emptyDrainUs = median(t);
        }
      } finally {
        watcher.close();
        rmSync(noise, { recursive: true, force: true });
      }
    }
    const timed = new PrimeWatcher(store);
    try {
      timed.watch('tree', tree);
      const quiet = process.cpuUsage();
      await new Promise((r) => setTimeout(r, 1000));
      quietSecondCpuMs = cpuMs(quiet);
    } finally {
      timed.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const drainMs = median(drains);
  return { files: o.files, rounds: o.rounds, writeCpuMs: median(writes), drainCpuMs: drainMs, perFileUs: (drainMs * 1000) / o.files, emptyDrainUs, quietSecondCpuMs };
}
