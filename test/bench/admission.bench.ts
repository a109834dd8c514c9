// Benchmark: admission decision latency of the AdmissionAuthority on a real node store (SQLite, the store's
// schema and locking) at 0, 100 and 1,000 live reservations. One sample = admit() of a new holder (observe
// → BEGIN IMMEDIATE → read the account of the live reservations → decide → insert → read it again → COMMIT), then its release()
// (untimed for the admit column, timed apart). Ceilings are large, so every sample is ADMITTED and the
// number of live reservations stays at the level. Measured twice: with the node observed from /proc (as
// the agent does) and with a fixed observation (the authority and SQLite alone).
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AdmissionAuthority } from '../../node-agent/admission/admission-authority.js';
import type { NodeCeilings, PerWorldPolicy } from '../../node-agent/admission/admission-policy.js';
import { observeNode, type ObservedState } from '../../node-agent/admission/observe-node.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { median, percentile } from './stats.js';

const GiB = 2 ** 30;
const CEILINGS: NodeCeilings = { cpuMillis: 1_000_000_000, memoryBytes: 2 ** 50, pids: 1_000_000_000, worlds: 1_000_000, ephemeralStorageBytes: 2 ** 50 };
const PER_WORLD: PerWorldPolicy = {
  limits: { cpuMillis: 64_000, memoryBytes: 64 * GiB, pids: 4096, wallTimeSeconds: 7 * 86400, outputBytes: 8 * GiB, ephemeralStorageBytes: 4 * GiB },
  // 1 MiB of disk each: with the node observed from /proc, 1,000 live reservations must fit the store's real
  // free space (at 1 GiB each they asked for 1 TB, and a 67 GiB disk refused the 47th).
  defaults: { cpuMillis: 100, memoryBytes: 64 * 2 ** 20, pids: 64, wallTimeSeconds: 3600, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: 2 ** 20 },
};
const FIXED: ObservedState = { memAvailableBytes: 2 ** 50, tasks: 100, pidMax: 4_194_304, cpuCount: 64, storeFreeBytes: 2 ** 50, storeUsedByRunsBytes: 0 };

export interface AdmissionBenchRow {
  live: number;
  observe: 'proc' | 'fixed';
  samples: number;
  admitMedianUs: number;
  admitP99Us: number;
  releaseMedianUs: number;
}

export async function benchAdmission(opts: { dir: string; levels?: number[]; samples?: number }): Promise<AdmissionBenchRow[]> {
  const levels = opts.levels ?? [0, 100, 1000];
  const samples = opts.samples ?? 2000;
  const rows: AdmissionBenchRow[] = [];
  for (const observe of ['proc', 'fixed'] as const) {
    const tmp = mkdtempSync(join(opts.dir, 'worldline-admission-bench-'));
    const { store } = await openStore({ dir: join(tmp, 'store') });
    try {
      const authority = new AdmissionAuthority({
        db: store.db,
        ceilings: CEILINGS,
        perWorld: PER_WORLD,
        observe: observe === 'proc' ? () => observeNode({ storeDir: store.dir, runDirs: [store.layout.worlds] }) : () => FIXED,
      });
      let live = 0;
      for (const level of levels) {
        for (; live < level; live++) {
          const r = authority.admit({ holder: `live-${live}`, stage: 'agent' });
          if (r.outcome !== 'ADMITTED') throw new Error(`prefill ${live}: ${r.outcome} ${r.message}`);
        }
        // Warm-up: statements, page cache, JIT.
        for (let i = 0; i < 100; i++) {
          authority.admit({ holder: 'warm', stage: 'agent' });
          authority.release('warm');
        }
        const admitUs: number[] = [];
        const releaseUs: number[] = [];
        for (let i = 0; i < samples; i++) {
          const holder = `probe-${level}-${i}`;
          const t0 = performance.now();
          const r = authority.admit({ holder, stage: i % 2 === 0 ? 'agent' : 'check', resources: { memoryBytes: GiB } });
          const t1 = performance.now();
          authority.release(holder);
          const t2 = performance.now();
          if (r.outcome !== 'ADMITTED') throw new Error(`sample ${i} at ${level}: ${r.outcome} ${r.message}`);
          admitUs.push((t1 - t0) * 1000);
          releaseUs.push((t2 - t1) * 1000);
        }
        if (authority.totals().worlds !== level) throw new Error(`live reservations drifted: ${authority.totals().worlds} ≠ ${level}`);
        rows.push({ live: level, observe, samples, admitMedianUs: median(admitUs), admitP99Us: percentile(admitUs, 99), releaseMedianUs: median(releaseUs) });
      }
    } finally {
      store.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return rows;
}
