// A second process for the Root release kernel tests. argv: release <store dir> <name> <host path> <step>
// adopts <host path> as root <name> (for the Root object uid uid-of-<name>), then releases it and SIGKILLs
// itself right after release step <step> (a crash).
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { releaseRoot } from '../../node-agent/store/release-root.js';
import { StoreError } from '../../node-agent/store/store-errors.js';

const [command, dir, name, hostPath, crashAfter] = process.argv.slice(2);
if (command !== 'release' || !dir || !name || !hostPath || !crashAfter) {
  console.error('usage: release-root-child.js release <store dir> <name> <host path> <step>');
  process.exit(2);
}
try {
  const { store } = await openStore({ dir });
  await adoptRoot(store, { name, hostPath, objectUid: `uid-of-${name}` });
  await releaseRoot(store, name, {
    afterStep: (step) => {
      if (step === crashAfter) process.kill(process.pid, 'SIGKILL');
    },
  });
  console.log(JSON.stringify({ ok: true }));
  store.close();
} catch (e) {
  console.log(JSON.stringify(e instanceof StoreError ? { code: e.code, message: e.message } : { error: String(e) }));
  process.exitCode = 1;
}
