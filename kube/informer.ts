// A list+watch cache for one resource that never gives up: relists on 410 Gone (diffing against the cache),
// backs off with jitter on any other error, resumes watches from the last resourceVersion, uses bookmarks.
// The cache is updated before handlers run, so a handler (or a worker it wakes) sees the new state via get().
// Given a parser (kube/object-schema.ts), it parses every object at the edge: the cache holds only objects
// the kind's schema accepts, typed; any other one is held as a named refusal (refusal(key), onRefuse) and
// never reaches get(), list() or the add/update/delete handlers.
// A writer may hand the informer the object its own write returned (observeWrite): the cache and the
// handlers see the write at once, and the watch's later copy of that version (the echo) is dropped.
// With stripManagedFields, metadata.managedFields is removed on ingest (like a client-go TransformFunc):
// the bookkeeping of server-side apply is most of a small object's size and nothing here reads it.
import type { KubeAccess } from './kube-access.js';
import { isGone, ApiError, type KubeStatus } from './api-error.js';
import { collectionPath } from './api-paths.js';
import { Backoff } from './backoff.js';
import { systemClock, type Clock } from './clock.js';
import { httpClientFor, type KubeHttpClient, type Query } from './http.js';
import { nullLogger, type Logger } from './logger.js';
import type { ObjectParser, ObjectRefusal } from './object-schema.js';
import { apiVersionOf, objectKey, type ResourceRef } from './resource-ref.js';
import { readWatchEvents } from './watch-stream.js';
import { fieldSelectorMatches, parseFieldSelector, type FieldTerm } from './field-selector.js';

/** What the informer needs of any object: its key and version. */
export interface InformedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** A read-only view of an informer's cache (covariant, so a cache of a kind is a cache of its Picks). */
export interface ObjectCache<T> {
  get(key: string): T | undefined;
  list(): T[];
  /** The refusal of the object at `key`, when its schema does not accept it. */
  refusal(key: string): ObjectRefusal | undefined;
}

export interface InformerOptions<T = unknown> {
  kubeConfig: KubeAccess;
  /** Parses each object at the edge; without it objects are taken as T unchecked (core kinds such as Lease). */
  parse?: ObjectParser<T>;
  resource: ResourceRef;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  clock?: Clock;
  logger?: Logger;
  backoff?: { initialMs: number; maxMs: number };
  /** Server-side watch timeout; each watch uses a random value in [min, 2·min). Default 300. */
  watchTimeoutSeconds?: number;
  /** Page size for lists; default 500. */
  pageSize?: number;
  /** Drops metadata.managedFields from every object on ingest (it is never read from the cache). */
  stripManagedFields?: boolean;
}

interface ListResponse { metadata?: { resourceVersion?: string; continue?: string }; items?: InformedObject[] }

class GoneError extends Error {}

type Emit<T> =
  | { type: 'add'; obj: T }
  | { type: 'update'; obj: T; old: T }
  | { type: 'delete'; obj: T }
  | { type: 'refuse'; refusal: ObjectRefusal };

export class Informer<T extends InformedObject> implements ObjectCache<T> {
  private readonly http: KubeHttpClient;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly cache = new Map<string, T>();
  private readonly addFns: ((obj: T) => void)[] = [];
  private readonly updateFns: ((obj: T, old: T) => void)[] = [];
  private readonly deleteFns: ((obj: T) => void)[] = [];
  private readonly refuseFns: ((refusal: ObjectRefusal) => void)[] = [];
  private readonly refused = new Map<string, ObjectRefusal>();
  /** The field selector's terms, when it is one observeWrite can evaluate (field-selector.ts). */
  private readonly fieldTerms: FieldTerm[] | undefined;
  /**
   * resourceVersions put in the cache by observeWrite whose watch event has not arrived yet. A watch
   * delivers a key's events in order, so until that version arrives every event for the key is older
   * than what the cache holds and is skipped; the one carrying it is the echo, skipped too.
   */
  private readonly written = new Map<string, string>();
  /**
   * The last few resourceVersions the watch delivered per key: a write's result that the watch has already
   * delivered (its echo, maybe newer ones, raced ahead of the response) must not go into the cache again.
   */
  private readonly delivered = new Map<string, string[]>();
  private resourceVersion: string | undefined;
  private synced = false;
  private lists = 0;
  private stopper = new AbortController();
  private attempt: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly opts: InformerOptions<T>) {
    this.http = httpClientFor(opts.kubeConfig);
    this.clock = opts.clock ?? systemClock;
    this.log = (opts.logger ?? nullLogger).child({ informer: opts.resource.plural, namespace: opts.namespace });
    this.backoff = new Backoff({ initialMs: opts.backoff?.initialMs ?? 800, maxMs: opts.backoff?.maxMs ?? 30_000 });
    this.fieldTerms = opts.fieldSelector === undefined ? undefined : parseFieldSelector(opts.fieldSelector);
  }

  onAdd(fn: (obj: T) => void): void { this.addFns.push(fn); }
  onUpdate(fn: (obj: T, old: T) => void): void { this.updateFns.push(fn); }
  onDelete(fn: (obj: T) => void): void { this.deleteFns.push(fn); }
  /** Called when an object (new or changed) is refused by the parser; it leaves the typed cache without a delete. */
  onRefuse(fn: (refusal: ObjectRefusal) => void): void { this.refuseFns.push(fn); }

  get(key: string): T | undefined { return this.cache.get(key); }
  list(): T[] { return [...this.cache.values()]; }
  /** The refusal of the object at `key`, when it exists and its schema does not accept it. */
  refusal(key: string): ObjectRefusal | undefined { return this.refused.get(key); }
  refusals(): ObjectRefusal[] { return [...this.refused.values()]; }
  hasSynced(): boolean { return this.synced; }
  /** Lists performed after the initial one (410 Gone recoveries, failed-list retries). */
  get relists(): number { return Math.max(0, this.lists - 1); }

  /**
   * Takes the object a write of ours returned (a newer version than the watch has delivered) into the
   * cache and runs the handlers as the watch would; the watch's copy of that version is dropped later.
   * Ignored without an object, before the first list, for a version the cache already holds, for a key not
   * in the cache, by an informer with a label selector, and by one with a field selector unless the written
   * object certainly still matches it (an object that left the watch would never send the echo awaited).
   */
  observeWrite(raw: InformedObject | undefined): void {
    if (!raw?.metadata || this.opts.labelSelector) return;
    if (this.opts.fieldSelector !== undefined && !(this.fieldTerms && fieldSelectorMatches(this.fieldTerms, raw))) return;
    const key = objectKey(raw);
    const rv = raw.metadata?.resourceVersion;
    const old = this.cache.get(key);
    if (!this.synced || !rv || !old || old.metadata?.resourceVersion === rv) return;
    if (this.delivered.get(key)?.includes(rv)) return;
    const parsed = this.parse(raw);
    if (!parsed.ok) return; // the watch delivers the refusal with the same version
    this.written.set(key, rv);
    this.cache.set(key, parsed.value);
    this.emit({ type: 'update', obj: parsed.value, old });
  }

  /** Starts list+watch; resolves once the first list is in the cache. Rejects only if stopped before that. */
  start(): Promise<void> {
    if (this.running) throw new Error('informer already started');
    let resolveSynced!: () => void;
    let rejectSynced!: (e: Error) => void;
    const synced = new Promise<void>((res, rej) => { resolveSynced = res; rejectSynced = rej; });
    this.running = this.loop(resolveSynced).finally(() => {
      if (!this.synced) rejectSynced(new Error(`informer for ${this.opts.resource.plural} stopped before sync`));
    });
    return synced;
  }

  stop(): void {
    this.stopper.abort();
  }

  /** Test hook: abandons the current watch and resumes from `resourceVersion` (e.g. an ancient "1"). */
  restartWatchFrom(resourceVersion: string): void {
    this.resourceVersion = resourceVersion;
    this.attempt?.abort();
  }

  private async loop(onSynced: () => void): Promise<void> {
    const stop = this.stopper.signal;
    while (!stop.aborted) {
      this.attempt = new AbortController();
      const signal = AbortSignal.any([stop, this.attempt.signal]);
      try {
        if (this.resourceVersion === undefined) {
          await this.relist(signal);
          if (!this.synced) { this.synced = true; onSynced(); }
        }
        const watchStarted = Date.now();
        await this.watch(signal);
        // A watch that ended normally (server timeout) is healthy; one closed at once is not: avoid a hot loop.
        if (Date.now() - watchStarted >= 1000) this.backoff.reset();
        else await this.clock.sleep(this.backoff.next(), stop);
      } catch (err) {
        if (stop.aborted) break;
        if (this.attempt.signal.aborted) continue; // restartWatchFrom()
        if (err instanceof GoneError || isGone(err)) {
          this.log.info('resourceVersion expired; relisting', { resourceVersion: this.resourceVersion });
          this.resourceVersion = undefined;
          continue;
        }
        const delay = this.backoff.next();
        this.log.warn('list/watch failed; backing off', { err, delayMs: delay, attempt: this.backoff.attempts });
        await this.clock.sleep(delay, stop);
      }
    }
  }

  private query(extra: Query): Query {
    return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector, ...extra };
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const path = collectionPath(this.opts.resource, this.opts.namespace);
    const items: InformedObject[] = [];
    let cont: string | undefined;
    let rv: string | undefined;
    do {
      const page = await this.http.request<ListResponse>({
        path, signal, query: this.query({ limit: this.opts.pageSize ?? 500, continue: cont }),
      });
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion;
    } while (cont);
    this.lists++;
    const fresh = new Map<string, T>();
    const freshRefused = new Map<string, ObjectRefusal>();
    for (const item of items) {
      const parsed = this.parse(item);
      if (parsed.ok) fresh.set(objectKey(item), parsed.value);
      else freshRefused.set(parsed.refusal.key, parsed.refusal);
    }
    const emits: Emit<T>[] = [];
    for (const [key, obj] of fresh) {
      const old = this.cache.get(key);
      if (!old) emits.push({ type: 'add', obj });
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) emits.push({ type: 'update', obj, old });
    }
    for (const [key, old] of this.cache) if (!fresh.has(key) && !freshRefused.has(key)) emits.push({ type: 'delete', obj: old });
    for (const [key, refusal] of freshRefused) {
      if (this.refused.get(key)?.metadata.resourceVersion !== refusal.metadata.resourceVersion) emits.push({ type: 'refuse', refusal });
    }
    this.cache.clear();
    this.written.clear();
    this.delivered.clear();
    for (const [k, v] of fresh) this.cache.set(k, v);
    this.refused.clear();
    for (const [k, v] of freshRefused) this.refused.set(k, v);
    this.resourceVersion = rv;
    this.log.debug('listed', { items: items.length, refused: freshRefused.size, resourceVersion: rv });
    for (const e of emits) this.emit(e);
  }

  /** Fills in type meta (and drops managedFields when asked), then parses (when a parser was given). */
  private parse(raw: InformedObject): { ok: true; value: T } | { ok: false; refusal: ObjectRefusal } {
    const obj = this.withTypeMeta(this.opts.stripManagedFields ? withoutManagedFields(raw) : raw);
    if (!this.opts.parse) return { ok: true, value: obj as T };
    const parsed = this.opts.parse(obj);
    if (!parsed.ok) this.log.warn('object refused by its schema', { key: parsed.refusal.key, paths: parsed.refusal.paths });
    return parsed;
  }

  /** Applies one ADDED/MODIFIED/DELETED event to the cache and emits what it means. */
  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: InformedObject): void {
    const key = objectKey(raw);
    const old = this.cache.get(key);
    const written = this.written.get(key);
    const rv = raw.metadata?.resourceVersion;
    if (type === 'DELETED') this.delivered.delete(key);
    else if (rv) this.delivered.set(key, [...(this.delivered.get(key) ?? []).slice(-(DELIVERED_KEPT - 1)), rv]);
    if (written !== undefined && type !== 'DELETED') {
      // The cache holds a version our own write returned: this event is older than it, or its echo.
      if (rv === written) this.written.delete(key);
      return;
    }
    this.written.delete(key);
    if (type === 'DELETED') {
      this.refused.delete(key);
      if (!old) return;
      this.cache.delete(key);
      this.emit({ type: 'delete', obj: old });
      return;
    }
    const parsed = this.parse(raw);
    if (!parsed.ok) {
      this.cache.delete(key);
      this.refused.set(key, parsed.refusal);
      this.emit({ type: 'refuse', refusal: parsed.refusal });
      return;
    }
    this.refused.delete(key);
    this.cache.set(key, parsed.value);
    this.emit(old ? { type: 'update', obj: parsed.value, old } : { type: 'add', obj: parsed.value });
  }

  private async watch(signal: AbortSignal): Promise<void> {
    const base = this.opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.round(base * (1 + Math.random()));
    const res = await this.http.stream({
      path: collectionPath(this.opts.resource, this.opts.namespace),
      signal,
      timeoutMs: (timeoutSeconds + 60) * 1000,
      query: this.query({ watch: 1, allowWatchBookmarks: true, resourceVersion: this.resourceVersion, timeoutSeconds }),
    });
    try {
      for await (const ev of readWatchEvents<InformedObject>(res)) {
        if (ev.type === 'ERROR') {
          const st = ev.object as KubeStatus;
          if (st.code === 410) throw new GoneError(st.message ?? 'watch: 410 Gone');
          throw ApiError.fromStatus(st.code ?? 500, st, 'watch ERROR event');
        }
        const rv = ev.object.metadata?.resourceVersion;
        if (ev.type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
          continue;
        }
        this.apply(ev.type, ev.object);
        if (rv) this.resourceVersion = rv;
        this.backoff.reset();
      }
    } finally {
      res.destroy();
    }
  }

  /** List items carry no apiVersion/kind; fill them in so cached objects look the same either way. */
  private withTypeMeta(obj: InformedObject): InformedObject {
    if (obj.apiVersion && obj.kind) return obj;
    return { ...obj, apiVersion: apiVersionOf(this.opts.resource), kind: this.opts.resource.kind };
  }

  private emit(e: Emit<T>): void {
    const calls: (() => void)[] =
      e.type === 'add' ? this.addFns.map((fn) => () => fn(e.obj))
        : e.type === 'delete' ? this.deleteFns.map((fn) => () => fn(e.obj))
          : e.type === 'refuse' ? this.refuseFns.map((fn) => () => fn(e.refusal))
            : this.updateFns.map((fn) => () => fn(e.obj, e.old));
    for (const call of calls) {
      try {
        call();
      } catch (err) {
        this.log.error('informer handler threw', { err, event: e.type, key: e.type === 'refuse' ? e.refusal.key : objectKey(e.obj) });
      }
    }
  }

  /** Resolves when the list/watch loop has exited after stop(). */
  async stopped(): Promise<void> {
    await this.running;
  }
}

/** How many delivered resourceVersions are remembered per key (see Informer.delivered). */
const DELIVERED_KEPT = 8;

/** A shallow copy of the object without metadata.managedFields (the object given is not changed). */
function withoutManagedFields(obj: InformedObject): InformedObject {
  if (!obj.metadata || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _dropped, ...rest } = obj.metadata as Record<string, unknown>;
  return { ...obj, metadata: rest };
}
