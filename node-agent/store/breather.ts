// Hands the event loop back every few milliseconds to loops of synchronous system calls.
/**
 * Synchronous system calls, as walk-tree-sync.ts measured (several times faster than the thread pool
 * for many small operations); `breathe` hands the event loop back every few milliseconds, so a large
 * upper layer or file does not stall the agent.
 */
export function breather(sliceMs: number): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    since = performance.now();
  };
}
