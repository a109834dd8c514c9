// The node and per-World policy the admission tests share: a 4-World node with 8 GiB and 4 CPUs' worth of
// millicores, per-World limits and defaults, and a node measurement with room for all of it.
import type { NodeCeilings, PerWorldPolicy } from '../../node-agent/admission/admission-policy.js';
import type { ObservedState } from '../../node-agent/admission/observe-node.js';

export const GiB = 2 ** 30;
export const ceilings: NodeCeilings = { cpuMillis: 4000, memoryBytes: 8 * GiB, pids: 8192, worlds: 4, ephemeralStorageBytes: 64 * GiB };
export const perWorld: PerWorldPolicy = {
  limits: { cpuMillis: 4000, memoryBytes: 4 * GiB, pids: 4096, wallTimeSeconds: 86400, outputBytes: 4 * GiB, ephemeralStorageBytes: 4 * GiB },
  defaults: { cpuMillis: 1000, memoryBytes: 2 * GiB, pids: 1024, wallTimeSeconds: 3600, outputBytes: 64 * 2 ** 20, ephemeralStorageBytes: GiB },
};
export const roomy: ObservedState = { memAvailableBytes: 64 * GiB, tasks: 200, pidMax: 4_194_304, cpuCount: 4, storeFreeBytes: 1024 * GiB, storeUsedByRunsBytes: 0 };
