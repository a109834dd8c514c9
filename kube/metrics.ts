// Prometheus metrics for reconcile outcomes.
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ReconcileMetrics, ReconcileOutcome } from './reconcile.js';

export function createReconcileMetrics(registry: Registry): ReconcileMetrics {
  const total =
    (registry.getSingleMetric('worldline_reconcile_total') as Counter<'kind' | 'result'> | undefined) ??
    new Counter({
      name: 'worldline_reconcile_total',
      help: 'Reconciles by kind and result (success, error, terminal, requeue).',
      labelNames: ['kind', 'result'] as const,
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric('worldline_reconcile_duration_seconds') as Histogram<'kind'> | undefined) ??
    new Histogram({
      name: 'worldline_reconcile_duration_seconds',
      help: 'Time spent in one reconcile, by kind.',
      labelNames: ['kind'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
  return {
    observe(kind: string, result: ReconcileOutcome, seconds: number): void {
      total.inc({ kind, result });
      duration.observe({ kind }, seconds);
    },
  };
}
