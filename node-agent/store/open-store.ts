// Opening the node store: create its layout, take its lock, bring its schema up to date and finish or
// undo any adoption a crash interrupted.
import type { Database } from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { sweepCompactionLeftovers } from './generation-stack.js';
import { remountPayloads } from './payload-holds.js';
import { reconcileViews } from './owner-view.js';
import { listIntents } from './store-records.js';
import { recoverAdoptions, type RecoveryOutcome } from './recover-adoptions.js';
import { DEFAULT_STORE_DIR, ensureLayout, ensurePrivateDir, layoutOf, type StoreLayout } from './store-layout.js';
import { openLockedDatabase } from './store-lock.js';
import { migrate } from './store-schema.js';
import { PrimeMeasures } from './prime-measures.js';
import { PrimeWatcher } from './prime-watcher.js';

export interface Store {
  /** The store directory's real path (no links in it); host links name paths under it. */
  readonly dir: string;
  readonly layout: StoreLayout;
  readonly db: Database;
  readonly now: () => Date;
  /** What was last measured of each Root's live PRIME, and the watcher that may vouch for it (prime-measures.ts). */
  readonly primeMeasures: PrimeMeasures;
  close(): void;
}

export interface OpenStoreOptions {
  dir?: string;
  now?: () => Date;
  /**
   * Start the PRIME watcher on the store's filesystem, so collapses re-hash PRIME only when something was
   * observed under its layers. Off by default; when it cannot start, `watcherError` says why and every
   * collapse walks PRIME.
   */
  watchPrime?: boolean;
}

export interface OpenedStore {
  store: Store;
  /** What recovery did with adoptions a crash interrupted (empty when there were none). */
  recovered: RecoveryOutcome[];
  /** True when this call made the store (it had no database): what is provisioned with a store is made now. */
  created: boolean;
  /** Why the PRIME watcher asked for could not start (undefined: it started, or was not asked for). */
  watcherError?: string;
}

export async function openStore(options: OpenStoreOptions = {}): Promise<OpenedStore> {
  await mkdir(options.dir ?? DEFAULT_STORE_DIR, { recursive: true, mode: 0o700 });
  const dir = await realpath(options.dir ?? DEFAULT_STORE_DIR);
  const layout = layoutOf(dir);
  await ensurePrivateDir(dir);
  const created = !existsSync(layout.database);
  // Lock before touching anything else, so a refused second agent changes nothing of a running one's.
  const db = openLockedDatabase(layout.database, dir);
  let watcher: PrimeWatcher | null = null;
  let watcherError: string | undefined;
  if (options.watchPrime === true) {
    try {
      watcher = new PrimeWatcher(dir);
    } catch (e) {
      watcherError = (e as Error).message;
    }
  }
  const primeMeasures = new PrimeMeasures(watcher);
  const close = (): void => {
    primeMeasures.close();
    db.close();
  };
  const store: Store = { dir, layout, db, now: options.now ?? (() => new Date()), primeMeasures, close };
  try {
    await ensureLayout(layout);
    migrate(db);
    await sweepCompactionLeftovers(store);
    remountPayloads(store);
    const recovered = await recoverAdoptions(store);
    // Views are relinked only when no collapse is unsettled: its recovery decides which generation is PRIME
    // (recoverCollapses reconciles them again once it has).
    reconcileViews(store, { relink: listIntents(db, 'collapse').length === 0 });
    return { store, recovered, created, ...(watcherError !== undefined ? { watcherError } : {}) };
  } catch (e) {
    close();
    throw e;
  }
}
