// Typed condition helpers following the Kubernetes API conventions.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/** metav1.Time is RFC 3339 with second precision; writing milliseconds would make every pass look changed. */
export function formatTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Returns a new list with `next` set: lastTransitionTime is kept while the status is unchanged, and
 * observedGeneration is stamped (or removed when undefined). Existing entries keep their positions;
 * a new type is appended.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  observedGeneration: number | undefined,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const updated: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: prev && prev.status === next.status ? prev.lastTransitionTime : formatTime(now),
  };
  if (observedGeneration !== undefined) updated.observedGeneration = observedGeneration;
  if (i >= 0) list[i] = updated;
  else list.push(updated);
  return list;
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** True when the condition is True and was observed at `generation` (i.e. not stale). */
export function isConditionTrueFor(conditions: readonly Condition[] | undefined, type: string, generation: number): boolean {
  const c = findCondition(conditions, type);
  return c?.status === 'True' && c.observedGeneration === generation;
}
