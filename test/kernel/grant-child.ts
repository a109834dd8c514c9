// A separate spender of grants for test/kernel/grant-store.test.ts. As a worker thread (workerData
// { path, ids, barrier }): for each id, waits at the shared barrier so both spenders race, tries to spend
// it and reports which ids it won. As a process (argv: path id crash): spends the id, then, with "crash",
// kills itself with SIGKILL before anything else can happen.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { GrantError, GrantStore } from '../../node-agent/evidence/grant-store.js';

const grant = (id: string) => ({ id, bytes: Buffer.from(`grant ${id}`), request: `collapse ${id}`, notBefore: new Date(0), notAfter: new Date(Date.now() + 3_600_000) });
const always = { now: () => new Date(), revoked: () => false };

if (!isMainThread) {
  const { path, ids, barrier } = workerData as { path: string; ids: string[]; barrier: SharedArrayBuffer };
  const store = GrantStore.open(path);
  const counter = new Int32Array(barrier);
  const won: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    // Round i starts when both spenders have arrived (the counter reaches 2 * (i + 1)).
    Atomics.add(counter, 0, 1);
    Atomics.notify(counter, 0);
    while (Atomics.load(counter, 0) < 2 * (i + 1)) Atomics.wait(counter, 0, Atomics.load(counter, 0), 50);
    try {
      store.spend(grant(ids[i]!), always);
      won.push(ids[i]!);
    } catch (e) {
      if (!(e instanceof GrantError) || e.code !== 'GRANT_SPENT') throw e;
    }
  }
  store.close();
  parentPort?.postMessage(won);
} else if (process.argv[2]) {
  const [path, id, crash] = process.argv.slice(2) as [string, string, string | undefined];
  const store = GrantStore.open(path);
  store.spend(grant(id), always);
  if (crash === 'crash') process.kill(process.pid, 'SIGKILL');
  store.close();
}
