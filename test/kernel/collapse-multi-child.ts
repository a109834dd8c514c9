// A second process for the multi-Root crash test. argv: <store dir> <requests JSON> <step> <occurrence>
// Runs one collapse of every requested Root and SIGKILLs itself when <step> is reached for the
// <occurrence>-th time (per-Root steps are reached once per Root, so occurrence 2 of after-stage is a
// crash between the two Roots' staging); prints {"ok":true} if it never got there.
import { collapseRoots, type CollapseRootRequest } from '../../node-agent/collapses/collapse-root.js';
import { openStore } from '../../node-agent/store/open-store.js';

const [dir, requests, crashAt, occurrence] = process.argv.slice(2);
try {
  const { store } = await openStore({ dir: dir! });
  let seen = 0;
  await collapseRoots(store, JSON.parse(requests!) as CollapseRootRequest[], {
    afterStep: (step) => {
      if (step === crashAt && ++seen === Number(occurrence)) process.kill(process.pid, 'SIGKILL');
    },
  });
  console.log(JSON.stringify({ ok: true }));
  store.close();
} catch (e) {
  console.log(JSON.stringify({ error: String(e) }));
  process.exitCode = 1;
}
