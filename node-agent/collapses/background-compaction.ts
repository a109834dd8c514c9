// Compaction off the collapse's path. Each collapse adds a layer (stage-generation.ts); once PRIME's stack is
// COMPACT_AT_DEPTH deep, the agent builds, in the background, a full tree of PRIME's content: every file one
// link(2) to the inode of the layer that provides it, directories and symlinks re-created. It goes into
// generations/<id>.full/payload (generation-stack.ts compactionIdFor), is sealed read-only, walked whole
// (every file hashed) and must have the generation's recorded digest; only then is its row written
// (compaction-records.ts), which is what publishes it.
//
// Nothing about PRIME changes: not its generation number, digest, stack or live link. A candidate forked
// before the compaction is judged against the same generation as before. The next collapse stacks its layer
// over the compaction instead of the generation's layers (effectiveStack), and that collapse's exchange is
// what puts the shallower stack into PRIME. At its commit boundary the compaction must still be what its
// walk measured: the PRIME watcher vouches for it, or the staged payload is walked whole.
//
// A crash or stop before the row leaves a directory nothing stacks over: openStore removes it. The inline
// compaction at MAX_STACK_DEPTH stays for when the background falls behind (or is off).
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncPaths } from '../store/durable-fs.js';
import { placeMarker, readMarker } from '../store/generation-marker.js';
import { COMPACT_AT_DEPTH, compactionIdFor, effectiveStack, isStacked, removeGeneration, sealFull, stackIds } from '../store/generation-stack.js';
import type { Store } from '../store/open-store.js';
import { generationDir, payloadDir } from '../store/store-layout.js';
import { withPayload } from '../store/payload-holds.js';
import { getGeneration, getGenerationManifest, getRoot } from '../store/store-records.js';
import { getCompaction, insertCompaction } from '../store/compaction-records.js';
import { serializedOnStore } from '../store/store-serial.js';
import { checkRoutingSettled } from '../store/routing.js';
import { cleanDigests, collapseWalkDigest } from '../store/store-walk.js';
import { buildCompaction } from './stage-generation.js';

export const COMPACTION_STEPS = ['after-build', 'after-publish-dir', 'after-walk', 'after-row'] as const;
export type CompactionStep = (typeof COMPACTION_STEPS)[number];

export type CompactionOutcome =
  | { outcome: 'compacted'; generationId: string; depth: number; linked: number; ms: { build: number; walk: number; remeasure: number } }
  /** Nothing to do: the Root is gone or not Ready, PRIME is a full generation, shallow, or compacted already. */
  | { outcome: 'skipped'; why: string }
  /** The built tree did not walk to the generation's digest (a layer changed beneath its seal): nothing published. */
  | { outcome: 'refused'; generationId: string; detail: string };

export interface CompactOptions {
  /** Compact at this effective depth or deeper (default COMPACT_AT_DEPTH). */
  atDepth?: number;
  /** Stops between steps (a store being closed). */
  stopped?: () => boolean;
  afterStep?: (step: CompactionStep) => Promise<void> | void;
}

/** What one request of the background upkeep came to: the compaction's outcome, or a failed measurement of PRIME. */
export type UpkeepOutcome = CompactionOutcome | { outcome: 'failed' | 'measure-failed'; error: string };

class Stopped extends Error {}

/** Compacts the generation that is PRIME of `rootName` now, when its stack is deep enough. */
export async function compactPrime(store: Store, rootName: string, options: CompactOptions = {}): Promise<CompactionOutcome> {
  const check = (): void => {
    if (options.stopped?.() === true) throw new Stopped('the store is closing');
  };
  const root = getRoot(store.db, rootName);
  if (!root || root.state !== 'Ready') return { outcome: 'skipped', why: `root ${rootName} is ${root ? root.state : 'not in the store'}` };
  const gen = getGeneration(store.db, root.rootKey, root.generation);
  if (!gen) return { outcome: 'skipped', why: `generation ${root.generation} of ${rootName} is not recorded` };
  const marker = readMarker(store.layout, gen.id);
  if (!isStacked(marker)) return { outcome: 'skipped', why: `generation ${gen.number} of ${rootName} is a full generation` };
  if (getCompaction(store.db, gen.id)) return { outcome: 'skipped', why: `generation ${gen.number} of ${rootName} is compacted already` };
  const { ids } = effectiveStack(store.db, stackIds(marker, gen.id));
  const atDepth = options.atDepth ?? COMPACT_AT_DEPTH;
  if (ids.length < atDepth) return { outcome: 'skipped', why: `the stack of generation ${gen.number} of ${rootName} is ${ids.length} deep, under ${atDepth}` };
  // Read only now: at agent start the upkeep asks about every Root, and most have nothing to compact.
  const manifest = getGenerationManifest(store.db, gen.id);
  if (!manifest) return { outcome: 'skipped', why: `generation ${gen.number} of ${rootName} has no recorded manifest` };

  const id = compactionIdFor(gen.id);
  const staging = join(store.layout.staging, `compact-${gen.id}`);
  const staged = join(staging, 'payload');
  const t0 = performance.now();
  let linked: number;
  let published = false;
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { mode: 0o700 });
    // From the effective stack: a compaction already made of a generation beneath provides most files.
    linked = (await buildCompaction(store, staged, manifest, ids, new Set(), '')).linked;
    await options.afterStep?.('after-build');
    check();
    // Into generations/, sealed, under the store's serial order (a release of the Root cannot cross it).
    await serializedOnStore(store.dir, async () => {
      check();
      if (getRoot(store.db, rootName)?.state !== 'Ready') throw new Stopped(`root ${rootName} is no longer Ready`);
      await removeGeneration(store.layout, id); // a leftover of the same id (never recorded)
      await mkdir(generationDir(store.layout, id), { mode: 0o700 });
      await rename(staged, payloadDir(store.layout, id));
      const marker = placeMarker(store.layout, id, { rootKey: root.rootKey, generation: gen.number, digest: gen.digest });
      await fsyncPaths([marker, generationDir(store.layout, id), store.layout.generations]);
      sealFull(store.layout, id);
    });
    await rm(staging, { recursive: true, force: true });
    await options.afterStep?.('after-publish-dir');
    const t1 = performance.now();
    // Walked whole, every file hashed (no inode is taken at the manifest's word), watched from before the walk.
    const start = store.primeMeasures.begin([payloadDir(store.layout, id)]);
    let walk: Awaited<ReturnType<typeof collapseWalkDigest>>;
    try {
      walk = await collapseWalkDigest(payloadDir(store.layout, id), store.dir);
    } catch (e) {
      store.primeMeasures.abandon(start);
      throw e;
    }
    if (walk.problems.length > 0 || walk.digest !== gen.digest) {
      store.primeMeasures.abandon(start);
      const detail = walk.problems[0] ? `${walk.problems[0].code} at ${walk.problems[0].path}` : `walk digest ${walk.digest}, expected ${gen.digest}`;
      await serializedOnStore(store.dir, () => removeGeneration(store.layout, id));
      return { outcome: 'refused', generationId: gen.id, detail };
    }
    await options.afterStep?.('after-walk');
    const t2 = performance.now();
    await serializedOnStore(store.dir, async () => {
      try {
        check();
        if (getRoot(store.db, rootName)?.state !== 'Ready') throw new Stopped(`root ${rootName} is no longer Ready`);
        const st = await lstat(payloadDir(store.layout, id), { bigint: true });
        insertCompaction(store.db, { generationId: gen.id, rootKey: root.rootKey, payloadDev: String(st.dev), payloadIno: String(st.ino) }, store.now());
      } catch (e) {
        store.primeMeasures.abandon(start);
        throw e;
      }
      published = true;
      store.primeMeasures.recordCompaction(root.rootKey, gen.id, start, walk.digest);
    });
    await options.afterStep?.('after-row');
    // The links change only link counts, which no digest covers and the watcher does not count against
    // PRIME; but if PRIME's measurement was lost meanwhile (a gap), it is walked here, off the next
    // collapse's path. The compaction is published either way: a failure here only leaves that walk to
    // the next collapse (NaN in the outcome).
    const remeasure = await remeasurePrime(store, rootName).catch(() => NaN);
    return { outcome: 'compacted', generationId: gen.id, depth: ids.length, linked, ms: { build: t1 - t0, walk: t2 - t1, remeasure } };
  } catch (e) {
    if (!published) {
      // Removed now, also when stopping (the agent closes the compactor before the store); what a kill
      // leaves, the next open removes.
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
      await serializedOnStore(store.dir, () => removeGeneration(store.layout, id)).catch(() => undefined);
    }
    if (e instanceof Stopped) return { outcome: 'skipped', why: e.message };
    throw e;
  }
}

/** Walks PRIME of `rootName` and records it as its measurement (prime-measures.ts recordIfCurrent); its duration in ms. */
async function remeasurePrime(store: Store, rootName: string): Promise<number> {
  const t0 = performance.now();
  const route = await checkRoutingSettled(store, rootName);
  if (store.primeMeasures.vouch(route.root.rootKey, route.generationId) !== null) return performance.now() - t0;
  const start = store.primeMeasures.begin(route.layers);
  // Walked and recorded as one step that a collapse's re-hash of the same generation waits for.
  const measured = (async (): Promise<void> => {
    let digest: string | undefined;
    try {
      [digest] = await withPayload(store, route.generationId, (payload) => cleanDigests([payload], store.dir)); // held: PRIME may move on meanwhile
    } catch (e) {
      store.primeMeasures.abandon(start);
      throw e;
    }
    store.primeMeasures.recordIfCurrent(route.root.rootKey, route.generationId, start, digest);
  })();
  await store.primeMeasures.walkingPrime(route.root.rootKey, route.generationId, measured);
  return performance.now() - t0;
}

/**
 * PRIME of `rootName` measured ahead of the next collapse: nothing when the watcher already vouches for a
 * measurement, else one walk, recorded. Only with a watcher (without one nothing measured is ever kept)
 * and a Ready Root. Its duration in ms, or undefined when there was nothing to do.
 */
export async function measurePrime(store: Store, rootName: string): Promise<number | undefined> {
  if (store.primeMeasures.watcher === null || getRoot(store.db, rootName)?.state !== 'Ready') return undefined;
  return remeasurePrime(store, rootName);
}

/**
 * Background upkeep of each Root's PRIME, one Root at a time per store: request(root) after each collapse
 * and adoption, and for every Root when the agent starts; a request for a Root already waiting is merged.
 * It compacts PRIME when its stack is deep (compactPrime), and otherwise makes sure PRIME is measured
 * (measurePrime), so that the first collapse after an adoption or a restart of the agent finds a
 * measurement the watcher can vouch for instead of walking PRIME itself. Compaction outcomes and failures
 * go to `onOutcome` (a failure is never a refusal of anything: the collapse that follows compacts inline,
 * or walks PRIME, if it has to).
 */
export class BackgroundCompactor {
  private readonly waiting = new Set<string>();
  /** The Root the upkeep works on now. */
  private current: string | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly options: {
      /** Compact at this depth (default COMPACT_AT_DEPTH); 0: never, the upkeep only measures. */
      atDepth?: number;
      onOutcome?: (rootName: string, o: UpkeepOutcome) => void;
      /** How many Roots wait for, or are in, the upkeep, each time that changes. */
      onBacklog?: (roots: number) => void;
    } = {},
  ) {}

  request(rootName: string): void {
    if (this.closed) return;
    this.waiting.add(rootName);
    this.kick();
    this.options.onBacklog?.(this.backlog());
  }

  /** Drains the waiting Roots unless a drain runs; one asked for as a drain ends starts the next. */
  private kick(): void {
    this.running ??= this.drain().finally(() => {
      this.running = null;
      if (this.waiting.size > 0 && !this.closed) this.kick();
    });
  }

  /** Roots waiting for, or in, the upkeep. */
  backlog(): number {
    return this.waiting.size + (this.current !== null ? 1 : 0);
  }

  /** Resolves when nothing is waiting or running. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops between steps; what was interrupted is removed at the next open. */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.clear();
    this.options.onBacklog?.(this.backlog()); // the Roots dropped leave the gauge now, not at the next request
    await this.idle();
  }

  private async drain(): Promise<void> {
    for (const rootName of this.waiting) {
      this.waiting.delete(rootName);
      this.current = rootName;
      let o: UpkeepOutcome;
      try {
        o = this.options.atDepth === 0 ? { outcome: 'skipped', why: 'background compaction is off' } : await compactPrime(this.store, rootName, { stopped: () => this.closed, ...(this.options.atDepth !== undefined ? { atDepth: this.options.atDepth } : {}) });
      } catch (e) {
        o = { outcome: 'failed', error: String(e) };
      }
      if (o.outcome === 'skipped' && !this.closed) {
        try {
          await measurePrime(this.store, rootName); // a compaction measures PRIME itself
        } catch (e) {
          o = { outcome: 'measure-failed', error: String(e) };
        }
      }
      this.current = null;
      this.options.onOutcome?.(rootName, o);
      this.options.onBacklog?.(this.backlog());
    }
  }
}

const compactors = new WeakMap<Store, BackgroundCompactor>();

/** Starts the background upkeep of `store`'s Roots (the node-agent does; tests may). */
export function enableBackgroundCompaction(store: Store, options: ConstructorParameters<typeof BackgroundCompactor>[1] = {}): BackgroundCompactor {
  const c = new BackgroundCompactor(store, options);
  compactors.set(store, c);
  return c;
}

/** The store's background compactor, when it has one. */
export const compactorOf = (store: Store): BackgroundCompactor | undefined => compactors.get(store);
