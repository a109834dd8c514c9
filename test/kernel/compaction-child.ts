// A second process for the background compaction crash tests. argv: <store dir> <root> <depth> <step>
// Compacts PRIME of the root at that depth and SIGKILLs itself right after <step> (a crash); prints the
// outcome if it never got there.
import { compactPrime } from '../../node-agent/collapses/background-compaction.js';
import { openStore } from '../../node-agent/store/open-store.js';

const [dir, rootName, depth, crashAt] = process.argv.slice(2);
try {
  const { store } = await openStore({ dir: dir! });
  const outcome = await compactPrime(store, rootName!, {
    atDepth: Number(depth),
    afterStep: (step) => {
      if (step === crashAt) process.kill(process.pid, 'SIGKILL');
    },
  });
  console.log(JSON.stringify(outcome));
  store.close();
} catch (e) {
  console.log(JSON.stringify({ error: String(e) }));
  process.exitCode = 1;
}
