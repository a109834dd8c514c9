// Kubernetes Events (events.k8s.io/v1) with reportingController/reportingInstance. Repeats of the same
// object+type+reason+message within a window become one Event whose series.count grows. Recording never
// throws into callers: writes run in the background, failures are logged; flush() waits for them.
import { randomBytes } from 'node:crypto';
import type { KubeAccess } from './kube-access.js';

/** The object an Event is about: any API object (a client-node one or a kind parsed from crds/). */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}
import { isNotFound } from './api-error.js';
import { collectionPath, objectPath } from './api-paths.js';
import { systemClock, type Clock } from './clock.js';
import { httpClientFor, type KubeHttpClient } from './http.js';
import { nullLogger, type Logger } from './logger.js';
import { eventsRef } from './resource-ref.js';

export interface EventRecorderOptions {
  /** reportingController, e.g. "worldline.dev/controller". */
  component: string;
  /** reportingInstance, e.g. the pod name. */
  instance: string;
  logger?: Logger;
  clock?: Clock;
  /** Repeats within this window join a series; default 10 minutes. */
  seriesWindowMs?: number;
  /** Series count updates are batched for this long; default 2s. */
  seriesFlushMs?: number;
}

type EventType = 'Normal' | 'Warning';

interface SeriesEntry {
  name: string;
  namespace: string;
  firstAt: number;
  count: number;
  lastObserved: Date;
  /** count last written to the apiserver */
  written: number;
}

const MAX_ENTRIES = 4096;

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function formatMicroTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const truncate = (s: string, n: number): string => (s.length <= n ? s : s.slice(0, n - 3) + '...');

export class EventRecorder {
  private readonly http: KubeHttpClient;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly window: number;
  private readonly flushMs: number;
  private readonly series = new Map<string, SeriesEntry>();
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(kc: KubeAccess, private readonly opts: EventRecorderOptions) {
    this.http = httpClientFor(kc);
    this.log = (opts.logger ?? nullLogger).child({ recorder: opts.component });
    this.clock = opts.clock ?? systemClock;
    this.window = opts.seriesWindowMs ?? 10 * 60_000;
    this.flushMs = opts.seriesFlushMs ?? 2000;
  }

  normal(obj: EventSubject, reason: string, message: string): void {
    this.record(obj, 'Normal', reason, message);
  }

  warning(obj: EventSubject, reason: string, message: string): void {
    this.record(obj, 'Warning', reason, message);
  }

  /** Writes pending series updates and waits for every queued write. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.enqueueSeriesWrites();
    await this.chain;
  }

  private record(obj: EventSubject, type: EventType, reason: string, message: string): void {
    try {
      const m = obj.metadata ?? {};
      const now = this.clock.now();
      const key = [m.uid ?? '', m.namespace ?? '', m.name ?? '', obj.kind ?? '', type, reason, message].join('\0');
      const existing = this.series.get(key);
      if (existing && now.getTime() - existing.firstAt < this.window) {
        existing.count++;
        existing.lastObserved = now;
        this.scheduleSeriesFlush();
        return;
      }
      this.prune(now.getTime());
      const namespace = m.namespace || 'default';
      const name = `${truncate(m.name ?? 'unknown', 200)}.${randomBytes(8).toString('hex')}`;
      const entry: SeriesEntry = { name, namespace, firstAt: now.getTime(), count: 1, lastObserved: now, written: 1 };
      this.series.set(key, entry);
      const body = this.eventBody(obj, entry, type, reason, message, now);
      this.enqueue(async () => {
        await this.http.request({ method: 'POST', path: collectionPath(eventsRef, namespace), body });
      }, { reason, name: m.name });
    } catch (err) {
      this.log.error('recording event failed', { err, reason });
    }
  }

  private eventBody(obj: EventSubject, e: SeriesEntry, type: EventType, reason: string, message: string, now: Date): Record<string, unknown> {
    const m = obj.metadata ?? {};
    const body: Record<string, unknown> = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: e.name, namespace: e.namespace },
      eventTime: formatMicroTime(now),
      reportingController: this.opts.component,
      reportingInstance: truncate(this.opts.instance, 128),
      action: truncate(reason, 128),
      reason: truncate(reason, 128),
      note: truncate(message, 1024),
      type,
      regarding: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
      },
    };
    if (e.count >= 2) body.series = { count: e.count, lastObservedTime: formatMicroTime(e.lastObserved) };
    return body;
  }

  private scheduleSeriesFlush(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.enqueueSeriesWrites();
    }, this.flushMs);
    this.timer.unref();
  }

  private enqueueSeriesWrites(): void {
    for (const e of this.series.values()) {
      if (e.count === e.written) continue;
      const count = e.count;
      const lastObservedTime = formatMicroTime(e.lastObserved);
      e.written = count;
      this.enqueue(async () => {
        try {
          await this.http.request({
            method: 'PATCH',
            path: objectPath(eventsRef, e.name, e.namespace),
            body: { series: { count, lastObservedTime } },
            contentType: 'application/merge-patch+json',
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // The event expired (TTL) or was deleted: forget the series so the next repeat starts a new one.
          for (const [k, v] of this.series) if (v === e) this.series.delete(k);
        }
      }, { name: e.name, count });
    }
  }

  private enqueue(op: () => Promise<void>, fields: Record<string, unknown>): void {
    this.chain = this.chain.then(op).catch((err: unknown) => {
      this.log.warn('writing event failed', { ...fields, err });
    });
  }

  private prune(now: number): void {
    if (this.series.size < MAX_ENTRIES) return;
    for (const [k, v] of this.series) if (now - v.firstAt >= this.window) this.series.delete(k);
    // Still full: drop the oldest (Map iteration order is insertion order).
    while (this.series.size >= MAX_ENTRIES) {
      const first = this.series.keys().next();
      if (first.done) break;
      this.series.delete(first.value);
    }
  }
}
