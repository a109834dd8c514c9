// The promotion queue of a node: Collapses whose Worlds share a Root are served in order of creation
// (creationTimestamp, then namespace/name: the API server's timestamps have whole seconds). A Collapse
// waits, phase Queued with its position, while an older one of the same Roots is not finished; Collapses of
// disjoint Roots never wait for each other. Pure: the reconciler says which Collapses are still pending.

/** One pending Collapse as the queue orders it. */
export interface QueueEntry {
  /** namespace/name */
  key: string;
  /** metadata.creationTimestamp (RFC 3339, UTC). */
  created: string;
  /** The Roots of its World. */
  roots: readonly string[];
}

/** Whether `a` was created before `b` (ties broken by key, so two Collapses never wait for each other). */
export function servedBefore(a: QueueEntry, b: QueueEntry): boolean {
  if (a.created !== b.created) return a.created < b.created;
  return a.key < b.key;
}

/** How many pending Collapses sharing a Root with `self` are served before it (0: its turn). */
export function queuePosition(self: QueueEntry, pending: readonly QueueEntry[]): number {
  const mine = new Set(self.roots);
  return pending.filter((o) => o.key !== self.key && o.roots.some((r) => mine.has(r)) && servedBefore(o, self)).length;
}
