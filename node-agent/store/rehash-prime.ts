// Live PRIME's digest for a collapse decision: vouched for by the PRIME watcher when nothing was observed
// under its layers since a recorded walk (prime-measures.ts), else walked (and that walk recorded).
import type { Store } from './open-store.js';
import type { PrimeRehash } from './prime-measures.js';
import { checkRouting } from './routing.js';

/** Throws the route's store errors (LIVE_MAPPING_BROKEN, ROOT_NOT_FOUND, ...). */
export async function rehashPrime(store: Store, rootName: string): Promise<PrimeRehash> {
  return (await store.primeMeasures.rehash([await checkRouting(store, rootName)], store.dir))[0]!;
}
