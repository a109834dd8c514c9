// A secondary index over an informer's cache, in the style of client-go's Indexers: each object is filed
// under the values a function reads from it (its World, its Roots, its node), so "which objects name X"
// is a map lookup instead of a scan of the whole cache. Kept current by the informer's own events; it must
// be created before any handler that reads it, so it is updated first (handlers run in registration order).
import type { InformedObject, Informer } from './informer.js';
import { objectKey } from './resource-ref.js';

export class InformerIndex<T extends InformedObject> {
  private readonly byValue = new Map<string, Set<string>>();
  private readonly valuesOf = new Map<string, readonly string[]>();

  constructor(informer: Informer<T>, private readonly valuesFor: (obj: T) => readonly string[]) {
    informer.onAdd((o) => this.file(o));
    informer.onUpdate((o) => this.file(o));
    informer.onDelete((o) => this.drop(objectKey(o)));
    // A refused object leaves the typed cache without a delete event.
    informer.onRefuse((r) => this.drop(r.key));
  }

  /** Keys of the cached objects filed under `value` (a copy: the caller may change the cache while using it). */
  keys(value: string): string[] {
    return [...(this.byValue.get(value) ?? [])];
  }

  /** Keys filed under any of `values`, each once. */
  keysOfAny(values: readonly string[]): string[] {
    const out = new Set<string>();
    for (const v of values) for (const k of this.byValue.get(v) ?? []) out.add(k);
    return [...out];
  }

  private file(obj: T): void {
    const key = objectKey(obj);
    this.drop(key);
    const values = [...new Set(this.valuesFor(obj))];
    if (values.length === 0) return;
    this.valuesOf.set(key, values);
    for (const v of values) {
      let set = this.byValue.get(v);
      if (!set) this.byValue.set(v, (set = new Set()));
      set.add(key);
    }
  }

  private drop(key: string): void {
    const values = this.valuesOf.get(key);
    if (!values) return;
    this.valuesOf.delete(key);
    for (const v of values) {
      const set = this.byValue.get(v);
      set?.delete(key);
      if (set?.size === 0) this.byValue.delete(v);
    }
  }
}
