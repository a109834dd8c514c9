// One queue per store for the steps that change the live mapping (collapse commits, adoption publishing
// live/<root key>): each runs after every earlier one on the same store has settled, so a commit that
// rebuilds live/ as a whole never races a link written beside it.
const chains = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier serialized call on the same store directory has settled. */
export function serializedOnStore<T>(storeDir: string, fn: () => Promise<T>): Promise<T> {
  const next = (chains.get(storeDir) ?? Promise.resolve()).then(fn, fn);
  const settled = next.catch(() => undefined);
  chains.set(storeDir, settled);
  void settled.then(() => {
    if (chains.get(storeDir) === settled) chains.delete(storeDir);
  });
  return next;
}

/** Settles once every serialized step queued on the store so far has run. */
export async function storeSettled(storeDir: string): Promise<void> {
  await chains.get(storeDir);
}
