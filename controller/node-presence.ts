// Whether a node-agent serves each node, decided from its heartbeat Leases, and a wake-up for that node's
// Worlds only when the answer changes. A renewal that changes nothing wakes nobody (a node-agent renews
// every few seconds, and waking every World on its node each time kept the controller busy with no-ops);
// a Lease that simply runs out sends no event, so each live answer is re-decided when its Lease expires.
import type { Clock } from '../kube/clock.js';
import { leaseExpiry, leaseLive, type LeaseObj } from './caches.js';
import { NODE_LABEL } from './reasons.js';

/** Slack after a Lease's expiry before it is re-read, so the re-check lands after it, not on it. */
const EXPIRY_SLACK_MS = 50;

export class NodePresence {
  private readonly known = new Map<string, boolean>();
  private readonly expiryChecks = new Map<string, AbortController>();
  private stopped = false;

  constructor(
    private readonly leases: () => readonly LeaseObj[],
    private readonly clock: Clock,
    private readonly changed: (node: string) => void,
  ) {}

  /** Re-decides the node's presence; calls `changed` when it differs from the last decision. */
  observe(node: string): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const mine = this.leases().filter((l) => l.metadata?.labels?.[NODE_LABEL] === node);
    const present = mine.some((l) => leaseLive(l, now));
    const before = this.known.get(node);
    this.known.set(node, present);
    this.expiryChecks.get(node)?.abort();
    this.expiryChecks.delete(node);
    if (present) this.recheckAtExpiry(node, mine, now);
    if (before !== present) this.changed(node);
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.expiryChecks.values()) c.abort();
    this.expiryChecks.clear();
  }

  private recheckAtExpiry(node: string, leases: readonly LeaseObj[], now: Date): void {
    let expires = 0;
    for (const l of leases) {
      const end = leaseExpiry(l);
      if (Number.isFinite(end)) expires = Math.max(expires, end);
    }
    const cancel = new AbortController();
    this.expiryChecks.set(node, cancel);
    void this.clock.sleep(Math.max(0, expires - now.getTime()) + EXPIRY_SLACK_MS, cancel.signal).then(() => {
      if (!cancel.signal.aborted) this.observe(node);
    }, () => undefined);
  }
}
