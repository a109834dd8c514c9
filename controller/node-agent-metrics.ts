// The controller's view of the node-agents as a Prometheus gauge: how many heartbeat Leases are live and
// how many have expired, read from the Lease informer at each scrape. An expired Lease is a node whose
// Worlds wait (WAITING_FOR_NODE_AGENT); the count, not the node's name, keeps the series bounded.
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../kube/clock.js';
import { leaseLive, type LeaseObj } from './caches.js';

export interface HeartbeatSource {
  /** False until the caches have listed (a standby replica never lists): then no series is exported. */
  synced(): boolean;
  leases(): readonly LeaseObj[];
}

/** Registers worldline_node_agents{state="live"|"expired"} on `registry`, computed from `source` at scrape time. */
export function registerNodeAgentMetrics(registry: Registry, source: HeartbeatSource, clock: Pick<Clock, 'now'>): void {
  if (registry.getSingleMetric('worldline_node_agents')) registry.removeSingleMetric('worldline_node_agents');
  new Gauge({
    name: 'worldline_node_agents',
    help: 'Node-agent heartbeat Leases seen by the leading controller, by state (live, expired).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!source.synced()) return;
      const now = clock.now();
      let live = 0;
      for (const l of source.leases()) if (leaseLive(l, now)) live += 1;
      this.set({ state: 'live' }, live);
      this.set({ state: 'expired' }, source.leases().length - live);
    },
  });
}
