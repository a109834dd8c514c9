// A second process for the collapse crash tests. argv: <store dir> <root> <candidate dir> <base generation> <base digest> <step>
// Runs the collapse and SIGKILLs itself right after <step> (a crash); prints {"ok":true} if it never got there.
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { openStore } from '../../node-agent/store/open-store.js';

const [dir, rootName, candidateDir, baseGeneration, baseDigest, crashAt] = process.argv.slice(2);
try {
  const { store } = await openStore({ dir: dir! });
  await collapseRoot(store, { rootName: rootName!, candidateDir: candidateDir!, base: { generation: Number(baseGeneration), digest: baseDigest! } }, {
    afterStep: (step) => {
      if (step === crashAt) process.kill(process.pid, 'SIGKILL');
    },
  });
  console.log(JSON.stringify({ ok: true }));
  store.close();
} catch (e) {
  console.log(JSON.stringify({ error: String(e) }));
  process.exitCode = 1;
}
