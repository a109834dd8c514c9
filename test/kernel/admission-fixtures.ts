// What the admission tests on real SQLite files share: the per-world policy and a node observed with
// room to spare.
import type { PerWorldPolicy } from '../../node-agent/admission/admission-policy.js';
import type { ObservedState } from '../../node-agent/admission/observe-node.js';

export const GiB = 2 ** 30;

export const perWorld: PerWorldPolicy = {
  limits: { cpuMillis: 4000, memoryBytes: 4 * GiB, pids: 4096, wallTimeSeconds: 86400, outputBytes: 4 * GiB, ephemeralStorageBytes: 4 * GiB },
  defaults: { cpuMillis: 1000, memoryBytes: GiB, pids: 512, wallTimeSeconds: 3600, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: GiB },
};

export const roomy: ObservedState = { memAvailableBytes: 1024 * GiB, tasks: 100, pidMax: 4_194_304, cpuCount: 8, storeFreeBytes: 1024 * GiB, storeUsedByRunsBytes: 0 };
