// A second process for the collapse crash tests. argv: <store dir> <root> <candidate dir> <base generation> <base digest> <step>
// Runs the collapse and SIGKILLs itself right after <step> (a crash); prints {"ok":true} if it never got there.
// With the candidate dir "owner-edits", it publishes the owner's edits of the root instead (owner-edits.ts).
import { collapseRoot } from '../../node-agent/collapses/collapse-root.js';
import { publishOwnerEdits } from '../../node-agent/collapses/owner-edits.js';
import { openStore } from '../../node-agent/store/open-store.js';

const [dir, rootName, candidateDir, baseGeneration, baseDigest, crashAt] = process.argv.slice(2);
try {
  const { store } = await openStore({ dir: dir! });
  const hooks = {
    afterStep: (step: string): void => {
      if (step === crashAt) process.kill(process.pid, 'SIGKILL');
    },
  };
  if (candidateDir === 'owner-edits') await publishOwnerEdits(store, rootName!, hooks);
  else await collapseRoot(store, { rootName: rootName!, candidateDir: candidateDir!, base: { generation: Number(baseGeneration), digest: baseDigest! } }, hooks);
  console.log(JSON.stringify({ ok: true }));
  store.close();
} catch (e) {
  console.log(JSON.stringify({ error: String(e) }));
  process.exitCode = 1;
}
