// What the store last measured of each Root's live PRIME, and whether the PRIME watcher (prime-watcher.ts)
// can vouch that nothing changed since, so a collapse need not walk all of PRIME again.
//
// A measurement is recorded from a walk (or, at the commit boundary, from a new generation's layer
// checked against its plan over a measured PRIME): the generation it measured, the digest, the layer
// directories it covers, and the watcher's observation state of those directories taken BEFORE the walk
// began. The measurement vouches for PRIME later only while the state of the same directories is still
// that value: nothing was observed under any of them and no gap came in between (a write during the
// walk, an overflow, a restart of the watcher all change it). Otherwise the caller walks again, and that
// walk is recorded. Without a watcher (it could not start: no CAP_SYS_ADMIN, a filesystem without file
// handles) nothing is ever vouched for and every decision walks, as before.
//
// The decision states which one happened (core/collapse/decide.ts, primeRehashSource): a vouched re-hash
// carries the recorded state and the state read again when the measurement ends, and is refused when
// they differ or either is missing.
import type { PrimeWatcher } from './prime-watcher.js';
import type { Routing } from './routing.js';
import { cleanDigests } from './store-walk.js';

/** Where a re-hash of live PRIME came from: a walk now, or a recorded walk the watcher vouches for. */
export type PrimeSource = { by: 'walk' } | { by: 'watcher'; measured: string; dirs: readonly string[] };

export interface PrimeRehash {
  /** undefined: the walk found a problem a payload may not have. */
  digest: string | undefined;
  source: PrimeSource;
}

interface Measured {
  generationId: string;
  digest: string;
  dirs: readonly string[];
  state: string;
}

/** A begun measurement: the watcher's state of `dirs` before the walk (null: no watcher, or not observing). */
export interface MeasureStart {
  dirs: readonly string[];
  state: string | null;
}

export class PrimeMeasures {
  private readonly measured = new Map<string, Measured>();
  /** The walk of each Root's latest published compaction (keyed by the compacted generation's id), vouched for the same way. */
  private readonly compactions = new Map<string, Measured & { rootKey: string }>();
  /** Walks of a Root's PRIME running outside a commit (background-compaction.ts), which rehash waits for instead of walking again. */
  private readonly walking = new Map<string, { generationId: string; done: Promise<void> }>();
  /** Directories a begun measurement still needs watched, with how many measurements need them. */
  private readonly pending = new Map<string, number>();
  /** How PRIME was re-hashed since the store opened: walked, or vouched for by the watcher. */
  readonly counts = { walked: 0, vouched: 0 };
  /** Told of every re-hash (the agent counts them in Prometheus). */
  onRehash: ((by: 'walk' | 'watcher') => void) | null = null;

  constructor(readonly watcher: PrimeWatcher | null) {}

  /** Watches `dirs` (a generation's layers, topmost first) and names this moment for them. */
  begin(dirs: readonly string[]): MeasureStart {
    for (const d of dirs) this.pending.set(d, (this.pending.get(d) ?? 0) + 1);
    if (this.watcher === null) return { dirs, state: null };
    try {
      const watched = new Set(this.watcher.watchedKeys());
      for (const d of dirs) if (!watched.has(d)) this.watcher.watch(d, d);
      return { dirs, state: this.watcher.stateOf(dirs) };
    } catch {
      return { dirs, state: null }; // a directory it cannot watch: this measurement never vouches
    }
  }

  /** The measurement begun at `start` of rootKey's generation gave `digest` (undefined: it found a problem). */
  record(rootKey: string, generationId: string, start: MeasureStart, digest: string | undefined): void {
    this.end(start);
    if (start.state === null || digest === undefined) this.measured.delete(rootKey);
    else this.measured.set(rootKey, { generationId, digest, dirs: start.dirs, state: start.state });
    this.prune();
  }

  /**
   * The walk begun at `start` of the compaction of rootKey's generation `generationId` had that generation's
   * digest. It replaces the Root's earlier compaction: new stacks go over the latest, and one still staged
   * over an earlier one is walked at its boundary. With no watcher (state null) nothing is kept: a stack over
   * the compaction is then walked at each boundary.
   */
  recordCompaction(rootKey: string, generationId: string, start: MeasureStart, digest: string): void {
    this.end(start);
    for (const [id, m] of this.compactions) if (m.rootKey === rootKey) this.compactions.delete(id);
    if (start.state !== null) this.compactions.set(generationId, { rootKey, generationId, digest, dirs: start.dirs, state: start.state });
    this.prune();
  }

  /** The digest the compaction of `generationId` was walked to, while nothing was observed under it since; else null. */
  vouchCompaction(generationId: string): string | null {
    const m = this.compactions.get(generationId);
    if (m === undefined || this.watcher === null) return null;
    if (this.watcher.stateOf(m.dirs) !== m.state) {
      this.compactions.delete(generationId);
      return null;
    }
    return m.digest;
  }

  /**
   * Records a walk of rootKey's PRIME made outside a commit (background-compaction.ts measures PRIME again
   * when its measurement was lost). Kept only when no measurement of another generation was recorded
   * meanwhile: a commit's is newer, and is never replaced by an older one.
   */
  recordIfCurrent(rootKey: string, generationId: string, start: MeasureStart, digest: string | undefined): boolean {
    const kept = this.measured.get(rootKey);
    if (kept !== undefined && kept.generationId !== generationId) {
      this.abandon(start);
      return false;
    }
    this.record(rootKey, generationId, start, digest);
    return true;
  }

  /**
   * Marks `walk` as a measurement of rootKey's PRIME at generationId (a walk and its record), running now:
   * rehash waits for it. It must not wait for the store's queue (a commit in that queue waits for it).
   */
  walkingPrime<T>(rootKey: string, generationId: string, walk: Promise<T>): Promise<T> {
    const done = walk.then(
      () => undefined,
      () => undefined,
    );
    this.walking.set(rootKey, { generationId, done });
    void done.then(() => {
      if (this.walking.get(rootKey)?.done === done) this.walking.delete(rootKey);
    });
    return walk;
  }

  /** A begun measurement that will not be recorded. */
  abandon(start: MeasureStart): void {
    this.end(start);
    this.prune();
  }

  /** The recorded digest of rootKey's PRIME when it is at generationId and nothing was observed under its layers since. */
  vouch(rootKey: string, generationId: string): PrimeRehash | null {
    const m = this.measured.get(rootKey);
    if (m === undefined || m.generationId !== generationId || this.watcher === null) return null;
    if (this.watcher.stateOf(m.dirs) !== m.state) {
      this.measured.delete(rootKey);
      return null;
    }
    this.counts.vouched++;
    this.onRehash?.('watcher');
    return { digest: m.digest, source: { by: 'watcher', measured: m.state, dirs: m.dirs } };
  }

  /** The watcher's state of `dirs` now (null: no watcher, or one that cannot stand behind a value). */
  stateNow(dirs: readonly string[]): string | null {
    return this.watcher?.stateOf(dirs) ?? null;
  }

  /**
   * Live PRIME of each route: vouched for when the watcher saw nothing since a recorded walk; the others
   * walked together (an inode they share is read once), each walk recorded as a measurement.
   */
  async rehash(routes: readonly Routing[], storeDir: string): Promise<PrimeRehash[]> {
    // A walk of the same generation already running (never one that waits for the store's queue) is
    // waited for: what it records is vouched for below if nothing was observed since it began.
    for (const r of routes) {
      const w = this.walking.get(r.root.rootKey);
      if (w?.generationId === r.generationId) await w.done;
    }
    const out: (PrimeRehash | null)[] = routes.map((r) => this.vouch(r.root.rootKey, r.generationId));
    const toWalk = routes.filter((_, n) => out[n] === null);
    if (toWalk.length === 0) return out as PrimeRehash[];
    const starts = toWalk.map((r) => this.begin(r.layers));
    let digests: (string | undefined)[];
    try {
      digests = await cleanDigests(toWalk.map((r) => r.payloadPath), storeDir);
    } catch (e) {
      starts.forEach((s) => this.abandon(s));
      throw e;
    }
    this.counts.walked += toWalk.length;
    toWalk.forEach((r, k) => {
      this.onRehash?.('walk');
      this.record(r.root.rootKey, r.generationId, starts[k]!, digests[k]);
      out[routes.indexOf(r)] = { digest: digests[k], source: { by: 'walk' } };
    });
    return out as PrimeRehash[];
  }

  close(): void {
    this.watcher?.close();
    this.measured.clear();
    this.compactions.clear();
  }

  private end(start: MeasureStart): void {
    for (const d of start.dirs) {
      const n = (this.pending.get(d) ?? 1) - 1;
      if (n > 0) this.pending.set(d, n);
      else this.pending.delete(d);
    }
  }

  /** Stops watching directories no recorded or begun measurement covers (a generation PRIME moved past). */
  private prune(): void {
    if (this.watcher === null) return;
    const used = new Set(this.pending.keys());
    for (const m of [...this.measured.values(), ...this.compactions.values()]) for (const d of m.dirs) used.add(d);
    // Its own keys are directories; an owner's view is watched under a key of another form (view-measure.ts).
    for (const key of this.watcher.watchedKeys()) if (key.startsWith('/') && !used.has(key)) this.watcher.unwatch(key);
  }
}
