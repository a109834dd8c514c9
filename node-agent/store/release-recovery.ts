// Settling Root releases a crash interrupted (store/release-root.ts), from what is on disk and the intent
// row alone. The host path decides, since the exchange that makes it a plain directory is atomic:
//  - a plain directory: the exchange happened; finish (remove the old link beside it, live/<root key>,
//    mark the row Released, drop the intent);
//  - still the link to live/<root key>: the exchange did not happen; remove the partial or whole copy and
//    the intent. The row stays Releasing, so nothing forks or commits, and the node-agent releases again
//    while the Root object is still being deleted;
//  - anything else (missing, another link, a file): nothing is moved, the intent stays, reported blocked.
import { rm } from 'node:fs/promises';
import { pathKind } from './durable-fs.js';
import { hostRoutesToStore } from './finish-adoption.js';
import type { Store } from './open-store.js';
import { RELEASE_INTENT_KIND, type ReleaseIntent } from './release-intent.js';
import { finishRelease } from './release-root.js';
import { deleteIntent, listIntents } from './store-records.js';

export interface ReleaseRecoveryOutcome {
  intentId: string;
  name: string;
  outcome: 'completed' | 'rolled-back' | 'blocked';
  message: string;
}

export async function recoverReleases(store: Store): Promise<ReleaseRecoveryOutcome[]> {
  const outcomes: ReleaseRecoveryOutcome[] = [];
  for (const intent of listIntents<ReleaseIntent>(store.db, RELEASE_INTENT_KIND)) outcomes.push(await recoverRelease(store, intent.id, intent.data));
  return outcomes;
}

export async function recoverRelease(store: Store, id: string, i: ReleaseIntent): Promise<ReleaseRecoveryOutcome> {
  const result = (outcome: ReleaseRecoveryOutcome['outcome'], message: string): ReleaseRecoveryOutcome => ({ intentId: id, name: i.name, outcome, message });
  if ((await pathKind(i.hostPath)) === 'dir') {
    await finishRelease(store, id, i);
    return result('completed', `${i.hostPath} was already the released directory; finished the release`);
  }
  if (await hostRoutesToStore(i.hostPath, store.layout, i.rootKey)) {
    await rm(i.copy, { recursive: true, force: true });
    deleteIntent(store.db, id);
    return result('rolled-back', `the copy was not yet exchanged with ${i.hostPath}; removed it (the root stays Releasing and is released again)`);
  }
  return result('blocked', `${i.hostPath} is neither the link to the store nor the released directory; the copy (if any) stays at ${i.copy}`);
}
