// Live PRIME's digest for a collapse decision: vouched for by the PRIME watcher when nothing was observed
// under its layers since a recorded walk (prime-measures.ts), else walked (and that walk recorded).
import type { Store } from './open-store.js';
import type { PrimeRehash } from './prime-measures.js';
import { withPayload } from './payload-holds.js';
import { checkRouting } from './routing.js';

/** Throws the route's store errors (LIVE_MAPPING_BROKEN, ROOT_NOT_FOUND, ...). */
export async function rehashPrime(store: Store, rootName: string): Promise<PrimeRehash> {
  const route = await checkRouting(store, rootName);
  // Held mounted while it is walked: a collapse may move PRIME past it meanwhile (payload-holds.ts).
  return withPayload(store, route.generationId, async () => (await store.primeMeasures.rehash([route], store.dir))[0]!);
}
