// What an owner's view holds against PRIME. The view's upper layer is captured over the view's base
// generation (capture-layer.ts: O(what the owner changed since the base)), and the manifest that makes is
// compared with PRIME's digest: equal means every owner edit is published.
//
// With the PRIME watcher, a view measured clean is remembered with the watcher's state of its upper layer,
// taken before the measurement; while that state holds (nothing observed under the upper, no gap), the
// view is still clean and is not captured again. Anything else is measured: never trusted unseen.
import { applyDeltaFrozen, manifestDigest, validateApplied, type Manifest } from '../../core/manifest.js';
import { storedBaseIndex } from './base-index.js';
import { captureLayer } from './capture-layer.js';
import type { LayerDelta } from './layer-delta.js';
import type { Store } from './open-store.js';
import { viewPaths, viewRecordOf, viewWatchKey, type ViewRecord } from './owner-view.js';
import { StoreError } from './store-errors.js';
import { generationDigest, getGenerationManifest, type RootRecord } from './store-records.js';

/** Owners' ids are the host's: the capture translates nothing and refuses none. */
const ALL_IDS = 2 ** 32;

export interface ViewMeasure {
  viewId: string;
  record: ViewRecord;
  capture: LayerDelta;
  /** The view's content as a manifest: the base's with the upper layer's delta applied. */
  manifest: Manifest;
  digest: string;
  /** The watcher's state of the upper layer taken before the capture (null: no watcher, or not observing). */
  state: string | null;
}

/** An owner edit that cannot become a generation (a special file, a link leaving the Root, ...): named, never published. */
export class UnpublishableEdit extends StoreError {
  constructor(readonly path: string, message: string) {
    super('OWNER_EDIT_UNPUBLISHABLE', message);
  }
}

const clean = new WeakMap<object, Map<string, string>>();
const cleanOf = (store: Store): Map<string, string> => {
  let m = clean.get(store.db);
  if (!m) clean.set(store.db, (m = new Map<string, string>()));
  return m;
};

/** The watcher's state of a view's upper layer, watching it first if it is not; null without a watcher. */
export function viewState(store: Store, viewId: string): string | null {
  const w = store.primeMeasures.watcher;
  if (!w) return null;
  const key = viewWatchKey(viewId);
  try {
    if (!w.watchedKeys().includes(key)) w.watch(key, viewPaths(store.layout, viewId).upper);
  } catch {
    return null;
  }
  return w.stateOf([key]);
}

/** Captures the view's upper layer over its base; UnpublishableEdit when the capture finds a problem. */
export async function measureView(store: Store, viewId: string): Promise<ViewMeasure> {
  const record = viewRecordOf(viewId);
  if (!record) throw new StoreError('LIVE_MAPPING_BROKEN', `${viewId} does not name a view`);
  const base = getGenerationManifest(store.db, record.baseGenerationId);
  if (!base) throw new StoreError('LIVE_MAPPING_BROKEN', `the base generation ${record.baseGenerationId} of view ${viewId} is not recorded`);
  const state = viewState(store, viewId);
  const capture = await captureLayer(viewPaths(store.layout, viewId).upper, storedBaseIndex(store.db, record.baseGenerationId), 0, ALL_IDS);
  const problem = capture.problems[0];
  if (problem) throw new UnpublishableEdit(problem.path, `the owner's edit at ${problem.path} cannot be published: ${problem.code}: ${problem.message}`);
  // An upper layer that changes nothing (a fresh view, or edits undone) shows its base: no O(Root) digest.
  const recorded = generationDigest(store.db, record.baseGenerationId);
  if (capture.upsert.length === 0 && capture.deleted.length === 0 && !capture.rootChanged && recorded !== undefined) {
    return { viewId, record, capture, manifest: base, digest: recorded, state };
  }
  const delta = { upsert: capture.upsert, deleted: capture.deleted, ...(capture.rootChanged && capture.rootAttributes ? { rootAttributes: capture.rootAttributes } : {}) };
  // Frozen, so the check below can vouch for it and the digest keeps its chunks for the collapse after it.
  const manifest = applyDeltaFrozen(base, delta);
  const invalid = validateApplied(base, delta, manifest)[0];
  if (invalid) throw new UnpublishableEdit(invalid.path, `the owner's edit at ${invalid.path} makes an invalid manifest: ${invalid.message}`);
  return { viewId, record, capture, manifest, digest: manifestDigest(manifest), state };
}

/** Remembers that the view held exactly PRIME when the watcher's state was `state`. */
export function markViewClean(store: Store, viewId: string, state: string | null): void {
  if (state === null) cleanOf(store).delete(viewId);
  else cleanOf(store).set(viewId, state);
}

/**
 * Why the view holds something PRIME does not (an owner edit not yet published, or one that cannot be),
 * or undefined when it holds exactly PRIME: vouched for by the watcher, else measured.
 */
export async function unpublishedEdits(store: Store, root: Pick<RootRecord, 'name' | 'digest'>, viewId: string): Promise<string | undefined> {
  const known = cleanOf(store).get(viewId);
  if (known !== undefined && viewState(store, viewId) === known) return undefined;
  let m: ViewMeasure;
  try {
    m = await measureView(store, viewId);
  } catch (e) {
    if (e instanceof UnpublishableEdit) return e.message;
    throw e;
  }
  if (m.digest !== root.digest) return `the owner's view of root ${root.name} holds edits not yet published (digest ${m.digest}, PRIME ${root.digest})`;
  markViewClean(store, viewId, m.state);
  return undefined;
}
