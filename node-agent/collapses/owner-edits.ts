// Publishing what a Root's owner writes through its host path (the owner's view, store/owner-view.ts) as
// new generations of PRIME, through the collapse machinery itself: a candidate of the view's content
// against PRIME, staged as a layer, committed at the serialized boundary by the same exchange, with the
// same intent and crash recovery. No decision kernel is asked: the owner's edits are the Root's own
// history, as adoption is. The view stays; it shows the published generation already.
//
// The view's content against PRIME: the view's manifest (its base's with the upper layer's delta applied,
// store/view-measure.ts) diffed with PRIME's. PRIME is the view's base or an owner generation published
// from this same view (any other collapse replaces the view in its exchange), so the difference is what
// the owner changed since the last publication.
import { rm } from 'node:fs/promises';
import { Refusal } from '../../core/errors.js';
import { diffManifests, sameRootAttributes, type ManifestEntry } from '../../core/manifest.js';
import { storeCandidate } from '../store/candidates.js';
import type { Store } from '../store/open-store.js';
import { currentViewId, viewPaths } from '../store/owner-view.js';
import { checkRoutingSettled } from '../store/routing.js';
import { serializedOnStore } from '../store/store-serial.js';
import { getGenerationManifest, getRoot, listRoots } from '../store/store-records.js';
import { markViewClean, measureView, unpublishedEdits, viewState } from '../store/view-measure.js';
import type { CollapseHooks } from './collapse-intent.js';
import { collapseRoots } from './collapse-root.js';

export interface OwnerPublish {
  root: string;
  /** The generation the owner's edits became; undefined when the view held exactly PRIME. */
  generation?: number;
  added: number;
  modified: number;
  deleted: number;
}

/** Publishes the owner's view of a Ready Root as PRIME's next generation when it differs from PRIME. */
export async function publishOwnerEdits(store: Store, rootName: string, hooks: CollapseHooks = {}): Promise<OwnerPublish> {
  const route = await checkRoutingSettled(store, rootName);
  const root = route.root;
  const none: OwnerPublish = { root: rootName, added: 0, modified: 0, deleted: 0 };
  const m = await measureView(store, route.viewId);
  if (m.digest === root.digest) {
    markViewClean(store, route.viewId, m.state);
    return none;
  }
  const prime = getGenerationManifest(store.db, route.generationId)!;
  const d = diffManifests(prime, m.manifest);
  const changed = new Set([...d.added, ...d.modified]);
  const upsert: ManifestEntry[] = m.manifest.entries.filter((e) => changed.has(e.path)); // a manifest is in byte order
  const rootChanged = !sameRootAttributes(prime.root, m.manifest.root);
  const candidate = await storeCandidate(store.layout.candidates, [
    {
      root: rootName,
      rootKey: root.rootKey,
      baseGeneration: root.generation,
      baseDigest: root.digest,
      // The bytes are read through the view; a file the owner changes meanwhile no longer has its captured
      // digest, and the staged layer's check refuses it (STAGED_UNTESTED): the next pass publishes it.
      upperDir: viewPaths(store.layout, route.viewId).merged,
      capture: {
        upsert,
        deleted: d.deleted,
        ...(rootChanged && m.manifest.root ? { rootAttributes: m.manifest.root } : {}),
        rootChanged,
        added: d.added.length,
        modified: d.modified.length,
        upperFiles: [],
        problems: [],
      },
    },
  ]);
  try {
    const [done] = await collapseRoots(store, [{ rootName, candidateDir: candidate.dir, base: { generation: root.generation, digest: root.digest }, keepView: true }], hooks);
    markViewClean(store, route.viewId, m.state);
    return { root: rootName, generation: done!.toGeneration, added: d.added.length, modified: d.modified.length, deleted: d.deleted.length };
  } finally {
    await rm(candidate.dir, { recursive: true, force: true });
  }
}

export interface OwnerEditSyncOptions {
  /** How often views are looked at (ms). With the watcher a look costs nothing unless something was written. */
  intervalMs?: number;
  /** Called when an edit was published, and when a Root whose publication failed publishes (or is clean) again. */
  onPublished?: (p: OwnerPublish) => void;
  /** Called when a Root's publication fails, once per distinct message (it is tried again every interval). */
  onError?: (root: string, error: unknown) => void;
}

/**
 * Publishes owners' edits in the background. With the watcher, a view written to is published once its
 * upper layer has been quiet for one interval (an editor's save is one publication, not several); without
 * it, every view is measured each interval.
 */
export class OwnerEditSync {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** The watcher state each view had at the previous look: a view is published when it is unchanged since. */
  private readonly seen = new Map<string, string | null>();
  private readonly lastError = new Map<string, { code: string; message: string }>();

  constructor(
    private readonly store: Store,
    private readonly o: OwnerEditSyncOptions = {},
  ) {}

  start(): void {
    const interval = this.o.intervalMs ?? (this.store.primeMeasures.watcher ? 200 : 2000);
    this.timer = setInterval(() => void this.pass(), interval);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Why a Root's owner edits could not be published at the last look (undefined: they were, or there were none). */
  problem(root: string): { code: string; message: string } | undefined {
    return this.lastError.get(root);
  }

  /** One look at every Ready Root's view (one pass at a time). */
  pass(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.look().finally(() => (this.running = null));
    return this.running;
  }

  private async look(): Promise<void> {
    for (const root of listRoots(this.store.db)) {
      if (root.state !== 'Ready') continue;
      // Read in the store's queue (store-serial.ts): a commit exchanges the view link before it records
      // the new generation, and a view read between the two names a base not recorded yet, which would be
      // reported as a broken mapping (LIVE_MAPPING_BROKEN on the Root's status) until the next look.
      const viewId = await serializedOnStore(this.store.dir, () => Promise.resolve(currentViewId(this.store.layout, root.rootKey)));
      if (viewId === undefined) continue;
      try {
        const state = viewState(this.store, viewId);
        const before = this.seen.get(viewId);
        this.seen.set(viewId, state);
        // Still being written (changed since the previous look): wait until it is quiet.
        if (state !== null && before !== undefined && before !== state) continue;
        const fresh = getRoot(this.store.db, root.name);
        if (!fresh || fresh.state !== 'Ready') continue;
        if ((await unpublishedEdits(this.store, fresh, viewId)) === undefined) {
          // Nothing to publish: an edit that could not be was undone.
          if (this.lastError.delete(root.name)) this.o.onPublished?.({ root: root.name, added: 0, modified: 0, deleted: 0 });
          continue;
        }
        const published = await publishOwnerEdits(this.store, root.name);
        const failed = this.lastError.delete(root.name);
        if (published.generation !== undefined || failed) this.o.onPublished?.(published);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        const code = e instanceof Refusal ? e.code : 'OWNER_EDIT_FAILED';
        const changed = this.lastError.get(root.name)?.message !== message;
        this.lastError.set(root.name, { code, message });
        if (changed) this.o.onError?.(root.name, e);
      }
    }
  }
}
